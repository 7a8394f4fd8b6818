package gammainit

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

// Step-0 oracles of SPEC §6, on the tiny preset's width (d = 128, V = 4096) with a short context.
func step0Model(t *testing.T, gamma, eps float64, gate string) (*model.Model, float64) {
	t.Helper()
	p, _ := model.LookupPreset("tiny")
	c := p.Config
	c.SeqLen, c.NormEps, c.AttnGate = 64, eps, gate
	pool := kernel.NewPool(2)
	t.Cleanup(pool.Close)
	m, err := model.New(c, 4, pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(m, Recipe{Rule: RuleGamma, Gamma: gamma}, 3); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	in, tg := make([]int32, 4*c.SeqLen), make([]int32, 4*c.SeqLen)
	for i := range in {
		in[i], tg[i] = int32(rng.IntN(c.Vocab)), int32(rng.IntN(c.Vocab))
	}
	loss, err := m.Forward(in, tg)
	if err != nil {
		t.Fatal(err)
	}
	return m, loss
}

// TestStep0LossExcess: logits have variance ≈ d^(1−2γ) (the final norm outputs unit RMS), so the loss exceeds
// ln V by ≈ var/2: 1/(2d) = 0.0039 at γ = 1 and ≈ 1/2 at γ = 0.5.
func TestStep0LossExcess(t *testing.T) {
	lnV := math.Log(4096)
	for _, tc := range []struct {
		gamma, want, tol float64
	}{
		{1, 1.0 / 256, 0.002},
		{0.5, 0.5, 0.1},
	} {
		_, loss := step0Model(t, tc.gamma, 1e-12, model.GateNone)
		if excess := loss - lnV; math.Abs(excess-tc.want) > tc.tol {
			t.Errorf("γ=%g: loss %.5f exceeds ln V by %.5f, want %.4f ± %.4f", tc.gamma, loss, excess, tc.want, tc.tol)
		}
	}
}

// TestStep0AttentionUniformAndGateHalf: with γ = 1, q and k have per-channel variance 1/d, so a score
// q·k/sqrt(d_h) has standard deviation ≈ 1/d and p_ij·(i+1) = exp(s_ij − mean) ≈ 1 ± 1/d: attention is
// uniform over the visible prefix to within a few 1/d, and the gate is ≈ σ(0) = 0.5.
func TestStep0AttentionUniformAndGateHalf(t *testing.T) {
	m, _ := step0Model(t, 1, 1e-12, model.GateElementwise)
	T := m.Config.SeqLen
	for l := 0; l < m.Config.Layers; l++ {
		att := m.AttentionProbs(l)
		var worst, sum float64
		var count int
		for r := 0; r < len(att)/T; r++ {
			i := r % T
			for j := 0; j <= i; j++ {
				dev := math.Abs(float64(att[r*T+j])*float64(i+1) - 1)
				worst, sum, count = math.Max(worst, dev), sum+dev, count+1
			}
		}
		d := float64(m.Config.Dim)
		if mean := sum / float64(count); mean > 2/d || worst > 8/d {
			t.Errorf("layer %d: attention deviates from uniform by %.4f on average and %.4f at worst (relative), want < 2/d and 8/d", l, mean, worst)
		}
		var gsum float64
		g := m.GateValues(l, nil)
		for _, v := range g {
			gsum += float64(v)
		}
		if mean := gsum / float64(len(g)); math.Abs(mean-0.5) > 0.001 {
			t.Errorf("layer %d: mean gate %.4f, want 0.5", l, mean)
		}
	}
}
