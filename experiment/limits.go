package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/internal/dirname"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/train"
)

// Bounds of the counts a plan or a command line can set. Each is far above any study this toolkit can train
// (a run takes minutes) and far below what would exhaust memory or plan for hours; they are checked before
// anything is allocated, so a typo such as --seeds 4611686018427387904 is an error naming the key.
// A budget's bounds and the steps per run it may size are package budget's (budget.Max, budget.MaxSteps).
const (
	MaxSeeds = 1000 // seeds of one arm
	MaxArms  = 1000 // arms of a plan (a sweep group's points count one each)
)

// CheckSeedCount checks a requested number of seeds (a --seeds flag) against [1, MaxSeeds]; what names the
// flag or key.
func CheckSeedCount(what string, n int) error {
	if n < 1 || n > MaxSeeds {
		return fmt.Errorf("%s %d: want 1 to %d seeds", what, n, MaxSeeds)
	}
	return nil
}

// checkSeeds refuses a seed list that is too long or names a seed twice (two runs of one directory).
func checkSeeds(what string, seeds []uint64) error {
	if len(seeds) > MaxSeeds {
		return fmt.Errorf("%s: %d seeds, more than %d", what, len(seeds), MaxSeeds)
	}
	seen := make(map[uint64]bool, len(seeds))
	for _, s := range seeds {
		if err := recipe.CheckSeed(what+": seed", s); err != nil {
			return err
		}
		if seen[s] {
			return fmt.Errorf("%s: seed %d is listed twice", what, s)
		}
		seen[s] = true
	}
	return nil
}

// checkOptions refuses options no run can mean: negative steps or budgets, a budget past budget.Max, an index
// below −1 or more runs than MaxRuns.
func checkOptions(p *Plan, o *Options) error {
	switch {
	case o.Out == "":
		return fmt.Errorf("out: an empty directory name (name a directory; . is the working directory)")
	case o.Steps < 0:
		return fmt.Errorf("steps %d: must be ≥ 0 (0: size the budget)", o.Steps)
	case o.Budget < 0 || o.Budget > budget.Max:
		return fmt.Errorf("budget %s: want a duration in [0, %s] (0: the plan's)", o.Budget, budget.Max)
	case o.Task && o.Index < 0:
		return fmt.Errorf("index %d: must be ≥ 0", o.Index)
	}
	if err := checkLine("data", o.Data); err != nil { // the corpus path is written into plan.txt
		return err
	}
	if err := checkTierBudget(p, o.Budget); err != nil {
		return err
	}
	if o.Seeds != nil {
		if len(o.Seeds) == 0 {
			return fmt.Errorf("seeds: want at least one")
		}
		if err := checkSeeds("seeds", o.Seeds); err != nil {
			return err
		}
	}
	return nil
}

// checkTierBudget refuses a budget (> 0) of a plan with tiers that is not one of its tiers' minutes: TierFor would
// run the largest tier below it (--budget 1h the 30 min tier), silently. The error names the tiers.
func checkTierBudget(p *Plan, budget time.Duration) error {
	if len(p.Tiers) == 0 || budget <= 0 {
		return nil
	}
	var names []string
	for _, t := range p.Tiers {
		if math.Abs(budget.Minutes()-t.Minutes) <= 1e-9*t.Minutes {
			return nil
		}
		name := t.Name
		if t.Smoke != "" {
			name += " (smoke test)"
		}
		names = append(names, name)
	}
	return fmt.Errorf("budget %s is none of the plan's tiers, %s: give one of them (a budget between two tiers would run the smaller one)",
		budget, strings.Join(names, ", "))
}

// checkRuns refuses a plan whose arms × seeds exceed MaxRuns.
func checkRuns(p *Plan, seeds int) error {
	if runs := p.arms * seeds; runs > sweep.MaxRuns {
		return fmt.Errorf("plan %s: %d arms × %d seeds = %d runs, more than %d", p.Name, p.arms, seeds, runs, sweep.MaxRuns)
	}
	return nil
}

// groupArms counts a group's arms (its points, for a sweep group) without enumerating them; a count past
// MaxArms is returned as MaxArms+1.
func groupArms(arms int, axisLens []int) int {
	if arms > 0 {
		return min(arms, MaxArms+1)
	}
	n := 1
	for _, l := range axisLens {
		if l > MaxArms || n*l > MaxArms {
			return MaxArms + 1
		}
		n *= l
	}
	return n
}

