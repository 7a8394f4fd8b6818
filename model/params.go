package model

import (
	"fmt"

	"github.com/smallinit/smallinit/arch"
)

// Weights are named views into one flat buffer: the parameters, or their gradients, which share the layout.
type Weights struct {
	Flat   []float32
	Embed  []float32 // [V, d]
	Layers []LayerWeights
	NormF  []float32 // final norm gain [d]
	NormFB []float32 // final norm bias [d] (LayerNorm only)
	Head   []float32 // [V, d]; aliases Embed when tied
}

// LayerWeights are one block's views.
type LayerWeights struct {
	Norm1, Norm1B []float32 // input_layernorm gain (and bias)
	QKVG          []float32 // [H·d_h + 2·KV·d_h + gate rows, d]: q_proj, k_proj, v_proj, g_proj rows in that order
	QKVB          []float32 // [H·d_h + 2·KV·d_h]: q_proj, k_proj, v_proj biases in that order (QKVBias only)
	O             []float32 // [d, H·d_h]
	QNorm, KNorm  []float32 // per-head RMSNorm gains [d_h] of q and k (QKNorm only)
	Norm2, Norm2B []float32 // post_attention_layernorm gain (and bias)
	GateUp        []float32 // [2·d_ff, d]: mlp.gate_proj rows then mlp.up_proj rows (dense blocks)
	Down          []float32 // [d, d_ff] (dense blocks)

	// MoE blocks
	Router     []float32    // [E, d]
	RouterBias []float32    // [E] selection bias (nil unless Config.BiasRate > 0)
	Experts    []FFNWeights // E routed experts
	Shared     FFNWeights   // shared expert (nil slices when absent)
	SharedGate []float32    // [1, d]
}

// ffn returns the layer's dense SwiGLU weights.
func (lw *LayerWeights) ffn(f int) FFNWeights {
	return FFNWeights{GateUp: lw.GateUp, Down: lw.Down, Width: f}
}

// newWeights slices flat (of length c.NumParams()) into named views.
func newWeights(c arch.Config, flat []float32) Weights {
	w := Weights{Flat: flat, Layers: make([]LayerWeights, c.Layers)}
	view := func(t arch.TensorSpec) []float32 { return flat[t.Offset : t.Offset+t.Size() : t.Offset+t.Size()] }
	// span returns the contiguous run from the first to the last of a group of adjacent tensors.
	span := func(first, last arch.TensorSpec) []float32 {
		end := last.Offset + last.Size()
		return flat[first.Offset:end:end]
	}
	ts := c.Tensors()
	byName := make(map[string]arch.TensorSpec, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	w.Embed = view(byName["model.embed_tokens.weight"])
	for l := range w.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		lw := &w.Layers[l]
		lw.Norm1 = view(byName[p+"input_layernorm.weight"])
		lastQKVG := byName[p+"self_attn.v_proj.weight"]
		if c.GateRows() > 0 {
			lastQKVG = byName[p+"self_attn.g_proj.weight"]
		}
		lw.QKVG = span(byName[p+"self_attn.q_proj.weight"], lastQKVG)
		if c.QKVBias {
			lw.QKVB = span(byName[p+"self_attn.q_proj.bias"], byName[p+"self_attn.v_proj.bias"])
		}
		lw.O = view(byName[p+"self_attn.o_proj.weight"])
		if c.QKNorm {
			lw.QNorm, lw.KNorm = view(byName[p+"self_attn.q_norm.weight"]), view(byName[p+"self_attn.k_norm.weight"])
		}
		lw.Norm2 = view(byName[p+"post_attention_layernorm.weight"])
		ffn := func(prefix string, f int) FFNWeights {
			return FFNWeights{GateUp: span(byName[prefix+"gate_proj.weight"], byName[prefix+"up_proj.weight"]),
				Down: view(byName[prefix+"down_proj.weight"]), Width: f}
		}
		if !c.IsMoE(l) {
			dense := ffn(p+"mlp.", c.FFN)
			lw.GateUp, lw.Down = dense.GateUp, dense.Down
		} else {
			lw.Router = view(byName[p+"mlp.gate.weight"])
			if c.BiasRate > 0 {
				lw.RouterBias = view(byName[p+"mlp.gate.e_score_correction_bias"])
			}
			for e := 0; e < c.Experts; e++ {
				lw.Experts = append(lw.Experts, ffn(fmt.Sprintf("%smlp.experts.%d.", p, e), c.ExpertFFN))
			}
			if c.SharedFFN > 0 {
				lw.Shared = ffn(p+"mlp.shared_expert.", c.SharedFFN)
				lw.SharedGate = view(byName[p+"mlp.shared_expert_gate.weight"])
			}
		}
		if c.Norm == arch.NormLayer {
			lw.Norm1B = view(byName[p+"input_layernorm.bias"])
			lw.Norm2B = view(byName[p+"post_attention_layernorm.bias"])
		}
	}
	w.NormF = view(byName["model.norm.weight"])
	if c.Norm == arch.NormLayer {
		w.NormFB = view(byName["model.norm.bias"])
	}
	if c.Tied {
		w.Head = w.Embed
	} else {
		w.Head = view(byName["lm_head.weight"])
	}
	return w
}
