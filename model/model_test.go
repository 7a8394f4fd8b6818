package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// testConfig is a model small enough for finite differences over every parameter.
func testConfig(norm, gate string, eps float64, tied bool) arch.Config {
	return arch.Config{Vocab: 16, Dim: 8, FFN: 16, Layers: 2, Heads: 2, SeqLen: 6, NormEps: eps, Norm: norm,
		AttnGate: gate, RopeTheta: 10000, Tied: tied}
}

// switchCases covers every architecture switch of docs/definitions.md §1.
var switchCases = []struct {
	name string
	cfg  arch.Config
}{
	{"rms_eps1e-5_none", testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)},
	{"rms_eps1e-12_elementwise", testConfig(arch.NormRMS, arch.GateElementwise, 1e-12, false)},
	{"rms_eps1e-5_headwise", testConfig(arch.NormRMS, arch.GateHeadwise, 1e-5, false)},
	{"layernorm_elementwise", testConfig(arch.NormLayer, arch.GateElementwise, 1e-5, false)},
	{"rms_tied_headwise", testConfig(arch.NormRMS, arch.GateHeadwise, 1e-5, true)},
	{"moe_top2_norm_shared_aux_z", moeConfig(4, 2, true, 6, 0, 1)},
	{"qknorm_layernorm_tied", func() arch.Config {
		c := testConfig(arch.NormLayer, arch.GateElementwise, 1e-5, true)
		c.QKNorm = true
		return c
	}()},
	{"moe_top1_capacity_sparse2", moeConfig(3, 1, false, 0, 1.0, 2)},
	{"rope_linear_x4", func() arch.Config {
		c := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)
		c.RopeScaling, c.RopeFactor = arch.RopeLinear, 4
		return c
	}()},
	{"rope_llama3_headdim8", func() arch.Config { // d_h = 8: wavelengths 6.3, 63 kept, 628 blended, 6283 scaled
		c := testConfig(arch.NormRMS, arch.GateHeadwise, 1e-12, false)
		c.HeadDim, c.RopeScaling, c.RopeFactor = 8, arch.RopeLlama3, 8
		c.RopeLowFreqFactor, c.RopeHighFreqFactor, c.RopeOriginalSeqLen = 1, 4, 1000
		return c
	}()},
	{"moe_top2_router_bias", func() arch.Config { // selection bias of auxiliary-loss-free balancing
		c := moeConfig(4, 2, true, 0, 0, 1)
		c.BiasRate = 1e-3
		return c
	}()},
}

// moeConfig is testConfig with MoE blocks: E experts, top k, an optional shared expert of width shared,
// a capacity factor (0: none) and a sparse step.
func moeConfig(E, k int, normTopK bool, shared int, capacity float64, step int) arch.Config {
	c := testConfig(arch.NormRMS, arch.GateElementwise, 1e-5, false)
	c.FFNKind, c.Experts, c.TopK, c.ExpertFFN, c.SharedFFN = arch.FFNMoE, E, k, 6, shared
	c.NormTopK, c.AuxCoef, c.ZLossCoef, c.Capacity, c.SparseStep = normTopK, 0.3, 0.05, capacity, step
	return c
}

// fillRandom draws matrices with std = fan_in^(−γ), norm gains 1 + 0.1·N(0,1) and biases 0.1·N(0,1), so
// that every parameter has a non-trivial gradient.
func fillRandom(m *Model, seed uint64, gamma float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, t := range m.Specs {
		v := m.Params.Flat[t.Offset : t.Offset+t.Size()]
		for i := range v {
			switch t.Class {
			case arch.ClassNorm:
				v[i] = float32(1 + 0.1*rng.NormFloat64())
			case arch.ClassNormBias, arch.ClassQKVBias:
				v[i] = float32(0.1 * rng.NormFloat64())
			case arch.ClassRouterB:
				v[i] = float32(0.05 * rng.NormFloat64()) // large enough to change some top-k choices
			default:
				v[i] = float32(rng.NormFloat64() * math.Pow(float64(t.FanIn()), -gamma))
			}
		}
	}
}

