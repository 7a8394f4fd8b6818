package model

import (
	"fmt"
	"math"
)

// refModel is a float64 twin of the model written as plainly as possible from SPEC §1, one token and one head at
// a time. It is the specification the float32 engine is tested against: its forward is differentiated by central
// finite differences, and the engine's loss, logits and gradients must match.
type refModel struct {
	c Config
	w map[string][]float64
}

func newRef(m *Model) *refModel {
	r := &refModel{c: m.Config, w: map[string][]float64{}}
	for _, t := range m.Specs {
		v := make([]float64, t.Size())
		for i := range v {
			v[i] = float64(m.Params.Flat[t.Offset+i])
		}
		r.w[t.Name] = v
	}
	return r
}

// matvec returns W·x for W [rows, len(x)].
func matvec(W, x []float64, rows int) []float64 {
	cols := len(x)
	y := make([]float64, rows)
	for i := range y {
		for j, xv := range x {
			y[i] += W[i*cols+j] * xv
		}
	}
	return y
}

func (r *refModel) norm(x []float64, name string) []float64 {
	g := r.w[name+".weight"]
	d := float64(len(x))
	out := make([]float64, len(x))
	if r.c.Norm == NormLayer {
		b := r.w[name+".bias"]
		var mu, v float64
		for _, xv := range x {
			mu += xv / d
		}
		for _, xv := range x {
			v += (xv - mu) * (xv - mu) / d
		}
		for i, xv := range x {
			out[i] = g[i]*(xv-mu)/math.Sqrt(v+r.c.NormEps) + b[i]
		}
		return out
	}
	var ms float64
	for _, xv := range x {
		ms += xv * xv / d
	}
	for i, xv := range x {
		out[i] = g[i] * xv / math.Sqrt(ms+r.c.NormEps)
	}
	return out
}

// rmsHead is RMSNorm of one head vector with gain g (QK-norm).
func (r *refModel) rmsHead(x, g []float64) []float64 {
	var ms float64
	for _, v := range x {
		ms += v * v / float64(len(x))
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = g[i] * v / math.Sqrt(ms+r.c.NormEps)
	}
	return out
}

// rope rotates each head of x (rotate-half convention) for position t.
func (r *refModel) rope(x []float64, t int) {
	dh := r.c.HeadSize()
	for h := 0; h < r.c.Heads; h++ {
		v := x[h*dh : (h+1)*dh]
		for i := 0; i < dh/2; i++ {
			ang := float64(t) * math.Pow(r.c.RopeTheta, -float64(2*i)/float64(dh))
			a, b := v[i], v[i+dh/2]
			v[i] = a*math.Cos(ang) - b*math.Sin(ang)
			v[i+dh/2] = b*math.Cos(ang) + a*math.Sin(ang)
		}
	}
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// forward returns the mean loss, the per-token losses and the logits [n, V] of sequences inputs [b, T].
func (r *refModel) forward(inputs, targets []int32) (float64, []float64, []float64) {
	c := r.c
	T, d, H, dh, a, V := c.SeqLen, c.Dim, c.Heads, c.HeadSize(), c.AttnDim(), c.Vocab
	N := len(inputs)
	var auxLoss float64
	x := make([][]float64, N)
	for n, t := range inputs {
		x[n] = append([]float64(nil), r.w["model.embed_tokens.weight"][int(t)*d:int(t+1)*d]...)
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		q, k, v, g := make([][]float64, N), make([][]float64, N), make([][]float64, N), make([][]float64, N)
		for n := range x {
			h := r.norm(x[n], p+"input_layernorm")
			q[n] = matvec(r.w[p+"self_attn.q_proj.weight"], h, a)
			k[n] = matvec(r.w[p+"self_attn.k_proj.weight"], h, a)
			v[n] = matvec(r.w[p+"self_attn.v_proj.weight"], h, a)
			if c.QKNorm {
				for h := 0; h < H; h++ {
					copy(q[n][h*dh:], r.rmsHead(q[n][h*dh:(h+1)*dh], r.w[p+"self_attn.q_norm.weight"]))
					copy(k[n][h*dh:], r.rmsHead(k[n][h*dh:(h+1)*dh], r.w[p+"self_attn.k_norm.weight"]))
				}
			}
			r.rope(q[n], n%T)
			r.rope(k[n], n%T)
			if c.AttnGate != GateNone {
				g[n] = matvec(r.w[p+"self_attn.g_proj.weight"], h, c.GateRows())
			}
		}
		for n := range x {
			s0 := n - n%T // first row of this sequence
			y := make([]float64, a)
			for h := 0; h < H; h++ {
				scores := make([]float64, n-s0+1)
				mx := math.Inf(-1)
				for j := range scores {
					for e := 0; e < dh; e++ {
						scores[j] += q[n][h*dh+e] * k[s0+j][h*dh+e]
					}
					scores[j] /= math.Sqrt(float64(dh))
					mx = math.Max(mx, scores[j])
				}
				var z float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - mx)
					z += scores[j]
				}
				for j, pj := range scores {
					for e := 0; e < dh; e++ {
						y[h*dh+e] += pj / z * v[s0+j][h*dh+e]
					}
				}
			}
			for e := range y {
				switch c.AttnGate {
				case GateElementwise:
					y[e] *= sigmoid64(g[n][e])
				case GateHeadwise:
					y[e] *= sigmoid64(g[n][e/dh])
				}
			}
			o := matvec(r.w[p+"self_attn.o_proj.weight"], y, d)
			for e := range o {
				x[n][e] += o[e]
			}
		}
		if c.IsMoE(l) {
			auxLoss += r.moe(x, p, l) / float64(c.numMoE())
			continue
		}
		for n := range x {
			o := r.swiglu(r.norm(x[n], p+"post_attention_layernorm"), p+"mlp.", c.FFN)
			for e := range o {
				x[n][e] += o[e]
			}
		}
	}
	head := r.w["lm_head.weight"]
	if c.Tied {
		head = r.w["model.embed_tokens.weight"]
	}
	logits := make([]float64, 0, N*V)
	losses := make([]float64, N)
	var loss float64
	for n := range x {
		z := matvec(head, r.norm(x[n], "model.norm"), V)
		mx := math.Inf(-1)
		for _, zv := range z {
			mx = math.Max(mx, zv)
		}
		var s float64
		for _, zv := range z {
			s += math.Exp(zv - mx)
		}
		losses[n] = mx + math.Log(s) - z[targets[n]]
		loss += losses[n] / float64(N)
		logits = append(logits, z...)
	}
	return loss + auxLoss, losses, logits
}

