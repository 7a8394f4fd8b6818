package stats

import (
	"math"
	"testing"
)

// TestTQuantileMatchesReference: t quantiles and CDF values against mpmath 1.3.0 at 30 digits (the quantile is
// mpmath.findroot of cdf(t, v) − p with cdf(t, v) = 1 − betainc(v/2, 1/2, 0, v/(v+t²), regularized=True)/2 for
// t ≥ 0), and the closed forms of df = 1 (tan(π(p − ½))) and df = 2 ((2p − 1)/√(2p(1 − p))).
func TestTQuantileMatchesReference(t *testing.T) {
	for _, tc := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.706204736174693},
		{0.975, 2, 4.3026527297494618},
		{0.975, 3, 3.1824463052837084},
		{0.975, 4, 2.7764451051977935},
		{0.975, 9, 2.262157162798205},
		{0.975, 29, 2.0452296421327039},
		{0.975, 200, 1.971896223633909},
		{0.8, 2, 1.0606601717798215},
		{0.8, 4, 0.94096457723518136},
		{0.995, 2, 9.9248432009182886},
		{0.99, 5, 3.3649299989072178},
		{0.9975, 3, 7.4533185051506806},
		{0.999, 2, 22.327124770119865},
		{0.6, 7, 0.26316686135202275},
		{0.3, 1, math.Tan(math.Pi * (0.3 - 0.5))},
		{0.9, 2, 0.8 / math.Sqrt(2*0.9*0.1)},
		{0.025, 3, -3.1824463052837084},
	} {
		got := TQuantile(tc.p, tc.df)
		if math.Abs(got-tc.want) > 1e-10*math.Abs(tc.want) {
			t.Errorf("TQuantile(%g, %g) = %.17g, want %.17g", tc.p, tc.df, got, tc.want)
		}
	}
	for _, tc := range []struct{ t, df, want float64 }{
		{1.5, 3, 0.88470806737758847},
		{-2.2, 6, 0.035051093171585939},
		{0, 5, 0.5},
		{math.Inf(1), 2, 1},
	} {
		if got := TCDF(tc.t, tc.df); math.Abs(got-tc.want) > 1e-13 {
			t.Errorf("TCDF(%g, %g) = %.17g, want %.17g", tc.t, tc.df, got, tc.want)
		}
	}
}

// TestTQuantilePanicsOutsideRange: p ∉ (0, 1) or df ≤ 0 is a caller's bug.
func TestTQuantilePanicsOutsideRange(t *testing.T) {
	for _, tc := range []struct{ p, df float64 }{{0, 3}, {1, 3}, {0.5, 0}, {math.NaN(), 2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("TQuantile(%g, %g) did not panic", tc.p, tc.df)
				}
			}()
			TQuantile(tc.p, tc.df)
		}()
	}
}
