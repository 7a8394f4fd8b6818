// Package recipe is a run's typed recipe as plain data: the run config of config.toml and --set (Config: the
// model's architecture, the init rule, AdamW, the schedule, the data and the loop), its key table, the init
// rules table and σ (docs/definitions.md §2), and the checks that need nothing but the values. It sits below the
// model, so that a package that only reads recipes (a report) builds without the model and its kernels; every
// package names its types with recipe's prefix (recipe.Config, recipe.KeyGamma).
package recipe

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/override"
)

// Config is a whole run, as read from run.toml (every key documented in the README).
type Config struct {
	Seed      uint64      `toml:"seed"`
	Model     ModelConfig `toml:"model"`
	Init      Init        `toml:"init"`
	Optimizer AdamW       `toml:"optimizer"`
	Schedule  Schedule    `toml:"schedule"`
	Data      DataConfig  `toml:"data"`
	Train     LoopConfig  `toml:"train"`
}

// ModelConfig is a preset plus any model key overriding it.
type ModelConfig struct {
	Preset string `toml:"preset"`
	arch.Config
}

// DataConfig names the token files.
type DataConfig struct {
	Train string `toml:"train"` // .tok file of training tokens
	Val   string `toml:"val"`   // .tok file of validation tokens (optional)
}

// LoopConfig sets the batch, the budget and the intervals.
type LoopConfig struct {
	BatchSize        int     `toml:"batch_size"`
	Steps            int     `toml:"steps"`  // number of optimizer steps; or
	Tokens           int64   `toml:"tokens"` // a token budget (steps = tokens / (batch_size·T)) when steps = 0
	GradClip         float64 `toml:"grad_clip"`
	LogInterval      int     `toml:"log_interval"`
	EvalInterval     int     `toml:"eval_interval"` // 0: only at the end
	EvalWindows      int     `toml:"eval_windows"`  // validation windows per evaluation (0: all)
	CheckpointEvery  int     `toml:"checkpoint_interval"`
	KeepCheckpoints  int     `toml:"keep_checkpoints"`
	SkipNonFinite    bool    `toml:"skip_nonfinite"` // skip a batch with a non-finite loss or gradient instead of stopping
	Threads          int     `toml:"threads"`        // worker threads (0: all cores)
	DiagnosticsEvery int     `toml:"diagnostics_interval"`
	// Precision of the matrix products: "f32" (also when empty) or "bf16" (bfloat16 operands, float32
	// accumulation; master weights, gradients, norms, softmax, loss and AdamW stay float32). "bf16" needs a
	// CPU with AVX512_BF16: elsewhere the run refuses it rather than crawl through the kernels' pure-Go twin.
	// "auto" times the eligible precisions on the run's model when it starts and writes the fastest into the
	// run's config.toml (ResolvePrecision).
	Precision string `toml:"precision,omitempty"`
	// LossPositions, when set, are the window positions (0 … T−1) whose next-token target counts in the
	// training loss; every other target is model.IgnoreTarget. Fixed-format tasks whose answer sits at a known
	// position (the anchor functions: one answer after 9 input tokens) train on the answer only. Empty: all.
	LossPositions []int `toml:"loss_positions"`
	// SnapshotSteps are the steps after which the run also writes a snapshot (DIR/snapshots/step-N: a
	// checkpoint that is never pruned), from which a WSD cooldown branch of a shorter horizon starts
	// (StartOrResumeBranch; docs/definitions.md §3). Each must lie in (0, steps).
	SnapshotSteps []int `toml:"snapshot_steps,omitempty"`
}

// Default returns the defaults of every key: the tiny preset, γ = 1, docs/definitions.md §3's AdamW and cosine schedule.
func Default() Config {
	p, _ := arch.LookupPreset("tiny")
	return Config{
		Model:     ModelConfig{Preset: p.Name, Config: p.Config},
		Init:      DefaultInit(),
		Optimizer: DefaultAdamW(),
		Schedule:  Schedule{Kind: ScheduleCosine, PeakLR: 3e-3, Warmup: 50, MinRatio: 0.1},
		Train: LoopConfig{BatchSize: p.Batch, Steps: 500, GradClip: 1, LogInterval: 10, EvalInterval: 100,
			EvalWindows: 64, CheckpointEvery: 100, KeepCheckpoints: 2},
	}
}

// Load reads a run config file (path may be empty for all defaults) and applies overrides of the form
// dotted.key=value (package override: value in TOML syntax; bare words are taken as strings). See LoadSets.
func Load(path string, sets []string) (Config, error) {
	over, err := override.ParseAll(sets)
	if err != nil {
		return Config{}, fmt.Errorf("run config: %w", err)
	}
	return LoadSets(path, over)
}

