// Package model is smallinit's decoder-only Transformer: its configuration, its parameters laid out in one flat
// buffer, and a forward and backward pass over preallocated activations (docs/definitions.md §1). It reads like llm.c's
// train_gpt2.c: every layer's forward and backward sit side by side, all activations live in one explicit struct
// allocated once, and a training step allocates nothing.
package arch

import (
	"errors"
	"fmt"
	"math"

	"github.com/smallinit/smallinit/override"
)

// Norm kinds (config key norm).
const (
	NormRMS   = "rmsnorm"   // RMSNorm(x) = g ⊙ x / sqrt(mean(x²) + ε)
	NormLayer = "layernorm" // LayerNorm(x) = g ⊙ (x − mean) / sqrt(var + ε) + b
)

// Attention gate kinds (config key attn_gate; docs/definitions.md §1, Qiu et al. 2025 "G1").
const (
	GateNone        = "none"        // no gate
	GateHeadwise    = "headwise"    // one sigmoid gate per head: W_gate is [H, d]
	GateElementwise = "elementwise" // one sigmoid gate per channel: W_gate is [H·d_h, d]
)

// Config is the shape and the architecture switches of a model. Its JSON form is the Hugging Face Llama
// config.json (model/file.go); its field names in TOML run configs are the snake_case tags below.
type Config struct {
	Vocab     int     `toml:"vocab_size"`              // V
	Dim       int     `toml:"hidden_size"`             // d
	FFN       int     `toml:"intermediate_size"`       // d_ff of the SwiGLU MLP
	Layers    int     `toml:"num_hidden_layers"`       // L
	Heads     int     `toml:"num_attention_heads"`     // H
	KVHeads   int     `toml:"kv_heads"`                // key/value heads of grouped-query attention; 0 means H (multi-head)
	HeadDim   int     `toml:"head_dim"`                // d_h; 0 means d/H
	SeqLen    int     `toml:"max_position_embeddings"` // T, the context length
	NormEps   float64 `toml:"norm_eps"`                // ε inside the square root of every norm
	Norm      string  `toml:"norm"`                    // NormRMS or NormLayer
	AttnGate  string  `toml:"attn_gate"`               // GateNone, GateHeadwise or GateElementwise
	RopeTheta float64 `toml:"rope_theta"`              // RoPE base
	// RoPE frequency scaling, Hugging Face's rope_scaling (see rope.go): RopeScaling is its rope_type, ""
	// (plain RoPE), RopeLinear or RopeLlama3; the other fields are its factor, low_freq_factor,
	// high_freq_factor and original_max_position_embeddings (the last three for llama3 only).
	RopeScaling        string  `toml:"rope_scaling"`
	RopeFactor         float64 `toml:"rope_factor"`
	RopeLowFreqFactor  float64 `toml:"rope_low_freq_factor"`
	RopeHighFreqFactor float64 `toml:"rope_high_freq_factor"`
	RopeOriginalSeqLen int     `toml:"rope_original_max_position_embeddings"`
	Tied               bool    `toml:"tie_word_embeddings"` // LM head shares the embedding matrix
	QKNorm             bool    `toml:"qk_norm"`             // RMSNorm (gain [d_h], ε = norm_eps) on each head of q and k before RoPE (Qwen3)
	QKVBias            bool    `toml:"qkv_bias"`            // biases on q_proj, k_proj and v_proj, none on o_proj (Qwen2, Qwen2-MoE)

	// Mixture of experts (docs/definitions.md §1 "MoE FFN"; Hugging Face Qwen-MoE field names). Used when FFNKind is "moe".
	FFNKind    string  `toml:"ffn"`                             // FFNDense or FFNMoE
	Experts    int     `toml:"num_experts"`                     // E
	TopK       int     `toml:"num_experts_per_tok"`             // k
	ExpertFFN  int     `toml:"moe_intermediate_size"`           // width of each routed expert's SwiGLU
	SharedFFN  int     `toml:"shared_expert_intermediate_size"` // width of the always-on shared expert (0: none)
	NormTopK   bool    `toml:"norm_topk_prob"`                  // renormalise the top-k weights to sum to 1
	AuxCoef    float64 `toml:"router_aux_loss_coef"`            // α of the load-balancing loss α·E·Σ_e f_e·P_e
	ZLossCoef  float64 `toml:"router_z_loss_coef"`              // coefficient of the router z-loss mean(lse²) (0: off)
	SparseStep int     `toml:"decoder_sparse_step"`             // layer l is MoE when (l+1) % step == 0
	Capacity   float64 `toml:"capacity_factor"`                 // per-expert capacity ceil(c·N·k/E); 0: no dropping
	// BiasRate is the step of auxiliary-loss-free load balancing (Wang et al. 2024, DeepSeek-V3): each MoE block
	// keeps a per-expert bias b (tensor mlp.gate.e_score_correction_bias) that is added to the router
	// probabilities for the top-k choice only, and after every training step b_e += rate·sign(1/E − f_e). 0: off.
	BiasRate float64 `toml:"router_bias_update_rate"`
}

