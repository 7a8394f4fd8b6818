package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"golang.org/x/term"

	"github.com/smallinit/smallinit/coordcheck"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/reproduce"
	"github.com/smallinit/smallinit/summary"
)

type studyCmd struct {
	Plan      string        `arg:"" help:"A plan file (TOML: arms × seeds × a budget; smallinit demo --print-plan shows one), or a built-in plan: ${builtin_plans}."`
	Out       string        `default:"smallinit-study" type:"path" help:"Directory for the data, the groups' runs, sizing.json, summary.json and report.html."`
	Budget    budgetOrPlans `placeholder:"DURATION" help:"Wall-clock budget for all runs (e.g. 30m, 2h; default: the plan's); sets the steps per run."`
	Steps     int           `help:"Steps per run (overrides --budget)."`
	Seeds     int           `help:"Seeds per arm, 0 … N−1 (default: the plan's)."`
	Jobs      jobsFlag      `default:"auto" help:"Runs of a sweep, and trials of a full-horizon learning-rate grid, trained at once (they share the cores; the results do not depend on it), or auto: a packing probe on the largest run's model measures one run on all cores against one run per core and keeps the faster (recorded in each sweep's packing.json)."`
	Index     int           `default:"-1" help:"Run only the run with this index of the whole plan (one task of a job array); no summary or report. −1: every run."`
	PrintPlan bool          `help:"Print the plan (TOML) and, for a training plan, what it would run here (arms, steps, the corpus and the epochs each run sees, the expected wall time, as TOML comments), and exit."`
	Data      string        `type:"path" placeholder:"DIR" help:"A corpus prepared by smallinit data prepare to train on instead of the plan's (data.dir, else the embedded corpus); copied into OUT/data once."`
	Precision string        `enum:",auto,f32,bf16" default:"" help:"Matmul operands of every run (sets train.precision): f32, bf16 (VDPBF16PS on AVX512_BF16, float32 FMAs on AVX2), or auto: the eligible precisions timed on the base model and the faster taken (recorded in OUT/precision.json). Default: the plan's."`
	Force     bool          `help:"Start the plan even when its expected wall time on this machine is over the budget (refused otherwise)."`

	engineFlags `embed:""` // --engine, --device, --torch-python, --torch-path (engine.go)
}

// designPlans are the plans that study designs own (package reproduce's), by name: `smallinit study NAME` runs
// one as a plain plan (its groups, without the design's claims) or prints it, as it does experiment's built-in
// plans, where no file or directory has the name.
var designPlans = map[string]func() (*experiment.Plan, error){"reproduce": reproduce.Plan}

// planNames are the names study takes for a plan that is not a file: experiment's built-ins and designPlans.
func planNames() []string {
	return append(experiment.Builtins(), slices.Sorted(maps.Keys(designPlans))...)
}

