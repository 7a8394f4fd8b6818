package stats

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestNoncentralTCDFReducesToCentralAndNormal(t *testing.T) {
	for _, df := range []float64{1, 2, 4, 30} {
		for _, x := range []float64{-3, -0.5, 0, 1.2, 4} {
			if got, want := NoncentralTCDF(x, df, 1e-12), TCDF(x, df); math.Abs(got-want) > 1e-8 {
				t.Errorf("df %g, t %g: ncp→0 gives %.12f, central t %.12f", df, x, got, want)
			}
		}
	}
	// With df → ∞ the denominator is 1: T ~ N(ncp, 1).
	for _, c := range []struct{ x, ncp float64 }{{0, 1}, {2, 1.5}, {-1, -2}, {3.5, 2.8}} {
		if got, want := NoncentralTCDF(c.x, 1e6, c.ncp), normCDF(c.x-c.ncp); math.Abs(got-want) > 1e-4 {
			t.Errorf("df 1e6, t %g, ncp %g: %.6f, normal %.6f", c.x, c.ncp, got, want)
		}
	}
}

// The noncentral t against a simulation of its definition, (Z + ncp)/√(χ²_df/df), at few degrees of freedom,
// where the reproduction's verdicts live.
func TestNoncentralTCDFMatchesSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const samples = 200000
	for _, c := range []struct{ df, ncp float64 }{{1, 2}, {2, 3.5}, {3, -1.5}, {7, 4}} {
		ts := make([]float64, samples)
		for i := range ts {
			var v float64
			for range int(c.df) {
				z := r.NormFloat64()
				v += z * z
			}
			ts[i] = (r.NormFloat64() + c.ncp) / math.Sqrt(v/c.df)
		}
		sort.Float64s(ts)
		for _, q := range []float64{0.05, 0.25, 0.5, 0.8, 0.95} {
			x := ts[int(q*samples)]
			got := NoncentralTCDF(x, c.df, c.ncp)
			se := math.Sqrt(q * (1 - q) / samples)
			if math.Abs(got-q) > 5*se+1e-4 {
				t.Errorf("df %g ncp %g: F(%.4f) = %.5f, simulated %.3f (±%.4f)", c.df, c.ncp, x, got, q, se)
			}
		}
	}
}

func TestMDEMultiplierIsExactPower(t *testing.T) {
	for _, c := range []struct {
		n     int
		alpha float64
	}{{3, 0.05}, {3, 0.025}, {5, 0.05}, {8, 0.025}, {20, 0.05}} {
		m := MDEMultiplier(c.n, c.alpha, Power)
		df := float64(c.n - 1)
		if p := TTestPower(m, df, c.alpha); math.Abs(p-Power) > 1e-6 {
			t.Errorf("n %d α %g: power at the multiplier %.4f is %.6f, want %.2f", c.n, c.alpha, m, p, Power)
		}
	}
	// At 2 df the shortcut (t_{1−α/2} + t_{Power})·SE understates the exact MDE, more at the small α of a
	// corrected family.
	for _, c := range []struct{ alpha, lo, hi float64 }{{0.05, 0.03, 0.08}, {0.05 / 12, 0.10, 0.25}} {
		m3, s3 := MDEMultiplier(3, c.alpha, Power), TQuantile(1-c.alpha/2, 2)+TQuantile(Power, 2)
		if r := m3/s3 - 1; r < c.lo || r > c.hi {
			t.Errorf("n 3 α %.4g: exact %.4f over shortcut %.4f is %+.1f%%, want %+.0f..%+.0f%%", c.alpha, m3, s3, 100*r, 100*c.lo, 100*c.hi)
		}
	}
	// Many seeds: the normal-theory multiplier z_{0.975} + z_{0.8} = 2.8016.
	if m := MDEMultiplier(2000, 0.05, Power); math.Abs(m-2.8016) > 0.005 {
		t.Errorf("n 2000: multiplier %.4f, want 2.8016", m)
	}
	if !math.IsNaN(MDEMultiplier(1, 0.05, Power)) {
		t.Error("one seed has an MDE")
	}
}