// FFN kinds (config key ffn).
const (
	FFNDense = "dense" // SwiGLU MLP in every block
	FFNMoE   = "moe"   // routed SwiGLU experts (in the blocks decoder_sparse_step selects)
)

// IsMoE reports whether block l's FFN is a mixture of experts.
func (c Config) IsMoE(l int) bool {
	return c.FFNKind == FFNMoE && c.SparseStep > 0 && (l+1)%c.SparseStep == 0
}

// NumMoE is the number of MoE blocks.
func (c Config) NumMoE() int {
	n := 0
	for l := 0; l < c.Layers; l++ {
		if c.IsMoE(l) {
			n++
		}
	}
	return n
}

// FixedEpsBelow is the line of docs/definitions.md §1 "Fixed ε": a norm ε below it is the fixed setting of
// claim 2 (1e-12), one at or above it the default (1e-5, or a width-emulated ε).
const FixedEpsBelow = 1e-8

// EpsFixed reports whether the config's norm ε is fixed (docs/definitions.md §1 "Fixed ε": ε < FixedEpsBelow).
func (c Config) EpsFixed() bool { return c.NormEps < FixedEpsBelow }

// DefaultFFN is docs/definitions.md §1's SwiGLU width: 8d/3 rounded up to a multiple of 64 (384 at d=128, 704 at 256, 1408 at 512).
func DefaultFFN(d int) int { return (8*d/3 + 63) / 64 * 64 }

// HeadSize returns d_h, defaulting to d/H.
func (c Config) HeadSize() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	if c.Heads == 0 {
		return 0
	}
	return c.Dim / c.Heads
}

// AttnDim returns H·d_h, the width of the concatenated heads.
func (c Config) AttnDim() int { return c.Heads * c.HeadSize() }

// KVHeadCount returns the number of key/value heads: KVHeads, or H when it is 0. With grouped-query attention
// (Ainslie et al. 2023) query head h reads key/value head h / (H/KV), as Hugging Face's repeat_kv does.
func (c Config) KVHeadCount() int {
	if c.KVHeads > 0 {
		return c.KVHeads
	}
	return c.Heads
}

// KVDim returns KV·d_h, the width of k_proj's and of v_proj's output.
func (c Config) KVDim() int { return c.KVHeadCount() * c.HeadSize() }

// QKVDim returns H·d_h + 2·KV·d_h, the q, k and v columns of the fused projection (the ones the biases apply
// to); the gate columns follow them.
func (c Config) QKVDim() int { return c.AttnDim() + 2*c.KVDim() }

// QKVGWidth returns the row width of the fused q|k|v|gate projection.
func (c Config) QKVGWidth() int { return c.QKVDim() + c.GateRows() }

// GateRows returns the number of rows of W_gate: H·d_h (elementwise), H (headwise) or 0.
func (c Config) GateRows() int {
	switch c.AttnGate {
	case GateElementwise:
		return c.AttnDim()
	case GateHeadwise:
		return c.Heads
	}
	return 0
}

// MaxDim bounds every size of a config (vocab_size, hidden_size, intermediate_size, layers, heads, context):
// far above any model this toolkit trains, and small enough that products of two sizes fit in int64. A
// vocabulary to train is held to it too (data.MaxVocab).
const MaxDim = 1 << 24

