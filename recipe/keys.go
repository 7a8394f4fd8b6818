package recipe

import "github.com/smallinit/smallinit/arch"

// KeyRole is what a config key means to a study that groups runs: whether a difference in it makes two runs
// different arms, and whether it sets the model's size.
type KeyRole int

const (
	// KeyComputes: the key changes what a run computes (the default for a key not listed in configKeys).
	KeyComputes KeyRole = iota
	// KeyBookkeeping: the key changes what a run logs, how often, with how many threads or where it reads
	// its data from, not what it computes; runs that differ only in such keys (and the seed) are one arm.
	KeyBookkeeping
	// KeySize: the key sets the model's size (the N of a loss-against-size law) and computes.
	KeySize
)

// KeyInfo is the meaning of one dotted config key (as in config.toml and --set).
type KeyInfo struct {
	Key   string
	Short string // the display name in labels and figure legends ("γ" for init.gamma); "" for the key itself
	Role  KeyRole
	Lead  bool // shown before the other keys in a label, in the table's order (the others follow by name)
}

// The dotted config keys (as in config.toml and --set) that code outside train names: a renamed key is a compile
// error, not a silent miss. TestKeyConstantsExist checks each is one of Config's keys.
const (
	KeyGamma               = "init.gamma"
	KeyNormEps             = "model.norm_eps"
	KeyAttnGate            = "model.attn_gate"
	KeyPreset              = "model.preset"
	KeyLayers              = "model.num_hidden_layers"
	KeyHeads               = "model.num_attention_heads"
	KeyHeadDim             = "model.head_dim"
	KeySteps               = "train.steps"
	KeyTokens              = "train.tokens"
	KeyBatchSize           = "train.batch_size"
	KeyLR                  = "schedule.lr"
	KeyInitRule            = "init.rule"
	KeyInitStd             = "init.std"
	KeyContext             = "model.max_position_embeddings"
	KeyVocab               = "model.vocab_size"
	KeyMoEFFN              = "model.moe_intermediate_size"
	KeyExperts             = "model.num_experts"
	KeySeed                = "seed"
	KeyThreads             = "train.threads"
	KeyLogInterval         = "train.log_interval"
	KeyEvalInterval        = "train.eval_interval"
	KeyCheckpointInterval  = "train.checkpoint_interval"
	KeyKeepCheckpoints     = "train.keep_checkpoints"
	KeyDiagnosticsInterval = "train.diagnostics_interval"
	KeySkipNonFinite       = "train.skip_nonfinite"
	KeyDataTrain           = "data.train"
	KeyDataVal             = "data.val"
	KeyEvalWindows         = "train.eval_windows"
	KeyPrecision           = "train.precision"
	KeyWarmup              = "schedule.warmup_steps"
	KeyScheduleKind        = "schedule.kind"
	KeyQKNorm              = "model.qk_norm"
	KeyNorm                = "model.norm"
)

// keyConstants lists the constants above for the test.
var keyConstants = []string{KeyGamma, KeyNormEps, KeyAttnGate, KeyPreset, arch.KeyHiddenSize, KeyLayers, KeyHeads, arch.KeyFFN, KeyHeadDim, KeySteps, KeyTokens, KeyBatchSize, KeyLR, KeyInitRule, KeyInitStd, KeyContext, KeyVocab, KeyMoEFFN, KeyExperts, KeySeed, KeyThreads, KeyLogInterval, KeyEvalInterval, KeyCheckpointInterval, KeyKeepCheckpoints, KeyDiagnosticsInterval, KeySkipNonFinite, KeyDataTrain, KeyDataVal, KeyEvalWindows, KeyPrecision, KeyWarmup, KeyScheduleKind, KeyQKNorm, KeyNorm}

// configKeys lists the keys with a display name or a role other than KeyComputes, the usual varying keys
// (Lead) first, in the order a label shows them. Every key must be one of Config's (a test checks it, so that a
// renamed key cannot silently fall out of the table).
var configKeys = []KeyInfo{
	{KeyGamma, "γ", KeyComputes, true},
	{KeyNormEps, "ε", KeyComputes, true},
	{KeyAttnGate, "gate", KeyComputes, true},
	{KeyPreset, "preset", KeySize, true},
	{arch.KeyHiddenSize, "d", KeySize, true},
	{KeyLayers, "L", KeySize, true},
	{KeyHeads, "H", KeySize, true},
	{arch.KeyFFN, "d_ff", KeySize, true},
	{KeyHeadDim, "d_h", KeySize, true},
	{KeySteps, "steps", KeyComputes, true},
	{KeyTokens, "tokens", KeyComputes, true},
	{KeyBatchSize, "B", KeySize, true},
	{KeyLR, "lr", KeyComputes, true},
	{KeyInitRule, "init", KeyComputes, true},
	{KeyInitStd, "σ", KeyComputes, true},
	{KeyContext, "T", KeyComputes, false},
	{KeyVocab, "V", KeyComputes, false},
	{KeyMoEFFN, "", KeySize, false},
	{KeyExperts, "", KeySize, false},
	{KeySeed, "seed", KeyBookkeeping, false},
	{KeyThreads, "", KeyBookkeeping, false},
	{KeyLogInterval, "", KeyBookkeeping, false},
	{KeyEvalInterval, "", KeyBookkeeping, false},
	{KeyCheckpointInterval, "", KeyBookkeeping, false},
	{KeyKeepCheckpoints, "", KeyBookkeeping, false},
	{KeyDiagnosticsInterval, "", KeyBookkeeping, false},
	{KeySkipNonFinite, "", KeyBookkeeping, false},
	{KeyDataTrain, "", KeyBookkeeping, false},
	{KeyDataVal, "", KeyBookkeeping, false},
}

// Key is the meaning of a dotted config key; rank orders keys for display (Lead keys by their place in the
// table, every other key after them, tied).
func Key(key string) (info KeyInfo, rank int) {
	for i, k := range configKeys {
		if k.Key == key {
			if !k.Lead {
				i = len(configKeys)
			}
			return k, i
		}
	}
	return KeyInfo{Key: key, Role: KeyComputes}, len(configKeys)
}

// ShortName is the display name of a config key (γ for init.gamma, ε for model.norm_eps, ...), the key itself
// when it has none.
func ShortName(key string) string {
	if k, _ := Key(key); k.Short != "" {
		return k.Short
	}
	return key
}

// Gated reports whether the config's model has an attention gate.
func (c Config) Gated() bool { return c.Model.AttnGate != arch.GateNone && c.Model.AttnGate != "" }

// GateRank orders attention gates from none (0) through headwise (1) to the others (2).
func (c Config) GateRank() int {
	switch c.Model.AttnGate {
	case arch.GateNone, "":
		return 0
	case arch.GateHeadwise:
		return 1
	}
	return 2
}

// BaseN is the model's non-embedding parameter count without the attention gate's weights: the size that
// arms differing only in the gate share.
func (c Config) BaseN() int64 {
	m := c.Model.Config
	m.AttnGate = arch.GateNone
	return m.NonEmbeddingParams()
}
