package main

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/smallinit/smallinit/analyze"
	"github.com/smallinit/smallinit/anchor"
	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/coordcheck"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/probes"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/tokenizer"
)

// Ranges of numeric flags, checked when the command line is parsed (kong calls each command's Validate), so a
// value out of range is refused naming the flag before any work starts. Library packages check their own
// options too (train.threads, probe counts, batch memory); these are the flags whose range is the CLI's.

func (cmd *dataPrepareCmd) Validate() error {
	if cmd.Vocab != nil {
		if err := data.CheckVocab("--vocab", *cmd.Vocab); err != nil {
			return fmt.Errorf("%w; leave it out for %d", err, tokenizer.DefaultVocabSize)
		}
	}
	if strings.TrimSpace(cmd.TextColumn) == "" { // it fell back to "text" in silence
		return fmt.Errorf("--text-column %q: name the JSON field or Parquet column that holds the text (leave it out for %q)", cmd.TextColumn, data.DefaultTextColumn)
	}
	return inRange("--workers", cmd.Workers, 0, kernel.MaxWorkers, "0: all cores")
}

func (cmd *auditCmd) Validate() error {
	return errors.Join(inRange("--workers", cmd.Workers, 0, kernel.MaxWorkers, "0: all cores"), cmd.checkZ())
}

// MaxBenchSteps bounds bench's --steps and --warmup: a bench is seconds to minutes of steps, and a count past
// it is a typo, not a measurement.
const MaxBenchSteps = 100_000

func (cmd *benchCmd) Validate() error {
	return errors.Join(
		inRange("--threads", cmd.Threads, 0, kernel.MaxWorkers, "the range of train.threads; 0: all cores"),
		inRange("--steps", cmd.Steps, 1, MaxBenchSteps, ""),
		inRange("--warmup", cmd.Warmup, 0, MaxBenchSteps, ""),
		nonNegative("--batch", cmd.Batch))
}

// inRange refuses v outside [lo, hi], naming the flag, the value and the range (with hint, when given).
func inRange(flag string, v, lo, hi int, hint string) error {
	if v >= lo && v <= hi {
		return nil
	}
	if hint != "" {
		hint = " (" + hint + ")"
	}
	return fmt.Errorf("%s %d: must be in [%d, %d]%s", flag, v, lo, hi, hint)
}

func (cmd *evalTasksCmd) Validate() error {
	if err := nonNegative("--shots", cmd.Shots); err != nil {
		return err
	}
	if err := inRange("--max-new-tokens", cmd.MaxNewTokens, 1, maxNewTokens, ""); err != nil {
		return err
	}
	return nonNegative("--limit", cmd.Limit)
}

func (cmd *generateCmd) Validate() error {
	switch {
	case cmd.MaxTokens < 1 || cmd.MaxTokens > maxNewTokens:
		return fmt.Errorf("--max-tokens %d: must be in [1, %d]", cmd.MaxTokens, maxNewTokens)
	case !(cmd.Temperature >= 0):
		return fmt.Errorf("--temperature %g: must be ≥ 0 (0 is greedy decoding)", cmd.Temperature)
	case cmd.TopK < 0:
		return fmt.Errorf("--top-k %d: must be ≥ 0 (0: all tokens)", cmd.TopK)
	case !(cmd.TopP > 0 && cmd.TopP <= 1):
		return fmt.Errorf("--top-p %g: must be in (0, 1]", cmd.TopP)
	}
	return nil
}

func (cmd *initCmd) Validate() error {
	if strings.HasPrefix(strings.TrimSpace(cmd.ShardSize), "-") {
		return fmt.Errorf("--shard-size %s: must be positive (e.g. 2GB, 500MB)", cmd.ShardSize)
	}
	// γ and std in the ranges of init.gamma and init.std (the rules table), named by their flag before anything
	// is written (they were refused only by the writer, as a fault of --out).
	if err := (recipe.Init{Rule: cmd.Rule, Gamma: cmd.Gamma, Std: cmd.Std}).Validate(); err != nil {
		row, _ := recipe.LookupRule(cmd.Rule)
		switch row.Param {
		case recipe.ParamGamma:
			return fmt.Errorf("--gamma %g: %w", cmd.Gamma, err)
		case recipe.ParamStd:
			return fmt.Errorf("--std %g: %w", cmd.Std, err)
		}
		return fmt.Errorf("--rule %s: %w", cmd.Rule, err)
	}
	return nil
}

// maxNewTokens bounds what one generation may decode (generate --max-tokens, eval-tasks --max-new-tokens): a
// million tokens is hours of decoding on this toolkit's models; more is a typo.
const maxNewTokens = 1 << 20

