package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// refModel is a float64 twin of the model written as plainly as possible from docs/definitions.md §1, one token and one head at
// a time. It is the specification the float32 engine is tested against: its forward is differentiated by central
// finite differences, and the engine's loss, logits and gradients must match.
type refModel struct {
	c arch.Config
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
	if r.c.Norm == arch.NormLayer {
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
	for h := 0; h < len(x)/dh; h++ {
		v := x[h*dh : (h+1)*dh]
		for i := 0; i < dh/2; i++ {
			ang := float64(t) * r.ropeFreq(i)
			a, b := v[i], v[i+dh/2]
			v[i] = a*math.Cos(ang) - b*math.Sin(ang)
			v[i+dh/2] = b*math.Cos(ang) + a*math.Sin(ang)
		}
	}
}

// ropeFreq is frequency i of RoPE in float64, with rope_scaling applied as Meta's Llama 3.1 reference
// (apply_scaling) and position interpolation define it: keep frequencies of short wavelength, divide those of
// long wavelength by the factor, blend linearly in 1/wavelength between them.
func (r *refModel) ropeFreq(i int) float64 {
	dh := r.c.HeadSize()
	f := math.Pow(r.c.RopeTheta, -float64(2*i)/float64(dh))
	s := r.c.RopeFactor
	switch r.c.RopeScaling {
	case arch.RopeLinear:
		return f / s
	case arch.RopeLlama3:
		old := float64(r.c.RopeOriginalSeqLen)
		wave := 2 * math.Pi / f
		switch {
		case wave < old/r.c.RopeHighFreqFactor:
			return f
		case wave > old/r.c.RopeLowFreqFactor:
			return f / s
		}
		a := (old/wave - r.c.RopeLowFreqFactor) / (r.c.RopeHighFreqFactor - r.c.RopeLowFreqFactor)
		return (1-a)*f/s + a*f
	}
	return f
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// proj returns W·h + b for the projection whose tensors start with name (b: name.bias when present).
func (r *refModel) proj(name string, h []float64, rows int) []float64 {
	y := matvec(r.w[name+".weight"], h, rows)
	if b, ok := r.w[name+".bias"]; ok {
		for i := range y {
			y[i] += b[i]
		}
	}
	return y
}

// forward returns the mean loss, the per-token losses and the logits [n, V] of sequences inputs [b, T].
// Attention is grouped-query when KV < H: query head h reads key/value head h / (H/KV).
func (r *refModel) forward(inputs, targets []int32) (float64, []float64, []float64) {
	c := r.c
	T, d, H, dh, a, V := c.SeqLen, c.Dim, c.Heads, c.HeadSize(), c.AttnDim(), c.Vocab
	KV := c.KVHeadCount()
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
			q[n] = r.proj(p+"self_attn.q_proj", h, a)
			k[n] = r.proj(p+"self_attn.k_proj", h, KV*dh)
			v[n] = r.proj(p+"self_attn.v_proj", h, KV*dh)
			if c.QKNorm {
				for h := 0; h < H; h++ {
					copy(q[n][h*dh:], r.rmsHead(q[n][h*dh:(h+1)*dh], r.w[p+"self_attn.q_norm.weight"]))
				}
				for h := 0; h < KV; h++ {
					copy(k[n][h*dh:], r.rmsHead(k[n][h*dh:(h+1)*dh], r.w[p+"self_attn.k_norm.weight"]))
				}
			}
			r.rope(q[n], n%T)
			r.rope(k[n], n%T)
			if c.AttnGate != arch.GateNone {
				g[n] = matvec(r.w[p+"self_attn.g_proj.weight"], h, c.GateRows())
			}
		}
		for n := range x {
			s0 := n - n%T // first row of this sequence
			y := make([]float64, a)
			for h := 0; h < H; h++ {
				g := h / (H / KV) // the key/value head of query head h
				scores := make([]float64, n-s0+1)
				mx := math.Inf(-1)
				for j := range scores {
					for e := 0; e < dh; e++ {
						scores[j] += q[n][h*dh+e] * k[s0+j][g*dh+e]
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
						y[h*dh+e] += pj / z * v[s0+j][g*dh+e]
					}
				}
			}
			for e := range y {
				switch c.AttnGate {
				case arch.GateElementwise:
					y[e] *= sigmoid64(g[n][e])
				case arch.GateHeadwise:
					y[e] *= sigmoid64(g[n][e/dh])
				}
			}
			o := matvec(r.w[p+"self_attn.o_proj.weight"], y, d)
			for e := range o {
				x[n][e] += o[e]
			}
		}
		if c.IsMoE(l) {
			auxLoss += r.moe(x, p, l) / float64(c.NumMoE())
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
	counted := 0
	for _, t := range targets {
		if t != IgnoreTarget {
			counted++
		}
	}
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
		if targets[n] != IgnoreTarget {
			losses[n] = mx + math.Log(s) - z[targets[n]]
			loss += losses[n] / float64(counted)
		}
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
		score := append([]float64(nil), probs...) // the choice adds the selection bias; the weights do not
		if b, ok := r.w[p+"mlp.gate.e_score_correction_bias"]; ok {
			for e := range score {
				score[e] += b[e]
			}
		}
		var sel []int
		var sum float64
		for j := 0; j < k; j++ {
			best := -1
			for e := range probs {
				if !containsInt(sel, e) && (best < 0 || score[e] > score[best]) {
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

// gqaCases cover grouped-query attention (KV < H key/value heads, down to one: multi-query attention) and the
// q/k/v biases of Qwen2, alone and combined with the other switches. They run through the same checks as
// switchCases: forward against the float64 reference, every gradient against finite differences, the
// allocation-free training step, the KV-cache decoder and the save/load round trip.
var gqaCases = []struct {
	name string
	cfg  arch.Config
}{
	{"gqa_h4_kv2_qkvbias", func() arch.Config {
		c := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)
		c.Heads, c.KVHeads, c.HeadDim, c.QKVBias = 4, 2, 4, true
		return c
	}()},
	{"mqa_h4_kv1_elementwise", func() arch.Config { // d_h = d/H = 2
		c := testConfig(arch.NormRMS, arch.GateElementwise, 1e-12, false)
		c.Heads, c.KVHeads = 4, 1
		return c
	}()},
	{"gqa_h4_kv2_qknorm_qkvbias_headwise_layernorm_tied", func() arch.Config {
		c := testConfig(arch.NormLayer, arch.GateHeadwise, 1e-5, true)
		c.Heads, c.KVHeads, c.HeadDim, c.QKNorm, c.QKVBias = 4, 2, 4, true, true
		return c
	}()},
	{"mha_qkvbias_elementwise", func() arch.Config {
		c := testConfig(arch.NormRMS, arch.GateElementwise, 1e-5, false)
		c.QKVBias = true
		return c
	}()},
	{"moe_top2_shared_kv1_qkvbias", func() arch.Config { // the Qwen2-MoE attention: GQA with q/k/v biases
		c := moeConfig(4, 2, true, 6, 0, 1)
		c.KVHeads, c.QKVBias = 1, true
		return c
	}()},
}

// fillRandomAll is fillRandom for every tensor class: fillRandom (model_test.go) draws by fan-in, which a bias
// does not have, so the q/k/v biases are then redrawn as 0.1·N(0,1), like the LayerNorm biases, from a stream of
// their own (the other tensors keep fillRandom's values).
func fillRandomAll(m *Model, seed uint64, gamma float64) {
	fillRandom(m, seed, gamma)
	rng := rand.New(rand.NewPCG(seed, 2))
	for _, t := range m.Specs {
		if t.Class != arch.ClassQKVBias {
			continue
		}
		for i := t.Offset; i < t.Offset+t.Size(); i++ {
			m.Params.Flat[i] = float32(0.1 * rng.NormFloat64())
		}
	}
}

// TestGQAEqualsMultiHeadWithRepeatedKV: a grouped-query model computes what a multi-head model computes when
// the latter's k and v projections (and biases) repeat each key/value head for the H/KV query heads that read
// it (Hugging Face's repeat_kv), and the grouped model's k/v gradients are the sums of the multi-head model's
// over each group.
func TestGQAEqualsMultiHeadWithRepeatedKV(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	gc := gqaCases[0].cfg // H = 4, KV = 2, d_h = 4, q/k/v biases
	mc := gc
	mc.KVHeads = 0
	g, mh := newTestModel(t, gc, 2, pool), newTestModel(t, mc, 2, pool)
	fillRandomAll(g, 12, 0.5)
	H, dh, rep := gc.Heads, gc.HeadSize(), gc.Heads/gc.KVHeads
	byName := func(m *Model, w Weights, name string) []float32 {
		for _, ts := range m.Specs {
			if ts.Name == name {
				return w.Flat[ts.Offset : ts.Offset+ts.Size()]
			}
		}
		t.Fatalf("no tensor %s", name)
		return nil
	}
	for _, ts := range g.Specs {
		src, dst := byName(g, g.Params, ts.Name), byName(mh, mh.Params, ts.Name)
		if len(src) == len(dst) {
			copy(dst, src)
			continue
		}
		width := len(src) / gc.KVDim() // d for a k/v weight, 1 for a k/v bias
		for h := 0; h < H; h++ {
			copy(dst[h*dh*width:(h+1)*dh*width], src[h/rep*dh*width:(h/rep+1)*dh*width])
		}
	}
	in, tg := randomTokens(rand.New(rand.NewPCG(13, 13)), 2*gc.SeqLen, gc.Vocab)
	lg, err := g.Forward(in, tg)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := mh.Forward(in, tg)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(lg-lm) > 1e-6*lm {
		t.Errorf("loss: grouped %.9g, multi-head with repeated k/v %.9g", lg, lm)
	}
	g.ZeroGrads()
	g.Backward()
	mh.ZeroGrads()
	mh.Backward()
	for _, ts := range g.Specs {
		got, mg := byName(g, g.Grads, ts.Name), byName(mh, mh.Grads, ts.Name)
		want := make([]float64, len(got))
		if len(got) == len(mg) {
			for i, v := range mg {
				want[i] = float64(v)
			}
		} else {
			width := len(got) / gc.KVDim()
			for h := 0; h < H; h++ {
				for i := 0; i < dh*width; i++ {
					want[h/rep*dh*width+i] += float64(mg[h*dh*width+i])
				}
			}
		}
		if e := relErr(got, want); e > 1e-5 {
			t.Errorf("%s: gradient rel err %.2e vs the multi-head model's (summed over each group)", ts.Name, e)
		}
	}
}

// TestGQATaps: the diagnostics' views of a grouped-query model with q/k/v biases read the right columns and
// heads: block 0's gate values equal σ(W_gate·Norm(x0)) computed by the float64 reference (the gate columns
// follow the H·d_h + 2·KV·d_h q, k, v columns), and there is one causal attention matrix per query head whose
// rows sum to 1.
func TestGQATaps(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	for _, tc := range gqaCases[1:3] { // elementwise (KV = 1) and headwise (KV = 2, q/k/v biases) gates
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			m := newTestModel(t, c, 2, pool)
			fillRandomAll(m, 14, 0.5)
			in, tg := randomTokens(rand.New(rand.NewPCG(15, 15)), 2*c.SeqLen, c.Vocab)
			if _, err := m.Forward(in, tg); err != nil {
				t.Fatal(err)
			}
			r, d, G := newRef(m), c.Dim, c.GateRows()
			got := m.GateValues(0, nil)
			if len(got) != len(in)*G {
				t.Fatalf("%d gate values, want %d", len(got), len(in)*G)
			}
			for n, tok := range in {
				x := r.w["model.embed_tokens.weight"][int(tok)*d : int(tok+1)*d]
				z := matvec(r.w["model.layers.0.self_attn.g_proj.weight"], r.norm(x, "model.layers.0.input_layernorm"), G)
				for j, v := range z {
					if e := math.Abs(float64(got[n*G+j]) - sigmoid64(v)); e > 1e-6 {
						t.Fatalf("row %d gate %d: %g, reference %g", n, j, got[n*G+j], sigmoid64(v))
					}
				}
			}
			T := m.SeqLen()
			att := m.AttentionProbs(1)
			if len(att) != 2*c.Heads*T*T {
				t.Fatalf("%d attention probabilities, want b·H·T·T = %d", len(att), 2*c.Heads*T*T)
			}
			for row := 0; row < 2*c.Heads*T; row++ {
				var s float64
				for j, p := range att[row*T : (row+1)*T] {
					if j > row%T && p != 0 {
						t.Fatalf("row %d: weight %g on future key %d", row, p, j)
					}
					s += float64(p)
				}
				if math.Abs(s-1) > 1e-5 {
					t.Fatalf("row %d sums to %g", row, s)
				}
			}
		})
	}
}
