package train

import "github.com/smallinit/smallinit/model"

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

// configKeys lists the keys with a display name or a role other than KeyComputes, the usual varying keys
// (Lead) first, in the order a label shows them. Every key must be one of Config's (a test checks it, so that a
// renamed key cannot silently fall out of the table).
var configKeys = []KeyInfo{
	{"init.gamma", "γ", KeyComputes, true},
	{"model.norm_eps", "ε", KeyComputes, true},
	{"model.attn_gate", "gate", KeyComputes, true},
	{"model.preset", "preset", KeySize, true},
	{"model.hidden_size", "d", KeySize, true},
	{"model.num_hidden_layers", "L", KeySize, true},
	{"model.num_attention_heads", "H", KeySize, true},
	{"model.intermediate_size", "d_ff", KeySize, true},
	{"model.head_dim", "d_h", KeySize, true},
	{"train.steps", "steps", KeyComputes, true},
	{"train.tokens", "tokens", KeyComputes, true},
	{"train.batch_size", "B", KeySize, true},
	{"schedule.lr", "lr", KeyComputes, true},
	{"init.rule", "init", KeyComputes, true},
	{"init.std", "σ", KeyComputes, true},
	{"model.max_position_embeddings", "T", KeyComputes, false},
	{"model.vocab_size", "V", KeyComputes, false},
	{"model.moe_intermediate_size", "", KeySize, false},
	{"model.num_experts", "", KeySize, false},
	{"seed", "seed", KeyBookkeeping, false},
	{"train.threads", "", KeyBookkeeping, false},
	{"train.log_interval", "", KeyBookkeeping, false},
	{"train.eval_interval", "", KeyBookkeeping, false},
	{"train.checkpoint_interval", "", KeyBookkeeping, false},
	{"train.keep_checkpoints", "", KeyBookkeeping, false},
	{"train.diagnostics_interval", "", KeyBookkeeping, false},
	{"train.skip_nonfinite", "", KeyBookkeeping, false},
	{"data.train", "", KeyBookkeeping, false},
	{"data.val", "", KeyBookkeeping, false},
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
func (c Config) Gated() bool { return c.Model.AttnGate != model.GateNone && c.Model.AttnGate != "" }

// GateRank orders attention gates from none (0) through headwise (1) to the others (2).
func (c Config) GateRank() int {
	switch c.Model.AttnGate {
	case model.GateNone, "":
		return 0
	case model.GateHeadwise:
		return 1
	}
	return 2
}

// BaseN is the model's non-embedding parameter count without the attention gate's weights: the size that
// arms differing only in the gate share.
func (c Config) BaseN() int64 {
	m := c.Model.Config
	m.AttnGate = model.GateNone
	return m.NonEmbeddingParams()
}
