// Package train runs the training loop: a TOML run config, batches from token files, AdamW with a schedule,
// JSON-lines metrics, atomic checkpoints and exact resume (docs/definitions.md §3). The run config itself, its
// key table and its checks that need no machine are package recipe's plain data (recipe.Config, recipe.Key*),
// named with recipe's prefix; Load and Validate add the checks that need this machine.
package train

import (
	"fmt"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
)

// Load reads a run config file (path may be empty for all defaults) and applies overrides of the form
// dotted.key=value (recipe.Load), then checks what needs this machine (Validate).
func Load(path string, sets []string) (recipe.Config, error) {
	c, err := recipe.Load(path, sets)
	if err != nil {
		return c, err
	}
	if err := checkMachine(c); err != nil {
		return recipe.Config{}, fmt.Errorf("run config: %w", err)
	}
	return c, nil
}

// LoadSets reads a run config file and applies typed overrides (recipe.LoadSets), then checks what needs this
// machine (Validate).
func LoadSets(path string, sets []override.Set) (recipe.Config, error) {
	c, err := recipe.LoadSets(path, sets)
	if err != nil {
		return c, err
	}
	if err := checkMachine(c); err != nil {
		return recipe.Config{}, fmt.Errorf("run config: %w", err)
	}
	return c, nil
}

// Validate is c.Validate (every check on the values alone) and the two checks that need the machine's kernels:
// train.precision names a row of the precision table (or "auto"), and train.threads fits the kernels' pool.
func Validate(c recipe.Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return checkMachine(c)
}

// checkMachine makes Validate's checks beyond recipe's, naming the key.
func checkMachine(c recipe.Config) error {
	t := c.Train
	switch {
	case t.Threads > kernel.MaxWorkers:
		return fmt.Errorf("train.threads = %d: must be in [0, %d] (0: all cores)", t.Threads, kernel.MaxWorkers)
	case t.Precision != PrecisionAuto && precisionErr(t.Precision) != nil:
		return fmt.Errorf("train.precision = %q: must be %s or %q", t.Precision, precisionNames(), PrecisionAuto)
	}
	return nil
}

// maskTargets sets every target of a batch of T-token windows whose window position is not in
// train.loss_positions to model.IgnoreTarget (nothing when the list is empty).
func maskTargets(c recipe.Config, targets []int32) {
	pos := c.Train.LossPositions
	if len(pos) == 0 {
		return
	}
	T := c.Model.SeqLen
	for b := 0; b+T <= len(targets); b += T {
		w := targets[b : b+T]
		for i := range w {
			keep := false
			for _, p := range pos {
				keep = keep || p == i
			}
			if !keep {
				w[i] = model.IgnoreTarget
			}
		}
	}
}
