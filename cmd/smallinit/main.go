// Command smallinit trains and measures decoder-only Transformers whose initialisation scale γ
// (σ = d_in^(−γ)) is a first-class knob. Run `smallinit --help` for the subcommands.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/coordcheck"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
)

// cli lists the subcommands; each lives in its own file.
type cli struct {
	Demo       demoCmd       `cmd:"" help:"The main job: prepare the embedded corpus and train the study's four corners (γ 0.5/1 × default/fixed ε and gate)."`
	Init       initCmd       `cmd:"" help:"Write a freshly initialised model directory (config.json + safetensors, sharded for large presets, float32 or bfloat16)."`
	Eval       evalCmd       `cmd:"" help:"Mean next-token loss of a model on a .tok token file."`
	Bench      benchCmd      `cmd:"" help:"Training throughput (tokens/s, model FLOP/s) on a preset; --kernels for matmul GFLOP/s."`
	Data       dataCmd       `cmd:"" help:"Prepare training data: tokenize your corpus (or the embedded one) into .tok files."`
	Train      trainCmd      `cmd:"" help:"Train a model from a TOML run config (--config, --set, --out) or continue one (--resume)."`
	Analyze    analyzeCmd    `cmd:"" help:"Weight metrics (stable rank, row cosine) and activation metrics (sink, saturation, residual ratio) of a model."`
	Compare    compareCmd    `cmd:"" help:"Per-token probability gaps between two models, binned by token difficulty."`
	EvalTasks  evalTasksCmd  `cmd:"" help:"Benchmark tasks and probes: accuracies with 95% intervals, smooth losses with standard errors."`
	Probes     probesCmd     `cmd:"" help:"Reasoning and memorisation probes (probes make)."`
	Anchor     anchorCmd     `cmd:"" help:"Anchor-function tasks (Zhang et al. 2024, Yao et al. 2025): make their data, train the γ × depth phase diagram, render it."`
	Generate   generateCmd   `cmd:"" help:"Sample a completion from a model, streamed to stdout."`
	Sweep      sweepCmd      `cmd:"" help:"Expand, run (locally or one --index per job-array task), watch and collect a grid of runs."`
	Fit        fitCmd        `cmd:"" help:"Fit L(N) = E + A·N^(−α) on a baseline and report the treated runs' effective-size gain N_eff/N − 1 (docs/definitions.md §4)."`
	Reproduce  reproduceCmd  `cmd:"" help:"The study's experiments scaled to this machine under a --budget, with a verdict per claim."`
	Report     reportCmd     `cmd:"" help:"One self-contained HTML report (inline SVG) of run directories: loss curves, loss against γ and N, the 2×2 of fixes, weight trajectories, heatmaps, sink and saturation, compare, coordinate check."`
	Audit      auditCmd      `cmd:"" help:"How a checkpoint was initialised (init rule: ${init_rules}; depth scaling, norm gains), or where its weights are now."`
	Coordcheck coordcheckCmd `cmd:"" help:"Residual ratio against width at init and after a few steps (μP-style coordinate check)."`
	Study      studyCmd      `cmd:"" help:"Run a plan file (arms × seeds × a budget, in TOML) with the demo's and reproduce's machinery: sizing, resumable runs, summary, report."`
	Judge      judgeCmd      `cmd:"" help:"Judge a plan's primaries (H1, H2, γ = 1's effective size) on the runs that study trained into one or more output directories."`
	Contrast   contrastCmd   `cmd:"" help:"L(A) − L(B) paired by seed for two arms chosen by config values among the runs of study output directories (at the training mix and per language)."`
}

// vars are the values the flags' tags interpolate (${name}): lists that belong to a package's table.
func vars() kong.Vars {
	return kong.Vars{"init_rules": strings.Join(recipe.RuleNames(), ","), "eval_task_names": strings.Join(eval.KindNames(), ", "),
		"builtin_plans": strings.Join(planNames(), ", "), "coord_max_points": strconv.Itoa(coordcheck.MaxPoints),
		"coord_max_width": strconv.Itoa(arch.MaxDim), "coord_max_steps": strconv.Itoa(coordcheck.MaxSteps)}
}

func main() {
	var c cli
	parser := kong.Must(&c,
		kong.Name("smallinit"),
		kong.Description("smallinit: initialization scale as a measurable knob of language-model pretraining."),
		kong.UsageOnError(),
		vars(),
	)
	if err := kernel.ForcedErr(); err != nil { // SMALLINIT_KERNEL names a path this CPU lacks
		fmt.Fprintln(os.Stderr, "smallinit:", err)
		os.Exit(1)
	}
	if err := emptyOutFlag(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "smallinit:", err)
		os.Exit(1)
	}
	ctx, err := parser.Parse(joinNegativeValues(os.Args[1:]))
	parser.FatalIfErrorf(err)
	if err := checkModes(ctx); err != nil { // a flag that does nothing in the command's mode (modeflags.go)
		fmt.Fprintln(os.Stderr, "smallinit:", err)
		os.Exit(1)
	}
	if err = ctx.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "smallinit:", err)
		os.Exit(1)
	}
}
