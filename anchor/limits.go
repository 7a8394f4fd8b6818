package anchor

import (
	"fmt"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
)

// Bounds of a task's sizes and of a diagram grid, checked before anything is generated: each is far above the
// papers' (900,000 composite sequences, 1000 mix sequences per combination) and far below what would exhaust
// memory (a composite example holds its tokens, about 150 bytes with its slice).
const (
	MaxExamples = 5_000_000 // composite training sequences (750 MB of examples in memory)
	MaxPerCombo = 20_000    // mix sequences per anchor combination (4 million sequences)
	MaxCells    = 10_000    // cells of a diagram
	MaxJobs     = 256       // cells trained at once (each holds its data, model and optimizer state)
)

// CheckSizes checks a task's size against its bound: examples for the composite task, perCombo for the mix
// task; the flag names are those the caller's user typed.
func CheckSizes(task, examplesFlag string, examples int, perComboFlag string, perCombo int) error {
	switch task {
	case TaskComposite:
		if examples < 1 || examples > MaxExamples {
			return fmt.Errorf("%s %d: must be in [1, %d]", examplesFlag, examples, MaxExamples)
		}
	case TaskMix:
		if perCombo < 1 || perCombo > MaxPerCombo {
			return fmt.Errorf("%s %d: must be in [1, %d]", perComboFlag, perCombo, MaxPerCombo)
		}
	default:
		return fmt.Errorf("task %q: want %s or %s", task, TaskComposite, TaskMix)
	}
	return nil
}

// Validate checks every count of a grid before anything is allocated for it, naming the setting (as the
// diagram command's flag) and its range.
func (g Grid) Validate() error {
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{
		{"examples", g.Examples, 1, MaxExamples},
		{"per-combo", g.MixPerCombo, 0, MaxPerCombo},
		{"jobs", g.Jobs, 1, MaxJobs},
		{"threads", g.Budget.Threads, 0, kernel.MaxWorkers},
		{"steps", g.Budget.Steps, 1, 1 << 30},
		{"batch", g.Budget.Batch, 1, 1 << 16},
		{"dim", g.Shape.Dim, 1, 1 << 16},
		{"ffn", g.Shape.FFN, 1, 1 << 18},
		{"head-dim", g.Shape.HeadDim, 1, 1 << 16},
		{"mix-depth", g.MixDepth, 0, 256},
	} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("--%s %d: must be in [%d, %d]", c.name, c.v, c.lo, c.hi)
		}
	}
	if len(g.Gammas) == 0 || len(g.LRs) == 0 || len(g.Seeds) == 0 || len(g.Depths) == 0 && g.MixDepth == 0 {
		return fmt.Errorf("anchor grid: want at least one γ, learning rate, seed and depth")
	}
	// γ and the rates in the ranges of init.gamma and schedule.lr, checked before the data is written (a cell
	// refused them only once it was about to train).
	for _, gamma := range g.Gammas {
		if err := (recipe.Init{Rule: recipe.RuleGamma, Gamma: gamma}).Validate(); err != nil {
			return fmt.Errorf("--gammas %g: %w", gamma, err)
		}
	}
	for _, lr := range g.LRs {
		if err := (recipe.Schedule{Kind: recipe.ScheduleConstant, PeakLR: lr}).Validate(); err != nil {
			return fmt.Errorf("--lrs %g: %w", lr, err)
		}
	}
	for _, d := range g.Depths {
		if d < 1 || d > 256 {
			return fmt.Errorf("--depths %d: must be in [1, 256]", d)
		}
	}
	perSeed := len(g.Gammas) * len(g.LRs) * (len(g.Depths) + min(g.MixDepth, 1))
	if len(g.Gammas) > MaxCells || len(g.LRs) > MaxCells || len(g.Depths) > MaxCells || len(g.Seeds) > MaxCells ||
		perSeed > MaxCells || perSeed*len(g.Seeds) > MaxCells {
		return fmt.Errorf("anchor grid: %d γ × %d rates × %d depths (and the mix task) × %d seeds: more than %d cells",
			len(g.Gammas), len(g.LRs), len(g.Depths), len(g.Seeds), MaxCells)
	}
	seen := map[uint64]bool{}
	for _, s := range g.Seeds {
		if err := recipe.CheckSeed("--seeds: seed", s); err != nil {
			return err
		}
		if seen[s] {
			return fmt.Errorf("--seeds: seed %d is listed twice", s)
		}
		seen[s] = true
	}
	return nil
}
