package arch

import "testing"

// TestEpsFixedIsBelowTheLine: docs/definitions.md §1 "Fixed ε" — the fix (1e-12) and anything under 1e-8 is
// fixed; the default (1e-5), the line itself and a width-emulated ε (1e-5·(2048/128)² at γ = 1) are not.
func TestEpsFixedIsBelowTheLine(t *testing.T) {
	for _, tc := range []struct {
		eps   float64
		fixed bool
	}{
		{1e-12, true}, {9.99e-9, true}, {1e-8, false}, {1e-5, false}, {1e-5 * 16 * 16, false},
	} {
		if got := (Config{NormEps: tc.eps}).EpsFixed(); got != tc.fixed {
			t.Errorf("ε = %g: EpsFixed %v, want %v", tc.eps, got, tc.fixed)
		}
	}
}
