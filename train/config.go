// Package train runs the training loop: a TOML run config, batches from token files, AdamW with a schedule,
// JSON-lines metrics, atomic checkpoints and exact resume (docs/definitions.md §3). The run config itself, its
// key table and its checks that need no machine are package recipe's plain data, re-exported here under the
// names train has always had.
package train

import (
	"fmt"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
)

// Config is a whole run, as read from run.toml (recipe.Config).
type Config = recipe.Config

// ModelConfig is a preset plus any model key overriding it (recipe.ModelConfig).
type ModelConfig = recipe.ModelConfig

// DataConfig names the token files (recipe.DataConfig).
type DataConfig = recipe.DataConfig

// LoopConfig sets the batch, the budget and the intervals (recipe.LoopConfig).
type LoopConfig = recipe.LoopConfig

// KeyRole is what a config key means to a study that groups runs (recipe.KeyRole).
type KeyRole = recipe.KeyRole

// KeyInfo is the meaning of one dotted config key (recipe.KeyInfo).
type KeyInfo = recipe.KeyInfo

// The key roles and the dotted config keys, as recipe's key table names them.
const (
	KeyComputes            = recipe.KeyComputes
	KeyBookkeeping         = recipe.KeyBookkeeping
	KeySize                = recipe.KeySize
	KeyGamma               = recipe.KeyGamma
	KeyNormEps             = recipe.KeyNormEps
	KeyAttnGate            = recipe.KeyAttnGate
	KeyPreset              = recipe.KeyPreset
	KeyHiddenSize          = recipe.KeyHiddenSize
	KeyLayers              = recipe.KeyLayers
	KeyHeads               = recipe.KeyHeads
	KeyFFN                 = recipe.KeyFFN
	KeyHeadDim             = recipe.KeyHeadDim
	KeySteps               = recipe.KeySteps
	KeyTokens              = recipe.KeyTokens
	KeyBatchSize           = recipe.KeyBatchSize
	KeyLR                  = recipe.KeyLR
	KeyInitRule            = recipe.KeyInitRule
	KeyInitStd             = recipe.KeyInitStd
	KeyContext             = recipe.KeyContext
	KeyVocab               = recipe.KeyVocab
	KeyMoEFFN              = recipe.KeyMoEFFN
	KeyExperts             = recipe.KeyExperts
	KeySeed                = recipe.KeySeed
	KeyThreads             = recipe.KeyThreads
	KeyLogInterval         = recipe.KeyLogInterval
	KeyEvalInterval        = recipe.KeyEvalInterval
	KeyCheckpointInterval  = recipe.KeyCheckpointInterval
	KeyKeepCheckpoints     = recipe.KeyKeepCheckpoints
	KeyDiagnosticsInterval = recipe.KeyDiagnosticsInterval
	KeySkipNonFinite       = recipe.KeySkipNonFinite
	KeyDataTrain           = recipe.KeyDataTrain
	KeyDataVal             = recipe.KeyDataVal
	KeyEvalWindows         = recipe.KeyEvalWindows
	KeyPrecision           = recipe.KeyPrecision
	KeyWarmup              = recipe.KeyWarmup
	KeyScheduleKind        = recipe.KeyScheduleKind
	KeyQKNorm              = recipe.KeyQKNorm
	KeyNorm                = recipe.KeyNorm
)

// MaxSeed is the largest seed (recipe.MaxSeed).
const MaxSeed = recipe.MaxSeed

// Default returns the defaults of every key (recipe.Default).
func Default() Config { return recipe.Default() }

// CheckSeed refuses a seed above MaxSeed (recipe.CheckSeed).
func CheckSeed(what string, seed uint64) error { return recipe.CheckSeed(what, seed) }

// Key is the meaning of a dotted config key and its display rank (recipe.Key).
func Key(key string) (KeyInfo, int) { return recipe.Key(key) }

// ShortName is the display name of a config key (recipe.ShortName).
func ShortName(key string) string { return recipe.ShortName(key) }

// Load reads a run config file (path may be empty for all defaults) and applies overrides of the form
// dotted.key=value (recipe.Load), then checks what needs this machine (Validate).
func Load(path string, sets []string) (Config, error) {
	c, err := recipe.Load(path, sets)
	if err != nil {
		return c, err
	}
	if err := checkMachine(c); err != nil {
		return Config{}, fmt.Errorf("run config: %w", err)
	}
	return c, nil
}

// LoadSets reads a run config file and applies typed overrides (recipe.LoadSets), then checks what needs this
// machine (Validate).
func LoadSets(path string, sets []override.Set) (Config, error) {
	c, err := recipe.LoadSets(path, sets)
	if err != nil {
		return c, err
	}
	if err := checkMachine(c); err != nil {
		return Config{}, fmt.Errorf("run config: %w", err)
	}
	return c, nil
}

// Validate is c.Validate (every check on the values alone) and the two checks that need the machine's kernels:
// train.precision names a row of the precision table (or "auto"), and train.threads fits the kernels' pool.
func Validate(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return checkMachine(c)
}

// checkMachine makes Validate's checks beyond recipe's, naming the key.
func checkMachine(c Config) error {
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
func maskTargets(c Config, targets []int32) {
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
