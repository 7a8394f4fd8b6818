package arch

import "fmt"

// Tensor classes, used by initialisation rules, weight decay and diagnostics.
const (
	ClassEmbed    = "embed"
	ClassQ        = "q"
	ClassK        = "k"
	ClassV        = "v"
	ClassGate     = "gate" // attention output gate W_gate
	ClassO        = "o"
	ClassFFNGate  = "ffn_gate"
	ClassFFNUp    = "ffn_up"
	ClassFFNDown  = "ffn_down"
	ClassHead     = "head"
	ClassRouter   = "router"      // MoE router W_r [E, d]
	ClassRouterB  = "router_bias" // MoE selection bias [E] (Config.BiasRate > 0); starts at 0, set by BalanceRouters, not trained
	ClassShGate   = "shared_gate" // MoE shared-expert gate [1, d]
	ClassNorm     = "norm"        // norm gains
	ClassNormBias = "norm_bias"   // LayerNorm biases
	ClassQKVBias  = "qkv_bias"    // q_proj, k_proj and v_proj biases (Config.QKVBias); start at 0, no weight decay
)

// TensorSpec describes one named tensor inside the flat parameter buffer.
type TensorSpec struct {
	Name   string // Hugging Face Llama name, e.g. model.layers.0.self_attn.q_proj.weight
	Class  string // one of the Class constants
	Layer  int    // block index, or -1 for embedding, final norm and head
	Shape  []int  // [d_out, d_in] for matrices, [d] for norm vectors
	Offset int    // first element in the flat buffer
}

// Size is the number of elements.
func (t TensorSpec) Size() int {
	n := 1
	for _, s := range t.Shape {
		n *= s
	}
	return n
}

// IsMatrix reports whether the tensor is a weight matrix (γ-initialised, weight-decayed).
func (t TensorSpec) IsMatrix() bool { return len(t.Shape) == 2 }

// FanIn is d_in of a matrix stored [d_out, d_in] (docs/definitions.md §2: the embedding's d_in is d, its second dimension).
func (t TensorSpec) FanIn() int {
	if len(t.Shape) != 2 {
		return 0
	}
	return t.Shape[1]
}

// Tensors lists every parameter tensor of a model with this config, in buffer order, without allocating
// the model (for writing or reading checkpoints tensor by tensor). Within a block, q, k, v and the attention gate are adjacent rows
// of one [H·d_h + 2·KV·d_h + gate rows, d] matrix so that a single matrix multiply computes all four
// projections (k_proj and v_proj have KV·d_h rows: fewer than q_proj under grouped-query attention), and the FFN
// gate and up projections are adjacent rows of one [2·d_ff, d] matrix, for the same reason. The q, k and v
// biases, when present, are likewise one contiguous [H·d_h + 2·KV·d_h] vector right after the matrix.
func (c Config) Tensors() []TensorSpec {
	d, a, kv, f := c.Dim, c.AttnDim(), c.KVDim(), c.FFN
	var ts []TensorSpec
	off := 0
	add := func(name, class string, layer int, shape ...int) {
		t := TensorSpec{Name: name, Class: class, Layer: layer, Shape: shape, Offset: off}
		ts = append(ts, t)
		off += t.Size()
	}
	norm := func(prefix string, layer int) {
		add(prefix+".weight", ClassNorm, layer, d)
		if c.Norm == NormLayer {
			add(prefix+".bias", ClassNormBias, layer, d)
		}
	}
	add("model.embed_tokens.weight", ClassEmbed, -1, c.Vocab, d)
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		norm(p+"input_layernorm", l)
		add(p+"self_attn.q_proj.weight", ClassQ, l, a, d)
		add(p+"self_attn.k_proj.weight", ClassK, l, kv, d)
		add(p+"self_attn.v_proj.weight", ClassV, l, kv, d)
		if g := c.GateRows(); g > 0 {
			add(p+"self_attn.g_proj.weight", ClassGate, l, g, d)
		}
		if c.QKVBias {
			add(p+"self_attn.q_proj.bias", ClassQKVBias, l, a)
			add(p+"self_attn.k_proj.bias", ClassQKVBias, l, kv)
			add(p+"self_attn.v_proj.bias", ClassQKVBias, l, kv)
		}
		add(p+"self_attn.o_proj.weight", ClassO, l, d, a)
		if c.QKNorm {
			add(p+"self_attn.q_norm.weight", ClassNorm, l, c.HeadSize())
			add(p+"self_attn.k_norm.weight", ClassNorm, l, c.HeadSize())
		}
		norm(p+"post_attention_layernorm", l)
		if !c.IsMoE(l) {
			add(p+"mlp.gate_proj.weight", ClassFFNGate, l, f, d)
			add(p+"mlp.up_proj.weight", ClassFFNUp, l, f, d)
			add(p+"mlp.down_proj.weight", ClassFFNDown, l, d, f)
			continue
		}
		add(p+"mlp.gate.weight", ClassRouter, l, c.Experts, d)
		if c.BiasRate > 0 {
			add(p+"mlp.gate.e_score_correction_bias", ClassRouterB, l, c.Experts)
		}
		expert := func(prefix string, f int) {
			add(prefix+"gate_proj.weight", ClassFFNGate, l, f, d)
			add(prefix+"up_proj.weight", ClassFFNUp, l, f, d)
			add(prefix+"down_proj.weight", ClassFFNDown, l, d, f)
		}
		for e := 0; e < c.Experts; e++ {
			expert(fmt.Sprintf("%smlp.experts.%d.", p, e), c.ExpertFFN)
		}
		if c.SharedFFN > 0 {
			expert(p+"mlp.shared_expert.", c.SharedFFN)
			add(p+"mlp.shared_expert_gate.weight", ClassShGate, l, 1, d)
		}
	}
	norm("model.norm", -1)
	if !c.Tied {
		add("lm_head.weight", ClassHead, -1, c.Vocab, d)
	}
	return ts
}