func (cmd *analyzeCmd) Validate() error {
	if cmd.Probes < 1 || cmd.Probes > diag.MaxProbeWindows {
		return fmt.Errorf("--probes %d: must be in [1, %d]", cmd.Probes, diag.MaxProbeWindows)
	}
	if cmd.ProbeLen == nil || cmd.Tokens == "" { // without --tokens, --probe-len is refused as doing nothing (modeflags.go)
		return nil
	}
	if *cmd.ProbeLen < 2 {
		return fmt.Errorf("--probe-len %d: must be in [2, the model's context]", *cmd.ProbeLen)
	}
	// The upper bound is the model's context, from its config.json (a model that cannot be read is refused by
	// the analysis itself, naming what is wrong).
	if c, _, err := model.ReadConfig(cmd.Model); err == nil {
		if analyze.CheckProbeLen(*cmd.ProbeLen, c) != nil {
			return fmt.Errorf("--probe-len %d: must be in [2, %d], the context (max_position_embeddings) of --model %s", *cmd.ProbeLen, c.SeqLen, cmd.Model)
		}
	}
	return nil
}

func nonNegative(flag string, v int) error {
	if v < 0 {
		return fmt.Errorf("%s %d: must be ≥ 0", flag, v)
	}
	return nil
}

// negativeNumber matches a command-line word that is a negative number (-3, -0.5, -1e-3, -5MB), which the flag
// parser would otherwise take for a short flag.
var negativeNumber = regexp.MustCompile(`^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[A-Za-z]*$`)