// loadPlan loads a plan file, a built-in plan (experiment.Load) or a design's plan (designPlans) and, when the
// name is both a file and a plan, says on log which one it used: a file of that name is run (one that is no
// readable plan file, such as a directory or a file too large for a plan, is an error); the named plan runs
// only when nothing has its name. Every key of the file has a reader: the study design's keys (reproduce's, in
// [primaries], [anchor] and each [[tier]]) are checked by reproduce.CheckKeys, so a misspelt one is refused
// naming the file and the key, even where study runs the plan without the design.
func loadPlan(path string, log io.Writer) (*experiment.Plan, error) {
	load, design := designPlans[path]
	if _, err := os.Stat(path); design && errors.Is(err, fs.ErrNotExist) {
		return load()
	}
	p, err := experiment.Load(path)
	if err != nil && design {
		return nil, fmt.Errorf("%w; ./%s is not a plan file, and the plan %s runs only where no file or directory has its name (rename it, or run from another directory)", err, path, path)
	}
	if err != nil {
		return nil, err
	}
	// The study design's keys of the file (reproduce's), read by no one when study runs it, are still checked.
	if err := reproduce.CheckKeys(p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	if !slices.Contains(planNames(), path) {
		return p, nil
	}
	if _, serr := os.Stat(path); serr == nil {
		fmt.Fprintf(log, "note: running the plan file ./%s, not the built-in plan %s (run from another directory for the built-in)\n", path, path)
	}
	return p, nil
}

// Run runs a plan with the machinery of demo and reproduce (sizing, resumable runs, summary, report); a
// coordinate-check plan prints its table (and refuses the training flags, which it would ignore: planFlags). The built-in
// reproduce plan run this way has no claims: use smallinit reproduce for those.
func (cmd *studyCmd) Run(kctx *kong.Context) error {
	p, err := loadPlan(cmd.Plan, os.Stderr)
	if err != nil {
		return err
	}
	if err := checkOnlyWith(givenFlags(kctx), cmd.planFlags(p)); err != nil {
		return fmt.Errorf("plan %s is a %s plan: %w", p.Name, p.Kind, err)
	}
	if p.HasStudy(experiment.TableAnchor) && !cmd.PrintPlan {
		fmt.Fprintf(os.Stderr, "note: plan %s: its [anchor] grid is run only by smallinit reproduce (or smallinit anchor diagram); study trains its groups only\n", p.Name)
	}
	if p.HasStudy(experiment.TablePrimaries) && !cmd.PrintPlan {
		fmt.Fprintf(os.Stderr, "note: plan %s: its [primaries] hypotheses are stated and judged only by smallinit reproduce; study trains at their horizon\n", p.Name)
	}
	if cmd.Precision != "" {
		q := *p
		q.Base = append(slices.Clip(p.Base), override.Set{Key: recipe.KeyPrecision, Value: cmd.Precision})
		p = &q
	}
	eng, info, err := cmd.engine(context.Background(), &cmd.Jobs, cmd.Precision)
	if err != nil {
		return err
	}
	o := experiment.Options{Out: cmd.Out, Budget: cmd.Budget.d, Steps: cmd.Steps, Jobs: int(cmd.Jobs), Task: cmd.Index >= 0, Index: cmd.Index,
		Data: cmd.Data, Log: os.Stderr, Progress: term.IsTerminal(int(os.Stderr.Fd())), Describe: true, Engine: eng, EngineInfo: info, Force: cmd.Force}
	if cmd.Seeds > 0 {
		o.Seeds = experiment.SeedRange(cmd.Seeds)
	}
	if cmd.PrintPlan {
		if _, err := os.Stdout.Write(p.Text); err != nil || p.Kind != experiment.KindTrain {
			return err
		}
		// What the plan would run here, as TOML comments: its arms, steps, the corpus and the epochs each run
		// sees, and the time it needs on this machine.
		d, err := experiment.Describe(p, o, 0)
		if err != nil {
			return err
		}
		var b strings.Builder
		if err := d.Write(&b); err != nil {
			return err
		}
		fmt.Printf("\n# As it would run here (--out %s):\n", cmd.Out)
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			fmt.Printf("# %s\n", line)
		}
		return nil
	}
	ctx, stop := interruptible()
	defer stop()
	if p.Kind == experiment.KindCoordcheck {
		res, err := coordcheck.Run(ctx, p.Base, p.Coord, coordcheck.Options{})
		if err != nil {
			return fmt.Errorf("plan %s: %w", p.Name, err)
		}
		return coordcheck.WriteTable(os.Stdout, res)
	}
	out, err := experiment.Run(ctx, p, o)
	if err != nil {
		return fmt.Errorf("plan %s (--out %s): %w", p.Name, cmd.Out, err)
	}
	if len(out.Rows) > 0 {
		summary.WriteTable(os.Stdout, out.Rows, out.Tokens/int64(max(out.Steps, 1)))
	}
	if len(out.Pairs) > 0 {
		fmt.Println()
		if err := experiment.WritePairs(os.Stdout, out.Pairs); err != nil {
			return err
		}
	}
	fmt.Printf("\nplan %s: %d runs of %d steps under %s", p.Name, out.Runs, out.Steps, out.Out)
	if out.Report != "" {
		fmt.Printf(", report in %s", out.Report)
	}
	fmt.Println()
	return nil
}

// budgetOrPlans is study's --budget: a duration given on the command line (checked by Validate: a given 0 is
// refused), or, left out, the plan's budget (d = 0).
type budgetOrPlans struct {
	d     time.Duration
	given bool
}

// UnmarshalText parses a given --budget (time.ParseDuration).
func (b *budgetOrPlans) UnmarshalText(t []byte) error {
	d, err := time.ParseDuration(string(t))
	if err != nil {
		return err
	}
	*b = budgetOrPlans{d: d, given: true}
	return nil
}

// String is the budget given (what a refusal quotes).
func (b budgetOrPlans) String() string { return b.d.String() }