// checkName refuses a group or arm name that could not be one directory under OUT (package dirname's alphabet,
// the one every name that becomes a directory is held to).
func checkName(what, name string) error { return dirname.Check(what, name) }

// checkLine refuses free text from a plan or the command line (a title, a smoke note, a pair's name, a data
// directory) that holds a control character: written into plan.txt, a report or the console's record, a
// newline would add a line of the user's to a generated file. Text that names a directory is held to the name
// alphabet instead (checkName).
func checkLine(what, s string) error {
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }); i >= 0 {
		return fmt.Errorf("%s %q: a control character (a newline, tab or the like) at byte %d: write it on one line", what, s, i)
	}
	return nil
}

// reservedNames are the files and directories a study writes in OUT besides its groups' directories (the
// "anchor" directory is an evaluator's anchor grid): a group so named would train among them.
var reservedNames = []string{DataDir, ProbeDataDir, TuneDir, "anchor", budget.SizingFile, budget.SizingLock, summary.File,
	train.PrecisionFile, train.PackingFile, TrainLogFile, "claims.json", "report.html", PlanFile, PairsFile}

// checkGroupName refuses a group name that is not a safe directory name, or that names one of OUT's own
// files, or that ends in "-probes" (the suffix of the probe-mix twin of every group's directory).
func checkGroupName(where, name string) error {
	if err := checkName(where+": name", name); err != nil {
		return err
	}
	for _, r := range reservedNames {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("%s: name %q is one of the study's own files or directories (%s)", where, name, strings.Join(reservedNames, ", "))
		}
	}
	if strings.HasSuffix(name, "-probes") || strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".toml") {
		return fmt.Errorf("%s: name %q: a group may not end in -probes, .json, .html or .toml (names of the study's own files)", where, name)
	}
	return nil
}

// planKeys are the run-config keys the plan sets for every run (the corpus's vocabulary, the sized steps,
// the seed, the data files): a set of one of them would be overridden, or override the plan, in silence.
var planKeys = []string{recipe.KeyVocab, recipe.KeySteps, recipe.KeySeed, recipe.KeyDataTrain, recipe.KeyDataVal}

// checkPlanSets refuses sets of the plan's own keys (planKeys and the per_steps keys).
func checkPlanSets(where string, sets []override.Set, per []PerStep) error {
	for _, s := range override.Qualify(sets, recipe.Config{}, "model") {
		if slices.Contains(planKeys, s.Key) || slices.ContainsFunc(per, func(p PerStep) bool { return p.Key == s.Key }) {
			return fmt.Errorf("%s: %s is set by the plan for every run (the corpus's vocabulary, the sized steps, the plan's seeds, per_steps); remove it", where, s.Key)
		}
	}
	return nil
}

// countArms sets p.arms and refuses a plan of more than MaxArms arms, or more than MaxRuns runs at any of its
// seed lists.
func countArms(p *Plan) error {
	widest := 0
	for _, t := range p.Tiers {
		widest = max(widest, len(t.Widths))
		if err := checkSeeds(fmt.Sprintf("tier %s: seeds", t.Name), t.Seeds); err != nil {
			return err
		}
		if err := budget.CheckMinutes(fmt.Sprintf("tier %s: minutes", t.Name), t.Minutes); err != nil {
			return err
		}
	}
	p.arms = 0
	maxSeeds := max(len(p.Seeds), len(p.Budget.LongSeeds))
	for _, t := range p.Tiers {
		maxSeeds = max(maxSeeds, len(t.Seeds))
	}
	for _, g := range p.Groups {
		var lens []int
		for _, a := range g.Axes {
			n := len(a.Values)
			if g.Ladder && a.Key == arch.KeyHiddenSize {
				n = max(n, widest)
			}
			lens = append(lens, n)
		}
		n := groupArms(len(g.Arms), lens)
		p.arms = min(p.arms+n, MaxArms+1)
		if p.arms > MaxArms {
			return fmt.Errorf("plan %s: more than %d arms (group %s has %d)", p.Name, MaxArms, g.Name, n)
		}
		seeds := maxSeeds
		if g.Seeds != nil {
			seeds = len(g.Seeds)
		}
		if n*seeds > sweep.MaxRuns {
			return fmt.Errorf("group %s: %d arms × %d seeds = %d runs, more than %d", g.Name, n, seeds, n*seeds, sweep.MaxRuns)
		}
	}
	return checkRuns(p, maxSeeds)
}
