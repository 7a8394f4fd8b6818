package diag

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
)

func initModel(t *testing.T, c arch.Config, gamma float64, batch int) *model.Model {
	t.Helper()
	pool := kernel.NewPool(2)
	t.Cleanup(pool.Close)
	m, err := model.New(c, batch, pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gammainit.Apply(m, recipe.Init{Rule: recipe.RuleGamma, Gamma: gamma}, 1); err != nil {
		t.Fatal(err)
	}
	return m
}

func randomToks(n, vocab int) []int32 {
	rng := rand.New(rand.NewPCG(3, 3))
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(rng.IntN(vocab))
	}
	return t
}

func widthConfig(d int, gate string) arch.Config {
	return arch.Config{Vocab: 256, Dim: d, FFN: arch.DefaultFFN(d), Layers: 2, Heads: 4, SeqLen: 64,
		NormEps: 1e-5, Norm: arch.NormRMS, AttnGate: gate, RopeTheta: 10000}
}

// TestNormSaturationAtInit is docs/definitions.md §4's table: with γ = 1 and ε = 1e-5 the first norm sees the embedding,
// mean(x²) = d^(−2), so r = sqrt(d^(−2)/(d^(−2) + ε)): 0.93 at d = 128, 0.78 at d = 256 (within 2%).
func TestNormSaturationAtInit(t *testing.T) {
	for _, tc := range []struct {
		d    int
		want float64
	}{{128, 0.93}, {256, 0.78}} {
		m := initModel(t, widthConfig(tc.d, arch.GateNone), 1, 4)
		st, err := Activations(m, randomToks(4*64+1, 256), 4, 64)
		if err != nil {
			t.Fatal(err)
		}
		r := st.Layers[0].AttnNorm.OutputRMS
		if math.Abs(r/tc.want-1) > 0.02 {
			t.Errorf("d=%d: output RMS of the first norm %.4f, docs/definitions.md says %.2f", tc.d, r, tc.want)
		}
		// Per token s + r² = 1; the means over tokens differ from that only by the spread of r (Jensen).
		if s := st.Layers[0].AttnNorm.Saturation; math.Abs(s+r*r-1) > 1e-3 {
			t.Errorf("d=%d: mean s + (mean r)² = %.6f, want ≈ 1", tc.d, s+r*r)
		}
	}
}

// TestUniformAttentionAndGateAtInit: at γ = 1 attention is uniform over the prefix, so A[i, 0] = 1/(i+1) and
// the first-token mass is the mean over i ≥ 1 of 1/(i+1); no head is a sink; the gate mean is 0.5 ± 0.01. With
// grouped-query attention and q/k/v biases (0 at init) the same holds for every query head.
func TestUniformAttentionAndGateAtInit(t *testing.T) {
	gqa := widthConfig(128, arch.GateElementwise)
	gqa.KVHeads, gqa.QKVBias = 2, true
	for _, c := range []arch.Config{widthConfig(128, arch.GateHeadwise), gqa} {
		m := initModel(t, c, 1, 4)
		st, err := Activations(m, randomToks(4*64+1, 256), 4, 64)
		if err != nil {
			t.Fatal(err)
		}
		var want float64
		for i := 1; i < 64; i++ {
			want += 1 / float64(i+1) / 63
		}
		if math.Abs(st.FirstTokenMass-want) > 0.002 {
			t.Errorf("%d kv heads: first-token mass %.4f, uniform attention gives %.4f", c.KVHeadCount(), st.FirstTokenMass, want)
		}
		if st.SinkRate != 0 {
			t.Errorf("%d kv heads: sink rate %.1f%% at init, want 0", c.KVHeadCount(), st.SinkRate)
		}
		for _, l := range st.Layers {
			if len(l.GateMean) != c.Heads || len(l.SinkAlpha) != c.Heads {
				t.Errorf("%d kv heads: layer %d has %d gate means and %d sink α, want one per query head", c.KVHeadCount(), l.Layer, len(l.GateMean), len(l.SinkAlpha))
			}
			for h, g := range l.GateMean {
				if math.Abs(g-0.5) > 0.01 {
					t.Errorf("%d kv heads: layer %d head %d: gate mean %.4f, want 0.5 ± 0.01", c.KVHeadCount(), l.Layer, h, g)
				}
			}
		}
	}
}

// TestFirstTokenMassOnKnownPatterns: head 0 always attends to token 0, head 1 to the diagonal, head 2
// uniformly: masses 1, 0 and mean 1/(i+1); α 1, 1/T and mean over all i of 1/(i+1); one sink out of three.
func TestFirstTokenMassOnKnownPatterns(t *testing.T) {
	const H, T = 3, 8
	att := make([]float32, 2*H*T*T)
	for b := 0; b < 2; b++ {
		for h := 0; h < H; h++ {
			for i := 0; i < T; i++ {
				row := att[((b*H+h)*T+i)*T:]
				switch h {
				case 0:
					row[0] = 1
				case 1:
					row[i] = 1
				case 2:
					for j := 0; j <= i; j++ {
						row[j] = 1 / float32(i+1)
					}
				}
			}
		}
	}
	mass, alpha := firstTokenMass(att, H, T)
	var uMass, uAlpha float64
	for i := 0; i < T; i++ {
		uAlpha += 1 / float64(i+1) / T
		if i > 0 {
			uMass += 1 / float64(i+1) / (T - 1)
		}
	}
	for _, tc := range []struct{ got, want float64 }{
		{mass[0], 1}, {mass[1], 0}, {mass[2], uMass}, {alpha[0], 1}, {alpha[1], 1.0 / T}, {alpha[2], uAlpha},
	} {
		if math.Abs(tc.got-tc.want) > 1e-6 {
			t.Errorf("got %.6f, want %.6f", tc.got, tc.want)
		}
	}
}

// TestResidualRatioScalesAsWidthToOneMinusGamma checks the coordinate-check exponent of the attention
// sub-layer at init (no gate, H fixed): RMS(Attn(Norm(x)))/RMS(x) ∝ d^(1−γ), fitted over widths 64..512.
func TestResidualRatioScalesAsWidthToOneMinusGamma(t *testing.T) {
	for _, gamma := range []float64{0.5, 0.75, 1} {
		var xs, ys []float64
		for _, d := range []int{64, 128, 256, 512} {
			c := widthConfig(d, arch.GateNone)
			c.NormEps = 1e-12 // keep ε from shrinking the norm's output at large width (that is the other effect of docs/definitions.md §4)
			m := initModel(t, c, gamma, 4)
			st, err := Activations(m, randomToks(4*64+1, 256), 4, 64)
			if err != nil {
				t.Fatal(err)
			}
			xs, ys = append(xs, math.Log(float64(d))), append(ys, math.Log(st.Layers[0].AttnResidualRatio))
		}
		slope := Slope(xs, ys)
		if math.Abs(slope-(1-gamma)) > 0.1 {
			t.Errorf("γ=%g: attention residual ratio scales as d^%.3f, docs/definitions.md §4 predicts d^%.2f", gamma, slope, 1-gamma)
		}
	}
}