// Validate reports the first field that is missing or out of range, naming its config key.
func (c Config) Validate() error {
	pos := []struct {
		key string
		v   int
	}{
		{"vocab_size", c.Vocab}, {"hidden_size", c.Dim}, {"intermediate_size", c.FFN},
		{"num_hidden_layers", c.Layers}, {"num_attention_heads", c.Heads}, {"max_position_embeddings", c.SeqLen},
	}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("%s = %d: must be positive", p.key, p.v)
		}
		if p.v > MaxDim {
			return fmt.Errorf("%s = %d: too large (limit %d)", p.key, p.v, MaxDim)
		}
	}
	if c.KVHeads < 0 || c.KVHeads > 0 && c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("kv_heads = %d: must divide num_attention_heads = %d (or be 0 for multi-head attention)", c.KVHeads, c.Heads)
	}
	if c.HeadDim < 0 {
		return fmt.Errorf("head_dim = %d: must be positive (or 0 for hidden_size/num_attention_heads)", c.HeadDim)
	}
	if c.HeadDim == 0 && c.Dim%c.Heads != 0 {
		return fmt.Errorf("hidden_size %d is not a multiple of num_attention_heads %d (set head_dim)", c.Dim, c.Heads)
	}
	if hs := c.HeadSize(); hs%2 != 0 {
		return fmt.Errorf("head_dim = %d: RoPE needs an even head size", hs)
	}
	if c.Vocab > math.MaxInt32 {
		return errors.New("vocab_size does not fit in int32 token ids")
	}
	if !(c.NormEps > 0) || c.NormEps > 1 || math.IsInf(c.NormEps, 0) {
		return fmt.Errorf("norm_eps = %g: must be in (0, 1]", c.NormEps)
	}
	if float32(c.NormEps) == 0 {
		return fmt.Errorf("norm_eps = %g: underflows float32 (smallest normal is 1.2e-38)", c.NormEps)
	}
	if !(c.RopeTheta > 1) || math.IsInf(c.RopeTheta, 0) {
		return fmt.Errorf("rope_theta = %g: must be > 1", c.RopeTheta)
	}
	if err := c.validateRopeScaling(); err != nil {
		return err
	}
	switch c.Norm {
	case NormRMS, NormLayer:
	default:
		return fmt.Errorf("norm = %q: want %q or %q", c.Norm, NormRMS, NormLayer)
	}
	switch c.AttnGate {
	case GateNone, GateHeadwise, GateElementwise:
	default:
		return fmt.Errorf("attn_gate = %q: want %q, %q or %q", c.AttnGate, GateNone, GateHeadwise, GateElementwise)
	}
	switch c.FFNKind {
	case "", FFNDense: // "" is dense, so that a Config literal without MoE fields is a dense model
	case FFNMoE:
		switch {
		case c.Experts < 1 || c.Experts > 1024:
			return fmt.Errorf("num_experts = %d: must be in [1, 1024]", c.Experts)
		case c.TopK < 1 || c.TopK > c.Experts:
			return fmt.Errorf("num_experts_per_tok = %d: must be in [1, num_experts = %d]", c.TopK, c.Experts)
		case c.ExpertFFN < 1 || c.ExpertFFN > 1<<20:
			return fmt.Errorf("moe_intermediate_size = %d: must be positive", c.ExpertFFN)
		case c.SharedFFN < 0 || c.SharedFFN > 1<<20:
			return fmt.Errorf("shared_expert_intermediate_size = %d: must be ≥ 0", c.SharedFFN)
		case !(c.AuxCoef >= 0 && c.AuxCoef < 100):
			return fmt.Errorf("router_aux_loss_coef = %g: must be in [0, 100)", c.AuxCoef)
		case !(c.ZLossCoef >= 0 && c.ZLossCoef < 100):
			return fmt.Errorf("router_z_loss_coef = %g: must be in [0, 100)", c.ZLossCoef)
		case !(c.BiasRate >= 0 && c.BiasRate < 1):
			return fmt.Errorf("router_bias_update_rate = %g: must be in [0, 1)", c.BiasRate)
		case c.SparseStep < 1:
			return fmt.Errorf("decoder_sparse_step = %d: must be ≥ 1", c.SparseStep)
		case !(c.Capacity == 0 || c.Capacity >= 1.0/float64(c.TopK)) || c.Capacity > 1e6:
			return fmt.Errorf("capacity_factor = %g: must be 0 (no dropping) or a positive factor", c.Capacity)
		}
	default:
		return fmt.Errorf("ffn = %q: want %q or %q", c.FFNKind, FFNDense, FFNMoE)
	}
	// NumParams lists every tensor; bound their count first, so that a hostile config.json (2^24 layers of 1024
	// experts) is refused at once instead of exhausting memory. Released models have under 50,000 tensors.
	if perLayer := int64(16) + 3*int64(max(c.Experts, 0)); int64(c.Layers)*perLayer > maxTensors {
		return fmt.Errorf("num_hidden_layers = %d with %d experts: over %d tensors, too many for this engine", c.Layers, c.Experts, maxTensors)
	}
	if n := c.NumParams(); n > 1<<34 {
		return fmt.Errorf("model has %d parameters: too large for this engine", n)
	}
	return nil
}