// joinNegativeValues rewrites "--flag -3" as "--flag=-3", so that a negative value after a space is read as the
// flag's value (and then range-checked) instead of failing with the parser's "expected int value but got "-3"
// (short flag)". smallinit has no short flags and no positional argument that is a negative number. Words after
// "--" are left alone.
func joinNegativeValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && i+1 < len(args) && negativeNumber.MatchString(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// studyFlags checks the flags study and reproduce share: --seeds (0: the plan's), --steps (0: size the
// budget), --budget (given: in (0, budget.Max]; left out: the plan's) and --index (−1: every run).
func studyFlags(seeds, steps int, wall time.Duration, wallGiven bool, index int) error {
	if seeds != 0 {
		if err := experiment.CheckSeedCount("--seeds", seeds); err != nil {
			return fmt.Errorf("%w (leave it out for the plan's)", err)
		}
	}
	switch {
	case steps < 0 || steps > budget.MaxSteps:
		return fmt.Errorf("--steps %d: must be in [1, %d], the steps per run a plan may size (leave it out to size the budget)", steps, budget.MaxSteps)
	case wall < 0 || wall > budget.Max || wallGiven && wall == 0:
		return fmt.Errorf("--budget %s: want a duration in (0, %s] (leave it out for the plan's)", wall, budget.Max)
	case index < -1:
		return fmt.Errorf("--index %d: want a run index ≥ 0 (or −1: every run)", index)
	}
	return nil
}

func (cmd *studyCmd) Validate() error {
	if err := emptyOut(cmd.Out); err != nil {
		return err
	}
	return studyFlags(cmd.Seeds, cmd.Steps, cmd.Budget.d, cmd.Budget.given, cmd.Index)
}

func (cmd *reproduceCmd) Validate() error {
	if err := emptyOut(cmd.Out); err != nil {
		return err
	}
	return studyFlags(cmd.Seeds, cmd.Steps, cmd.Budget, true, -1)
}

func (cmd *demoCmd) Validate() error {
	switch {
	case cmd.Out == "":
		return emptyOut(cmd.Out)
	case cmd.Steps < 0 || cmd.Steps > budget.MaxSteps:
		return fmt.Errorf("--steps %d: must be in [1, %d], the steps per run a plan may size (leave it out to size --minutes)", cmd.Steps, budget.MaxSteps)
	}
	if err := eval.CheckWindows("--windows", cmd.Windows); err != nil {
		return err
	}
	if err := recipe.CheckSeed("--seed", cmd.Seed); err != nil {
		return err
	}
	if cmd.Steps == 0 {
		if err := budget.CheckMinutes("--minutes", cmd.Minutes); err != nil {
			return err
		}
	}
	return nil
}

// emptyOut refuses --out "": the command would write into the working directory.
func emptyOut(out string) error {
	if out == "" {
		return fmt.Errorf("--out \"\": name a directory (. is the working directory)")
	}
	return nil
}

// emptyOutFlag refuses an empty --out on the raw command line, before the flag parser turns the empty path of a
// path-typed flag into the working directory (so `anchor diagram --out ""` would write there). Words after
// "--" are left alone.
func emptyOutFlag(args []string) error {
	for i, a := range args {
		switch {
		case a == "--":
			return nil
		case a == "--out=" || a == "--out" && i+1 < len(args) && args[i+1] == "":
			return emptyOut("")
		}
	}
	return nil
}

func (cmd *anchorMakeCmd) Validate() error {
	if err := emptyOut(cmd.Out); err != nil {
		return err
	}
	return anchor.CheckSizes(cmd.Task, "--examples", cmd.Examples, "--per-combo", cmd.PerCombo)
}

func (cmd *probesMakeCmd) Validate() error {
	if err := emptyOut(cmd.Out); err != nil {
		return err
	}
	if cmd.Task != "" {
		return anchor.CheckSizes(cmd.Task, "--n", cmd.N, "--n", cmd.N)
	}
	for _, f := range []struct {
		flag string
		v    int
	}{{"--n", cmd.N}, {"--test", cmd.Test}, {"--table", cmd.Table}} {
		if f.v < 1 || f.v > probes.MaxProbes {
			return fmt.Errorf("%s %d: must be in [1, %d]", f.flag, f.v, probes.MaxProbes)
		}
	}
	return nil
}

func (cmd *anchorDiagramCmd) Validate() error {
	if err := emptyOut(cmd.Out); err != nil {
		return err
	}
	return cmd.grid().Validate()
}

func (cmd *sweepRunCmd) Validate() error {
	switch {
	case cmd.Out == "":
		return emptyOut(cmd.Out)
	case cmd.Index < -1:
		return fmt.Errorf("--index %d: want a run index ≥ 0 (or −1: every run)", cmd.Index)
	case cmd.Cores < 0 || cmd.Cores > kernel.MaxWorkers:
		return fmt.Errorf("--cores %d: must be in [0, %d] (0: all of this machine's)", cmd.Cores, kernel.MaxWorkers)
	}
	return checkStaleAfter(cmd.StaleAfter)
}

func (c *fitCmd) Validate() error {
	if c.Bootstrap < 0 || c.Bootstrap > maxBootstrap {
		return fmt.Errorf("--bootstrap %d: must be in [0, %d] (0: no intervals)", c.Bootstrap, maxBootstrap)
	}
	return nil
}

// maxBootstrap bounds fit's resamples: 100,000 pin a 95% interval's ends to a fraction of a standard error, and
// each refits the law, so more only waits.
const maxBootstrap = 100_000

func (cmd *compareCmd) Validate() error {
	return errors.Join(eval.CheckWindows("--windows", cmd.Windows), inRange("--bins", cmd.Bins, 1, maxBins, ""))
}

// maxBins bounds compare's difficulty quantiles (and report's --compare-bins): each bin is a table row, and past
// a thousand a bin holds a handful of tokens.
const maxBins = 1000

func (cmd *auditCmd) checkZ() error {
	if !(cmd.Z > 0) || math.IsInf(cmd.Z, 0) {
		return fmt.Errorf("--z %g: must be a finite number > 0 (standard errors of the sampled std)", cmd.Z)
	}
	return nil
}

func (c *reportCmd) Validate() error {
	return errors.Join(eval.CheckWindows("--compare-windows", c.CompareWindows), inRange("--compare-bins", c.CompareBins, 1, maxBins, ""),
		inRange("--width", c.Width, 100, maxScreenshotWidth, "pixels"))
}

// maxScreenshotWidth bounds report's --width: a page wider than this is no screenshot anyone reads.
const maxScreenshotWidth = 16384

func (cmd *coordcheckCmd) Validate() error {
	if cmd.Gamma != 0 { // 0: the plan's γ
		if err := (recipe.Init{Rule: recipe.RuleGamma, Gamma: cmd.Gamma}).Validate(); err != nil {
			return fmt.Errorf("--gamma %g: %w (the range of init.gamma)", cmd.Gamma, err)
		}
	}
	if cmd.LR != 0 { // 0: the plan's rate
		if err := (recipe.Schedule{Kind: recipe.ScheduleConstant, PeakLR: cmd.LR}).Validate(); err != nil {
			return fmt.Errorf("--lr %g: %w (the range of schedule.lr; 0: the plan's)", cmd.LR, err)
		}
	}
	// --widths and --steps in the bounds of a plan's coordcheck.widths and coordcheck.steps.
	for _, f := range []struct {
		flag, s string
		check   func(string, []int) error
	}{{"widths", cmd.Widths, coordcheck.CheckWidths}, {"steps", cmd.Steps, coordcheck.CheckSteps}} {
		xs, err := parseInts(f.s, f.flag)
		if err != nil {
			return err
		}
		if xs != nil {
			if err := f.check("--"+f.flag, xs); err != nil {
				return fmt.Errorf("%w (leave it out for the plan's)", err)
			}
		}
	}
	return nil
}

// checkStaleAfter refuses a lock staleness that is not positive (it fell back to the default in silence) or
// longer than a week (a killed run's lock would hold its run that long).
func checkStaleAfter(d time.Duration) error {
	if d <= 0 || d > 7*24*time.Hour {
		return fmt.Errorf("--stale-after %s: must be in (0, 168h] (the default, 5m, leaves a killed run's lock to be taken over after 5 minutes)", d)
	}
	return nil
}

func (c *sweepStatusCmd) Validate() error { return checkStaleAfter(c.StaleAfter) }