// A simulated t-test at the predicted MDE detects it with the stated power.
func TestPredictedMDEIsDetectedAtItsPower(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, sd, alpha, trials = 4, 0.05, 0.05, 20000
	mde := PredictedMDE(n, sd, alpha, Power)
	hits := 0
	vals := make([]float64, n)
	for range trials {
		for i := range vals {
			vals[i] = mde + sd*r.NormFloat64()
		}
		if e := Mean(vals, nil, alpha); e.Lo > 0 || e.Hi < 0 {
			hits++
		}
	}
	got := float64(hits) / trials
	if se := math.Sqrt(Power * (1 - Power) / trials); math.Abs(got-Power) > 4*se {
		t.Errorf("detected %.4f of %d simulated comparisons at the MDE %.4f, want %.2f ± %.4f", got, trials, mde, Power, 4*se)
	}
}

func TestSeedsFor(t *testing.T) {
	n := SeedsFor(0.02, 0.02, 0.05, Power, 64)
	if n < 2 || PredictedMDE(n, 0.02, 0.05, Power) > 0.02 || (n > 2 && PredictedMDE(n-1, 0.02, 0.05, Power) <= 0.02) {
		t.Errorf("SeedsFor(δ = SD) = %d is not the fewest seeds reaching δ", n)
	}
	if got := SeedsFor(0.001, 1, 0.05, Power, 64); got != 0 {
		t.Errorf("an unreachable δ gives %d seeds, want 0", got)
	}
}

func TestSignFlipP(t *testing.T) {
	for _, c := range []struct {
		values []float64
		want   float64
	}{
		{[]float64{1, 2, 3}, 2.0 / 8},        // all one sign: only it and its mirror are as extreme
		{[]float64{1, 1, 1, 1, 1}, 2.0 / 32}, // the smallest p of 5 seeds is above 0.05
		{[]float64{1, -1}, 1},                // mean 0: every assignment is as extreme
		{[]float64{5, 1, 1, -1}, 8.0 / 16},   // |sum| 6: keeping 5's sign, 4 of the 8 others reach it; twice with the mirror
		{[]float64{0.5, 0.4, 0.6, 0.5, 0.45, 0.55}, 2.0 / 64},
	} {
		if got := SignFlipP(c.values); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("SignFlipP(%v) = %g, want %g", c.values, got, c.want)
		}
	}
	if !math.IsNaN(SignFlipP(nil)) || !math.IsNaN(SignFlipP([]float64{1, math.NaN()})) {
		t.Error("no values or a NaN value has a p-value")
	}
}

// TOST rejects exactly when the (1 − 2α) interval lies inside ±δ.
func TestTOSTMatchesTheIntervalInsideTheMargin(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const alpha = 0.05
	for range 500 {
		n := 2 + r.IntN(8)
		mu, sd, delta := 0.1*r.NormFloat64(), 0.01+0.1*r.Float64(), 0.02+0.2*r.Float64()
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = mu + sd*r.NormFloat64()
		}
		p := TOST(vals, delta)
		e := Mean(vals, nil, 2*alpha)
		inside := e.Lo > -delta && e.Hi < delta
		if (p <= alpha) != inside {
			t.Fatalf("values %v δ %g: p_TOST %g, 90%% interval [%g, %g]", vals, delta, p, e.Lo, e.Hi)
		}
	}
	if p := TOST([]float64{0.01, 0.01, 0.01}, 0.02); p != 0 {
		t.Errorf("identical values inside the margin: p %g, want 0", p)
	}
	if p := TOST([]float64{0.03, 0.03}, 0.02); p != 1 {
		t.Errorf("identical values outside the margin: p %g, want 1", p)
	}
}

func TestSpikeAndTailSpread(t *testing.T) {
	for _, c := range []struct {
		losses []float64
		want   float64
	}{
		{[]float64{5, 4, 3, 2}, 0},          // never rises
		{[]float64{5, 4, 4.5, 3, 3.2}, 0.5}, // the worst rise over the running minimum
		{[]float64{5, 3, 6, 2, 2.5}, 3},     // a spike that recovers still counts
		{[]float64{5, 4, math.NaN()}, math.Inf(1)},
		{nil, 0},
	} {
		if got := Spike(c.losses); got != c.want && math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Spike(%v) = %g, want %g", c.losses, got, c.want)
		}
	}
	if got := TailSpread([]float64{40, 5, 9.5, 9.8, 10}, 3); math.Abs(got-0.05) > 1e-12 {
		t.Errorf("TailSpread = %g, want 0.05", got)
	}
	if !math.IsNaN(TailSpread([]float64{1, 2}, 3)) {
		t.Error("two values have a spread of the last three")
	}
}