func randomTokens(rng *rand.Rand, n, vocab int) (inputs, targets []int32) {
	inputs, targets = make([]int32, n), make([]int32, n)
	for i := range inputs {
		inputs[i], targets[i] = int32(rng.IntN(vocab)), int32(rng.IntN(vocab))
	}
	return inputs, targets
}

func newTestModel(t *testing.T, c arch.Config, batch int, pool *kernel.Pool) *Model {
	t.Helper()
	m, err := New(c, batch, pool)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// relErr is ‖a − b‖ / ‖b‖ (with a floor on ‖b‖ so that all-zero references compare absolutely).
func relErr(a []float32, b []float64) float64 {
	var num, den float64
	for i := range b {
		num += (float64(a[i]) - b[i]) * (float64(a[i]) - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num) / math.Max(math.Sqrt(den), 1e-30)
}

func TestForwardMatchesFloat64Reference(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	for _, tc := range append(switchCases[:len(switchCases):len(switchCases)], gqaCases...) {
		for _, block := range []int{4, defaultAttnBlock} {
			t.Run(fmt.Sprintf("%s/block%d", tc.name, block), func(t *testing.T) {
				c := tc.cfg
				c.SeqLen = 20
				m := newTestModel(t, c, 3, pool)
				m.attnBlock = block
				fillRandom(m, 1, 0.5)
				in, tg := randomTokens(rand.New(rand.NewPCG(2, 2)), 3*c.SeqLen, c.Vocab)
				loss, err := m.Forward(in, tg)
				if err != nil {
					t.Fatal(err)
				}
				want, wantTok, wantLogits := newRef(m).forward(in, tg)
				if e := math.Abs(loss-want) / want; e > 1e-6 {
					t.Errorf("loss %.8f, reference %.8f (rel err %.2e)", loss, want, e)
				}
				if e := relErr(m.Logits(), wantLogits); e > 1e-5 {
					t.Errorf("logits rel err %.2e", e)
				}
				if e := relErr(m.TokenLoss(), wantTok); e > 1e-5 {
					t.Errorf("token losses rel err %.2e", e)
				}
			})
		}
	}
}

// TestGradientsMatchFiniteDifferences checks every parameter's gradient, for every switch and the grouped-query
// cases (two query blocks accumulate each key/value head's dK and dV over its query heads), against central
// differences of the float64 reference forward: (L(θ+h) − L(θ−h)) / 2h with h = 1e-6.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	for _, tc := range append(switchCases[:len(switchCases):len(switchCases)], gqaCases...) {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			m := newTestModel(t, c, 2, pool)
			m.attnBlock = 4 // two query blocks at T = 6
			fillRandom(m, 3, 0.5)
			in, tg := randomTokens(rand.New(rand.NewPCG(4, 4)), 2*c.SeqLen, c.Vocab)
			if _, err := m.Forward(in, tg); err != nil {
				t.Fatal(err)
			}
			if c.Capacity > 0 {
				dropped := 0
				for _, la := range m.acts.layers {
					if la.moe != nil {
						dropped += la.moe.dropped
					}
				}
				if dropped == 0 {
					t.Fatal("capacity case dropped no assignments: it does not test dropping")
				}
			}
			m.ZeroGrads()
			m.Backward()
			ref := newRef(m)
			const h = 1e-6
			// With -short (the race-detector CI run, where the reference's two forwards per element dominate),
			// every tensor is still checked, on every third element.
			stride := 1
			if testing.Short() {
				stride = 3
			}
			var worst float64
			for _, ts := range m.Specs {
				w := ref.w[ts.Name]
				var fd []float64
				var got []float32
				for i := 0; i < len(w); i += stride {
					orig := w[i]
					w[i] = orig + h
					lp, _, _ := ref.forward(in, tg)
					w[i] = orig - h
					lm, _, _ := ref.forward(in, tg)
					w[i] = orig
					fd = append(fd, (lp-lm)/(2*h))
					// With a tied head the reference's embedding feeds the head too, so fd holds both contributions.
					got = append(got, m.Grads.Flat[ts.Offset+i])
				}
				e := relErr(got, fd)
				if e > 1e-5 {
					t.Errorf("%s: gradient rel err %.2e vs finite differences", ts.Name, e)
				}
				worst = math.Max(worst, e)
			}
			t.Logf("worst gradient rel err over %d tensors: %.2e", len(m.Specs), worst)
		})
	}
}

