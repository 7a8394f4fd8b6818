package arch

import (
	"math"
	"testing"
)

// TestEmulatedEpsMatchesSpec checks ε_eq = ε·(d_target/d)^(2γ) against docs/definitions.md §4's 1e-5·(2048/d)² at γ = 1 and
// §7's (2048/d)¹ at γ = 0.5, and that a model at ε_eq saturates its first norm as a d_target-wide one does.
func TestEmulatedEpsMatchesSpec(t *testing.T) {
	for _, c := range []struct {
		eps, gamma float64
		d, target  int
		want       float64
	}{
		{1e-5, 1, 128, 2048, 2.56e-3}, // 1e-5 · 16²
		{1e-5, 1, 256, 2048, 6.4e-4},  // 1e-5 · 8²
		{1e-5, 1, 512, 2048, 1.6e-4},  // 1e-5 · 4²
		{1e-5, 1, 2048, 2048, 1e-5},   // the target itself: unchanged
		{1e-5, 0.5, 128, 2048, 1.6e-4},
		{1e-5, 0.5, 256, 2048, 8e-5},
		{1e-5, 0, 128, 2048, 1e-5}, // γ = 0: the embedding's scale does not depend on width
		{1e-12, 1, 128, 2048, 2.56e-10},
		{1e-5, 1, 4096, 2048, 2.5e-6}, // a target narrower than the model lowers ε
	} {
		got, err := EmulatedEps(c.eps, c.gamma, c.d, c.target)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("EmulatedEps(%g, γ=%g, d=%d, target=%d) = %g, want %g", c.eps, c.gamma, c.d, c.target, got, c.want)
		}
		// Saturation s = ε/(σ²+ε) with σ² = d^(−2γ) (docs/definitions.md §4) is the target's.
		s := func(eps float64, d int) float64 { v := math.Pow(float64(d), -2*c.gamma); return eps / (v + eps) }
		if a, b := s(got, c.d), s(c.eps, c.target); math.Abs(a-b) > 1e-12 {
			t.Errorf("γ=%g d=%d: saturation %g at ε_eq, %g at the target width", c.gamma, c.d, a, b)
		}
	}
}

// TestEmulatedEpsRefusesBadInput checks the errors for widths, ε and γ outside their ranges.
func TestEmulatedEpsRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		eps, gamma float64
		d, target  int
	}{
		{1e-5, 1, 0, 2048}, {1e-5, 1, 128, 0}, {1e-5, 1, -1, 2048}, {0, 1, 128, 2048}, {-1e-5, 1, 128, 2048},
		{math.NaN(), 1, 128, 2048}, {math.Inf(1), 1, 128, 2048}, {1e-5, math.NaN(), 128, 2048}, {1e-5, -0.5, 128, 2048}, {1e-5, 5, 128, 2048},
	} {
		if v, err := EmulatedEps(c.eps, c.gamma, c.d, c.target); err == nil {
			t.Errorf("EmulatedEps(%g, %g, %d, %d) = %g, want an error", c.eps, c.gamma, c.d, c.target, v)
		}
	}
}
