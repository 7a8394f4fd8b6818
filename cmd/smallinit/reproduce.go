package main

import (
	"context"
	"os"
	"time"

	"github.com/smallinit/smallinit/reproduce"
)

type reproduceCmd struct {
	Budget    time.Duration `default:"30m" help:"Which tier runs, by its wall-clock budget: 30m (smoke test: every arm at 45 steps on 2 seeds, a verdict per claim, inconclusive by design), 2h (H1 and H2 at 5 tokens per parameter), 8h (H1 at 20 tokens per parameter, --data), 24h (both primaries, --data); any other value is refused."`
	Out       string        `default:"smallinit-reproduce" type:"path" help:"Directory for data, runs, claims.json; run again to resume."`
	Seeds     int           `help:"Seeds per verdict arm (default: the tier's; from 2h the most of its seeds, at least its min_seeds, that fit the budget at the horizon, recorded in OUT/sizing.json)."`
	Steps     int           `help:"Steps per run (overrides --budget)."`
	Jobs      jobsFlag      `default:"auto" help:"Runs of a sweep, and trials of a full-horizon learning-rate grid, trained at once (they share the cores; the results do not depend on it), or auto: a packing probe on the largest run's model measures one run on all cores against one run per core and keeps the faster (recorded in each sweep's packing.json)."`
	Precision string        `default:"auto" enum:"auto,f32,bf16" help:"Matmul operands of every run: bf16 (float32 accumulation; VDPBF16PS on AVX512_BF16, float32 FMAs on AVX2, the same bits), f32, or auto: the precision timed fastest on this CPU. A reproduction resumes only with the precision it started with (f32 for those started before 2026-12-02)."`
	Data      string        `type:"path" placeholder:"DIR" help:"A corpus prepared by smallinit data prepare to train on instead of the embedded one (copied into OUT/data once; the plan states its training tokens and the epochs each run sees)."`
	Force     bool          `help:"Start even when the plan's expected wall time on this machine is over the budget (refused otherwise; the printed plan's time line says why)."`
	PrintPlan bool          `help:"Print the reproduction's plan for the budget (arms, seeds, steps, tokens, expected wall time from a throughput probe) and exit; the plan file itself: smallinit study reproduce --print-plan."`

	engineFlags `embed:""` // --engine, --device, --torch-python, --torch-path (engine.go)
}

// Run runs the study's experiments scaled to this machine and prints, for each claim of docs/definitions.md (Claims),
// whether this run supports it, with the numbers.
func (cmd *reproduceCmd) Run() error {
	eng, info, err := cmd.engine(context.Background(), &cmd.Jobs, cmd.Precision)
	if err != nil {
		return err
	}
	o := reproduce.Options{Out: cmd.Out, Budget: cmd.Budget, Seeds: cmd.Seeds, Steps: cmd.Steps, Jobs: int(cmd.Jobs), Precision: cmd.Precision, Data: cmd.Data, Log: os.Stderr, Engine: eng, EngineInfo: info, Force: cmd.Force}
	if cmd.PrintPlan {
		d, err := reproduce.Describe(o, 0)
		if err != nil {
			return err
		}
		return d.Write(os.Stdout)
	}
	ctx, stop := interruptible()
	defer stop()
	res, err := reproduce.Run(ctx, o)
	if err != nil {
		return err
	}
	return res.WriteText(os.Stdout)
}