// maxTensors bounds a model's tensor count (Validate).
const maxTensors = 1 << 18

// NumParams returns the number of scalar parameters (the length of the flat parameter buffer).
func (c Config) NumParams() int64 {
	var n int64
	for _, t := range c.Tensors() {
		n += int64(t.Size())
	}
	return n
}

// NonEmbeddingParams returns N of docs/definitions.md §4 "Effective model size", the x-axis of the law L(N) = E + A·N^(−α)
// (the N of the sweep tables and of the report): NumParams less the token embedding (V·d) and, when it is
// untied, the LM head (V·d). Norm gains, attention, FFN, gate and router weights count, and for MoE models every
// expert (total, not active, parameters). Like nanoGPT's get_num_params(non_embedding=True), it lives on the
// model so that nothing else has to count parameters.
func (c Config) NonEmbeddingParams() int64 {
	vd := int64(c.Vocab) * int64(c.Dim)
	n := c.NumParams() - vd
	if !c.Tied {
		n -= vd
	}
	return n
}

// MatmulParams returns N_matmul: every weight that goes through a matrix multiply per token, the LM head
// included (tied or not), the count used by FLOPs per token = 6·N_matmul + 12·L·T·d. Attention counts q_proj
// [H·d_h, d], k_proj and v_proj [KV·d_h, d] each (smaller under grouped-query attention), the gate and o_proj;
// the q/k/v biases are additions, not multiply-adds, and are left out, as PaLM's count leaves out norms. For MoE
// blocks it counts the active parameters: the router, k routed experts and the shared expert.
func (c Config) MatmulParams() int64 {
	d, a, f := int64(c.Dim), int64(c.AttnDim()), int64(c.FFN)
	attn := d*int64(c.QKVDim()) + d*int64(c.GateRows()) + a*d
	var n int64
	for l := 0; l < c.Layers; l++ {
		n += attn
		if c.IsMoE(l) {
			n += d*int64(c.Experts) + int64(c.TopK)*3*d*int64(c.ExpertFFN) + 3*d*int64(c.SharedFFN)
			if c.SharedFFN > 0 {
				n += d
			}
		} else {
			n += 3 * d * f
		}
	}
	return n + int64(c.Vocab)*d
}

// FLOPsPerToken is the training FLOPs per token used by bench: 6·N_matmul + 12·L·T·d (PaLM appendix B; the
// attention term counts the full T×T square even though the engine skips the masked half, and is the same under
// grouped-query attention, where every query head still scores and mixes its own T keys).
func (c Config) FLOPsPerToken() float64 {
	return 6*float64(c.MatmulParams()) + 12*float64(c.Layers)*float64(c.SeqLen)*float64(c.Dim)
}

// Set assigns one field by its config key (the toml tag, e.g. "norm_eps" or "attn_gate"), value in the one
// override language (package override: TOML syntax, bare words are strings), so "qk_norm=true" is a bool and a
// value of the wrong type is an error naming the key. Validate still has to be called afterwards.
func (c *Config) Set(key, value string) error {
	s, err := override.Parse(key + "=" + value)
	if err != nil {
		return err
	}
	if err := override.Apply([]override.Set{s}, c); errors.Is(err, override.ErrUnknownKey) {
		return fmt.Errorf("unknown model key %q", key)
	} else if err != nil {
		return fmt.Errorf("model key %w", err)
	}
	return nil
}