// LoadSets reads a run config file (path may be empty for all defaults) and applies typed overrides (a key
// without a section is a model key, override.Qualify). The file is decoded once, straight into the typed config
// over the defaults; the model keys it leaves undefined then take the values of its preset (the file's
// model.preset, or the overrides' when they name one), and the overrides are set on top (override.Apply), with
// no text in between. Unknown keys are errors naming them.
func LoadSets(path string, sets []override.Set) (Config, error) {
	sets = override.Qualify(sets, Config{}, "model") // "norm_eps" is "model.norm_eps"; "seed" stays
	c := Default()
	defined := map[string]bool{} // the file's dotted keys, in lower case (TOML matches fields in any case)
	if path != "" {
		b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
		if err != nil {
			return Config{}, fmt.Errorf("run config: %w", err)
		}
		if err := override.CheckDepth(b); err != nil {
			return Config{}, fmt.Errorf("run config %s: %w", path, err)
		}
		md, err := toml.Decode(string(b), &c)
		if err != nil {
			return Config{}, fmt.Errorf("run config %s: %w", path, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			keys := make([]string, len(und))
			for i, k := range und {
				keys[i] = k.String()
			}
			sort.Strings(keys)
			return Config{}, fmt.Errorf("run config %s: %w %s", path, override.ErrUnknownKey, strings.Join(keys, ", "))
		}
		for _, k := range md.Keys() {
			defined[strings.ToLower(k.String())] = true
		}
	}
	preset := c.Model.Preset
	for _, s := range sets {
		switch s.Key {
		case KeyPreset:
			name, ok := s.Value.(string)
			if !ok {
				return Config{}, fmt.Errorf("run config overrides: %s = %v: want a string", s.Key, s.Value)
			}
			preset = name
		case arch.KeyFFN, arch.KeyHiddenSize:
			defined[s.Key] = true
		}
	}
	p, err := arch.LookupPreset(preset)
	if err != nil {
		return Config{}, fmt.Errorf("run config: model.preset: %w", err)
	}
	fromPreset(&c.Model.Config, p.Config, func(key string) bool { return defined["model."+key] })
	if !defined[KeyBatchSize] {
		c.Train.BatchSize = p.Batch
	}
	if err := override.Apply(sets, &c); err != nil {
		return Config{}, fmt.Errorf("run config overrides: %w", err)
	}
	c.Model.FollowHiddenSize(defined[arch.KeyHiddenSize], defined[arch.KeyFFN])
	c.Model.Preset = p.Name // the table's spelling (names are case-insensitive)
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("run config: %w", err)
	}
	return c, nil
}

// fromPreset sets every field of m whose key (its toml tag, in lower case) the file did not define to the
// preset's value: the file's model keys override its preset, as the overrides then override both.
func fromPreset(m *arch.Config, preset arch.Config, defined func(key string) bool) {
	dst, src := reflect.ValueOf(m).Elem(), reflect.ValueOf(preset)
	for i := range dst.NumField() {
		tag, _, _ := strings.Cut(dst.Type().Field(i).Tag.Get("toml"), ",")
		if tag != "" && tag != "-" && !defined(strings.ToLower(tag)) {
			dst.Field(i).Set(src.Field(i))
		}
	}
}

// MaxSeed is the largest seed: config.toml stores it as a TOML integer, which is int64, so a larger one would
// be written and then refused when the run is read back (resume, report). Every reader of a seed (the seed
// key, demo's --seed, a plan's seeds) checks it with CheckSeed.
const MaxSeed = math.MaxInt64

// CheckSeed refuses a seed above MaxSeed; what names the flag or key.
func CheckSeed(what string, seed uint64) error {
	if seed > MaxSeed {
		return fmt.Errorf("%s %d: at most %d (a run's config.toml stores it as a TOML integer, an int64)", what, seed, uint64(MaxSeed))
	}
	return nil
}