// TestTrainingStepAllocatesNothing: a warmed-up Forward and Backward allocates nothing, for a multi-head model
// and for a grouped-query one with q/k/v biases and QK-norm (whose per-group backward tasks and bias column
// sums run on the pool without closures).
func TestTrainingStepAllocatesNothing(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	for _, tc := range []struct {
		name string
		cfg  arch.Config
		fill func(m *Model, seed uint64, gamma float64)
	}{
		{"layernorm_headwise", testConfig(arch.NormLayer, arch.GateHeadwise, 1e-5, false), fillRandom},
		{gqaCases[2].name, gqaCases[2].cfg, fillRandomAll},
	} {
		for _, bf16 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bf16=%v", tc.name, bf16), func(t *testing.T) {
				c := tc.cfg
				c.SeqLen = 16
				m := newTestModel(t, c, 2, pool)
				m.SetPrecision(precisionOf(bf16))
				tc.fill(m, 5, 1)
				in, tg := randomTokens(rand.New(rand.NewPCG(6, 6)), 2*c.SeqLen, c.Vocab)
				step := func() {
					if _, err := m.Forward(in, tg); err != nil {
						t.Fatal(err)
					}
					m.ZeroGrads()
					m.Backward()
				}
				step()
				if a := testing.AllocsPerRun(5, step); a != 0 {
					t.Errorf("training step allocates %v times", a)
				}
			})
		}
	}
}

// TestBF16MatmulsTrackFloat32: with bf16 matmuls the loss and the gradients stay close to the float32 ones
// (bf16 keeps 8 significant bits, a relative rounding of at most 2^-9 per operand, so products and sums of
// many of them land within about 1% — a gradient direction, not an exact result, is what bf16 training
// promises); switching back to float32 gives the float32 results bit for bit.
func TestBF16MatmulsTrackFloat32(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	c := testConfig(arch.NormRMS, arch.GateHeadwise, 1e-5, false)
	m := newTestModel(t, c, 2, pool)
	fillRandom(m, 7, 0.5)
	in, tg := randomTokens(rand.New(rand.NewPCG(8, 8)), 2*c.SeqLen, c.Vocab)
	run := func(bf16 bool) (float64, []float32) {
		m.SetPrecision(precisionOf(bf16))
		loss, err := m.Forward(in, tg)
		if err != nil {
			t.Fatal(err)
		}
		m.ZeroGrads()
		m.Backward()
		return loss, append([]float32(nil), m.Grads.Flat...)
	}
	l32, g32 := run(false)
	l16, g16 := run(true)
	l32b, g32b := run(false)
	if l32b != l32 {
		t.Fatalf("float32 loss after a bf16 step: %v, want %v", l32b, l32)
	}
	for i := range g32 {
		if math.Float32bits(g32b[i]) != math.Float32bits(g32[i]) {
			t.Fatalf("float32 gradient %d after a bf16 step: %v, want %v", i, g32b[i], g32[i])
		}
	}
	if d := math.Abs(l16-l32) / l32; d > 1e-2 {
		t.Errorf("bf16 loss %v vs float32 %v: relative difference %.2e > 1e-2", l16, l32, d)
	}
	var dot, n32, n16 float64
	for i := range g32 {
		dot += float64(g32[i]) * float64(g16[i])
		n32 += float64(g32[i]) * float64(g32[i])
		n16 += float64(g16[i]) * float64(g16[i])
	}
	if cos := dot / math.Sqrt(n32*n16); !(cos > 0.999) {
		t.Errorf("bf16 gradient's cosine with the float32 one: %v, want > 0.999", cos)
	}
	t.Logf("loss f32 %.6f bf16 %.6f; gradient cosine %.6f, norm ratio %.4f", l32, l16, dot/math.Sqrt(n32*n16), math.Sqrt(n16/n32))
}

