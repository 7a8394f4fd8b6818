package gammainit

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
)

// Step-0 oracles of docs/definitions.md §6, on the tiny preset's width (d = 128, V = 4096) with a short context.
func step0Model(t *testing.T, gamma, eps float64, gate string) (*model.Model, float64) {
	t.Helper()
	p, _ := arch.LookupPreset("tiny")
	c := p.Config
	c.SeqLen, c.NormEps, c.AttnGate = 64, eps, gate
	pool := kernel.NewPool(2)
	t.Cleanup(pool.Close)
	m, err := model.New(c, 4, pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(m, recipe.Init{Rule: recipe.RuleGamma, Gamma: gamma}, 3); err != nil {
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

// TestStep0LossExcess: the final norm outputs unit RMS, so logits have variance s² ≈ d·σ_head² = d^(1−2γ),
// and the loss under uniform targets, E_t[lse − z_t] = lse − mean(z), exceeds ln V by ≈ s²/2: 1/(2d) = 0.0039
// at γ = 1 and ≈ 1/2 at γ = 0.5 (docs/definitions.md §6). The measured loss on random targets must agree with that
// expectation within its sampling error (3 standard errors of the mean over the batch's tokens).
func TestStep0LossExcess(t *testing.T) {
	lnV := math.Log(4096)
	for _, tc := range []struct {
		gamma, want, relTol float64
	}{
		{1, 1.0 / 256, 0.1},
		{0.5, 0.5, 0.2},
	} {
		m, loss := step0Model(t, tc.gamma, 1e-12, arch.GateNone)
		V := m.Config.Vocab
		lg := m.Logits()
		rows := len(lg) / V
		var expected, spread float64 // mean over rows of lse − mean(z), and of the per-row variance of z
		for r := 0; r < rows; r++ {
			z := lg[r*V : (r+1)*V]
			var mx, mean, sq float64 = math.Inf(-1), 0, 0
			for _, v := range z {
				mx = math.Max(mx, float64(v))
				mean += float64(v) / float64(V)
			}
			var se float64
			for _, v := range z {
				se += math.Exp(float64(v) - mx)
				sq += (float64(v) - mean) * (float64(v) - mean) / float64(V)
			}
			expected += (mx + math.Log(se) - mean) / float64(rows)
			spread += sq / float64(rows)
		}
		if excess := expected - lnV; math.Abs(excess-tc.want) > tc.relTol*tc.want {
			t.Errorf("γ=%g: expected loss exceeds ln V by %.5f, want %.4f ± %.0f%%", tc.gamma, excess, tc.want, 100*tc.relTol)
		}
		if se := 3 * math.Sqrt(spread/float64(rows)); math.Abs(loss-expected) > se {
			t.Errorf("γ=%g: loss %.5f on random targets, expected %.5f ± %.5f", tc.gamma, loss, expected, se)
		}
	}
}

// TestStep0AttentionUniformAndGateHalf: with γ = 1, q and k have per-channel variance 1/d, so a score
// q·k/sqrt(d_h) has standard deviation ≈ 1/d and p_ij·(i+1) = exp(s_ij − mean) ≈ 1 ± 1/d: attention is
// uniform over the visible prefix to within a few 1/d, and the gate is ≈ σ(0) = 0.5.
func TestStep0AttentionUniformAndGateHalf(t *testing.T) {
	m, _ := step0Model(t, 1, 1e-12, arch.GateElementwise)
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