// Validate checks every section and names the first bad key. The two checks that need the machine's kernels,
// the name of train.precision (train's precision table is its one parser) and the bound of train.threads (the
// kernels' pool), are train's: train.Load, train.LoadSets and train.Validate make them after this one.
func (c Config) Validate() error {
	if err := CheckSeed("seed =", c.Seed); err != nil {
		return err
	}
	if err := c.Model.Config.Validate(); err != nil {
		return fmt.Errorf("model.%w", err)
	}
	if err := c.Init.Validate(); err != nil {
		return err
	}
	if err := c.Optimizer.Validate(); err != nil {
		return err
	}
	if err := c.Schedule.Validate(); err != nil {
		return err
	}
	t := c.Train
	switch {
	case t.BatchSize < 1 || t.BatchSize > 1<<16:
		return fmt.Errorf("train.batch_size = %d: must be in [1, 65536]", t.BatchSize)
	case t.Steps < 0 || t.Tokens < 0:
		return fmt.Errorf("train.steps and train.tokens must be ≥ 0")
	case t.Steps == 0 && t.Tokens == 0:
		return fmt.Errorf("train.steps = 0 and train.tokens = 0: set a budget")
	case t.Steps > 0 && t.Tokens > 0:
		// Neither may win silently (the default steps = 500 would otherwise cut a token budget short).
		return fmt.Errorf("train.steps = %d and train.tokens = %d both set a budget: set train.steps = 0 to train by tokens (steps defaults to %d)", t.Steps, t.Tokens, Default().Train.Steps)
	case t.Steps == 0 && t.Tokens < int64(t.BatchSize)*int64(c.Model.SeqLen):
		return fmt.Errorf("train.tokens = %d is less than one step of batch_size × seq_len = %d × %d tokens", t.Tokens, t.BatchSize, c.Model.SeqLen)
	case t.GradClip < 0:
		return fmt.Errorf("train.grad_clip = %g: must be ≥ 0 (0 disables clipping)", t.GradClip)
	case t.LogInterval < 1:
		return fmt.Errorf("train.log_interval = %d: must be ≥ 1", t.LogInterval)
	case t.EvalInterval < 0 || t.EvalWindows < 0 || t.CheckpointEvery < 0 || t.DiagnosticsEvery < 0:
		return fmt.Errorf("train intervals must be ≥ 0")
	case t.KeepCheckpoints < 1:
		return fmt.Errorf("train.keep_checkpoints = %d: must be ≥ 1", t.KeepCheckpoints)
	case t.Threads < 0:
		return fmt.Errorf("train.threads = %d: must be ≥ 0 (0: all cores)", t.Threads)
	case c.Schedule.Kind == ScheduleWSD && c.Schedule.Warmup+c.Schedule.DecaySteps > c.TotalSteps():
		// An overlap would cut the warmup short with a jump down to the decay line.
		return fmt.Errorf("schedule.warmup_steps + schedule.decay_steps = %d + %d exceeds the run's %d steps", c.Schedule.Warmup, c.Schedule.DecaySteps, c.TotalSteps())
	}
	if c.Data.Train == "" {
		return fmt.Errorf("data.train: no training token file given")
	}
	for _, s := range t.SnapshotSteps {
		if s <= 0 || s >= c.TotalSteps() {
			return fmt.Errorf("train.snapshot_steps: %d outside the run's steps (0, %d)", s, c.TotalSteps())
		}
	}
	seen := make(map[int]bool, len(t.LossPositions))
	for _, p := range t.LossPositions {
		if p < 0 || p >= c.Model.SeqLen {
			return fmt.Errorf("train.loss_positions: %d outside the window [0, %d)", p, c.Model.SeqLen)
		}
		if seen[p] {
			return fmt.Errorf("train.loss_positions: %d given twice", p)
		}
		seen[p] = true
	}
	return nil
}

// DataKeys are the config's data paths, by key: the keys a moved run directory may differ in (DataPath).
func DataKeys() []string { return []string{KeyDataTrain, KeyDataVal} }

// DataPath is the field of c that data key key (KeyDataTrain, KeyDataVal) sets, or nil for any other key.
func (c *Config) DataPath(key string) *string {
	switch key {
	case KeyDataTrain:
		return &c.Data.Train
	case KeyDataVal:
		return &c.Data.Val
	}
	return nil
}

// TotalSteps is the number of optimizer steps: train.steps, or train.tokens / (batch_size · T).
func (c Config) TotalSteps() int {
	if c.Train.Steps > 0 {
		return c.Train.Steps
	}
	return int(c.Train.Tokens / int64(c.Train.BatchSize*c.Model.SeqLen))
}

// Flatten is c as dotted keys and their typed values (override.Struct): the keys of its config.toml with the
// values decoding that file gives, read from the struct without printing it.
func (c Config) Flatten() map[string]any {
	sets := override.Struct(c)
	out := make(map[string]any, len(sets))
	for _, s := range sets {
		out[s.Key] = s.Value
	}
	return out
}

// Encode returns the resolved config as TOML (written to DIR/config.toml).
func (c Config) Encode() ([]byte, error) {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