func TestForwardRejectsBadTokens(t *testing.T) {
	pool := kernel.NewPool(1)
	defer pool.Close()
	c := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)
	m := newTestModel(t, c, 1, pool)
	good := make([]int32, c.SeqLen)
	bad := make([]int32, c.SeqLen)
	bad[3] = int32(c.Vocab)
	neg := make([]int32, c.SeqLen)
	neg[0] = -1
	for _, tc := range []struct {
		name            string
		inputs, targets []int32
	}{
		{"id equal to vocab", bad, good},
		{"negative target", good, neg},
		{"not a multiple of T", good[:5], good[:5]},
		{"more sequences than the batch", append(good, good...), append(good, good...)},
		{"length mismatch", good, good[:4]},
	} {
		if _, err := m.Forward(tc.inputs, tc.targets); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestMoEWithOneExpertEqualsDense: with E = 1 and k = 1 the MoE block computes exactly the dense SwiGLU (the
// single expert gets weight 1, its rows are the tokens in order).
func TestMoEWithOneExpertEqualsDense(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	dc := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)
	mc := dc
	mc.FFNKind, mc.Experts, mc.TopK, mc.ExpertFFN, mc.SparseStep, mc.NormTopK = arch.FFNMoE, 1, 1, dc.FFN, 1, true
	dense, moe := newTestModel(t, dc, 2, pool), newTestModel(t, mc, 2, pool)
	fillRandom(dense, 8, 0.5)
	fillRandom(moe, 9, 0.5) // router weights: any values give p = 1 for the only expert
	for _, t1 := range dense.Specs {
		src := dense.Params.Flat[t1.Offset : t1.Offset+t1.Size()]
		name := strings.Replace(t1.Name, ".mlp.", ".mlp.experts.0.", 1)
		for _, t2 := range moe.Specs {
			if t2.Name == name {
				copy(moe.Params.Flat[t2.Offset:t2.Offset+t2.Size()], src)
			}
		}
	}
	in, tg := randomTokens(rand.New(rand.NewPCG(5, 5)), 2*dc.SeqLen, dc.Vocab)
	ld, _ := dense.Forward(in, tg)
	lm, _ := moe.Forward(in, tg)
	if ce := lm - moe.AuxLoss(); ce != ld {
		t.Errorf("MoE(E=1,k=1) cross-entropy %.9g, dense %.9g", ce, ld)
	}
	for i, v := range dense.Logits() {
		if moe.Logits()[i] != v {
			t.Fatalf("logit %d: MoE %g, dense %g", i, moe.Logits()[i], v)
		}
	}
}

// TestLoadBalancingLossIsAlphaWhenRoutingIsUniform: with a zero router every P_e = 1/E, so
// E·Σ_e f_e·P_e = Σ_e f_e = 1 and the auxiliary loss is exactly α.
func TestLoadBalancingLossIsAlphaWhenRoutingIsUniform(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	c := moeConfig(8, 2, true, 0, 0, 1)
	c.ZLossCoef = 0
	m := newTestModel(t, c, 2, pool)
	fillRandom(m, 10, 0.5)
	for _, l := range m.Params.Layers {
		clear(l.Router)
	}
	in, tg := randomTokens(rand.New(rand.NewPCG(6, 6)), 2*c.SeqLen, c.Vocab)
	if _, err := m.Forward(in, tg); err != nil {
		t.Fatal(err)
	}
	if got := m.AuxLoss(); math.Abs(got-c.AuxCoef) > 1e-6 {
		t.Errorf("aux loss %.7f with uniform routing, want α = %g", got, c.AuxCoef)
	}
}

// TestShortSequencesMatchReference: ForwardSeq on T < SeqLen equals the reference model built with SeqLen = T,
// and its gradients equal those of a model allocated for T.
func TestShortSequencesMatchReference(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	c := testConfig(arch.NormRMS, arch.GateHeadwise, 1e-5, false)
	c.SeqLen = 12
	m := newTestModel(t, c, 2, pool)
	fillRandom(m, 21, 0.5)
	short := c
	short.SeqLen = 5
	ms := newTestModel(t, short, 4, pool)
	copy(ms.Params.Flat, m.Params.Flat)
	in, tg := randomTokens(rand.New(rand.NewPCG(7, 7)), 4*5, c.Vocab)
	loss, err := m.ForwardSeq(in, tg, 5)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ms.Forward(in, tg)
	if loss != want {
		t.Errorf("ForwardSeq loss %.9g, model with SeqLen 5: %.9g", loss, want)
	}
	m.ZeroGrads()
	m.Backward()
	ms.ZeroGrads()
	ms.Backward()
	for i, g := range ms.Grads.Flat {
		if m.Grads.Flat[i] != g {
			t.Fatalf("gradient %d differs: %g vs %g", i, m.Grads.Flat[i], g)
		}
	}
	if _, err := m.ForwardSeq(in, tg, 13); err == nil {
		t.Error("ForwardSeq accepted T > SeqLen")
	}
}

// TestRouterBiasSteersChoiceNotWeights: with a zero router every probability is 1/E; a selection bias that
// favours experts 2 and 0 makes every token choose them, in that order, while their combine weights stay the
// probabilities (1/E each, 1/2 after norm_topk_prob), not the biased scores.
func TestRouterBiasSteersChoiceNotWeights(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	c := moeConfig(4, 2, false, 0, 0, 1)
	c.BiasRate = 1e-3
	m := newTestModel(t, c, 2, pool)
	fillRandom(m, 12, 0.5)
	for _, l := range m.Params.Layers {
		clear(l.Router)
		copy(l.RouterBias, []float32{0.2, -0.1, 0.3, 0})
	}
	in, tg := randomTokens(rand.New(rand.NewPCG(8, 8)), 2*c.SeqLen, c.Vocab)
	if _, err := m.Forward(in, tg); err != nil {
		t.Fatal(err)
	}
	for l := range m.Params.Layers {
		mo := m.acts.layers[l].moe
		for n := 0; n < m.n; n++ {
			if s := mo.sel[2*n : 2*n+2]; s[0] != 2 || s[1] != 0 {
				t.Fatalf("layer %d token %d chose %v, want [2 0]", l, n, s)
			}
			if w := mo.w[2*n : 2*n+2]; w[0] != 0.25 || w[1] != 0.25 {
				t.Fatalf("layer %d token %d weights %v, want the probabilities [0.25 0.25]", l, n, w)
			}
		}
		load, _ := m.ExpertLoad(l)
		if load[0] != 0.5 || load[2] != 0.5 {
			t.Fatalf("layer %d load %v", l, load)
		}
	}
}

// TestBalanceRouters: one step moves the bias of each overloaded expert down by the rate and of each
// underloaded expert up by it, and leaves the model alone when the rate is 0.
func TestBalanceRouters(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	c := moeConfig(4, 2, false, 0, 0, 1)
	c.BiasRate = 0.01
	m := newTestModel(t, c, 2, pool)
	fillRandom(m, 13, 0.5)
	for _, l := range m.Params.Layers {
		clear(l.Router)
		copy(l.RouterBias, []float32{0.2, -0.1, 0.3, 0}) // everything goes to experts 2 and 0
	}
	in, tg := randomTokens(rand.New(rand.NewPCG(9, 9)), 2*c.SeqLen, c.Vocab)
	if _, err := m.Forward(in, tg); err != nil {
		t.Fatal(err)
	}
	m.BalanceRouters()
	want := []float32{0.2 - 0.01, -0.1 + 0.01, 0.3 - 0.01, 0 + 0.01}
	for l, lw := range m.Params.Layers {
		for e, b := range lw.RouterBias {
			if math.Abs(float64(b-want[e])) > 1e-7 {
				t.Errorf("layer %d expert %d bias %g, want %g", l, e, b, want[e])
			}
		}
	}

	c.BiasRate = 0
	m0 := newTestModel(t, c, 2, pool)
	fillRandom(m0, 13, 0.5)
	before := append([]float32(nil), m0.Params.Flat...)
	if _, err := m0.Forward(in, tg); err != nil {
		t.Fatal(err)
	}
	m0.BalanceRouters()
	for i, v := range m0.Params.Flat {
		if v != before[i] {
			t.Fatalf("rate 0: parameter %d changed", i)
		}
	}
	if m0.Params.Layers[0].RouterBias != nil {
		t.Error("rate 0: the model has a selection bias tensor")
	}
}

// precisionOf is the matmul precision of the tests that run each case in float32 and in bfloat16.
func precisionOf(bf16 bool) kernel.Precision {
	if bf16 {
		return kernel.BF16
	}
	return kernel.F32
}