// swiglu returns W_down·(silu(W_gate·h) ⊙ W_up·h) for the FFN whose tensors start with prefix.
func (r *refModel) swiglu(h []float64, prefix string, f int) []float64 {
	gt := matvec(r.w[prefix+"gate_proj.weight"], h, f)
	up := matvec(r.w[prefix+"up_proj.weight"], h, f)
	for j := range gt {
		gt[j] = gt[j] * sigmoid64(gt[j]) * up[j]
	}
	return matvec(r.w[prefix+"down_proj.weight"], gt, len(h))
}

// moe adds block p's MoE FFN to every row of x, one token at a time in token order (which is the order the
// capacity limit drops in), and returns the block's auxiliary loss α·E·Σ f_e·P_e + z_coef·mean lse².
func (r *refModel) moe(x [][]float64, p string, l int) float64 {
	c := r.c
	E, k, N := c.Experts, c.TopK, len(x)
	limit := N * k
	if c.Capacity > 0 {
		limit = int(math.Ceil(c.Capacity * float64(N*k) / float64(E)))
	}
	counts, routed := make([]int, E), make([]int, E)
	P := make([]float64, E)
	var z float64
	outs := make([][]float64, N)
	for n := range x {
		h := r.norm(x[n], p+"post_attention_layernorm")
		logits := matvec(r.w[p+"mlp.gate.weight"], h, E)
		mx := math.Inf(-1)
		for _, v := range logits {
			mx = math.Max(mx, v)
		}
		var s float64
		for _, v := range logits {
			s += math.Exp(v - mx)
		}
		lse := mx + math.Log(s)
		z += lse * lse / float64(N)
		probs := make([]float64, E)
		for e, v := range logits {
			probs[e] = math.Exp(v - lse)
			P[e] += probs[e] / float64(N)
		}
		var sel []int
		var sum float64
		for j := 0; j < k; j++ {
			best := -1
			for e := range probs {
				if !containsInt(sel, e) && (best < 0 || probs[e] > probs[best]) {
					best = e
				}
			}
			sel = append(sel, best)
			sum += probs[best]
		}
		out := make([]float64, len(h))
		for _, e := range sel {
			routed[e]++
			if counts[e] >= limit {
				continue
			}
			counts[e]++
			w := probs[e]
			if c.NormTopK {
				w /= sum
			}
			y := r.swiglu(h, fmt.Sprintf("%smlp.experts.%d.", p, e), c.ExpertFFN)
			for i := range out {
				out[i] += w * y[i]
			}
		}
		if c.SharedFFN > 0 {
			g := sigmoid64(matvec(r.w[p+"mlp.shared_expert_gate.weight"], h, 1)[0])
			y := r.swiglu(h, p+"mlp.shared_expert.", c.SharedFFN)
			for i := range out {
				out[i] += g * y[i]
			}
		}
		outs[n] = out
	}
	for n := range x {
		for i := range x[n] {
			x[n][i] += outs[n][i]
		}
	}
	var aux float64
	for e := range P {
		aux += float64(E) * float64(routed[e]) / float64(N*k) * P[e]
	}
	return c.AuxCoef*aux + c.ZLossCoef*z
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
