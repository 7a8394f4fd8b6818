package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestMeanOfFourValues: mean, SD, SE, df, t, interval, p-value and MDE of 1, 2, 3, 4 at α = 0.05, against
// mpmath (p = 2·(1 − F_3(2.5/SE)); MDE = (t_{0.975,3} + t_{0.8,3})·SE).
func TestMeanOfFourValues(t *testing.T) {
	e := Mean([]float64{1, 2, 3, 4}, []int{0, 1, 2, 3}, 0.05)
	se := math.Sqrt(5.0/3) / 2
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"mean", e.Mean, 2.5}, {"sd", e.SD, math.Sqrt(5.0 / 3)}, {"se", e.SE, se},
		{"t", e.T, 3.1824463052837084}, {"lo", e.Lo, 2.5 - 3.1824463052837084*se}, {"hi", e.Hi, 2.5 + 3.1824463052837084*se},
		{"p", e.P, 0.030466291662170991}, {"mde", e.MDE, MDEMultiplier(4, 0.05, Power) * se}, // the multiplier: power_test.go
	} {
		if math.Abs(c.got-c.want) > 1e-10*math.Abs(c.want) {
			t.Errorf("%s = %.15g, want %.15g", c.name, c.got, c.want)
		}
	}
	if e.DF != 3 || e.N != 4 || e.Sign() != 1 {
		t.Errorf("df %d, n %d, sign %d; want 3, 4, +1", e.DF, e.N, e.Sign())
	}
}

// TestMeanOfOneSeedHasNoNoise: one value gives a mean and nothing else, written as null in JSON; no value gives
// nothing.
func TestMeanOfOneSeedHasNoNoise(t *testing.T) {
	e := Mean([]float64{0.3}, []int{7}, 0.05)
	if e.Mean != 0.3 || !math.IsNaN(e.SE) || !math.IsNaN(e.MDE) || e.Sign() != 0 || e.DF != 0 {
		t.Errorf("one seed: %+v", e)
	}
	b, err := json.Marshal(e)
	if err != nil || !strings.Contains(string(b), `"se":null`) || !strings.Contains(string(b), `"mean":0.3`) {
		t.Errorf("JSON %s, %v: want se null and the mean", b, err)
	}
	if e := Mean(nil, nil, 0.05); !math.IsNaN(e.Mean) || e.Sign() != 0 {
		t.Errorf("no value: %+v", e)
	}
}

// TestIntervalCoversAtItsLevel: on normal values with 3 seeds (df = 2), the 95% interval covers the true mean
// in 95% of 10000 draws (binomial SE 0.22%), the p-value falls below 0.05 in 5% of null draws, and the MDE is
// what it says: a true mean of MDE is detected in about 80% of draws (the approximation with the SE taken as
// known; it is conservative at df = 2 by a few points).
func TestIntervalCoversAtItsLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const reps = 10000
	cover, reject := 0, 0
	xs := make([]float64, 3)
	for range reps {
		for i := range xs {
			xs[i] = 1 + 0.5*rng.NormFloat64()
		}
		if e := Mean(xs, nil, 0.05); e.Lo <= 1 && 1 <= e.Hi {
			cover++
		}
		for i := range xs {
			xs[i] -= 1
		}
		if Mean(xs, nil, 0.05).P < 0.05 {
			reject++
		}
	}
	if c := float64(cover) / reps; math.Abs(c-0.95) > 0.007 {
		t.Errorf("coverage %.4f, want 0.95", c)
	}
	if r := float64(reject) / reps; math.Abs(r-0.05) > 0.007 {
		t.Errorf("null rejection rate %.4f, want 0.05", r)
	}
	// Power at the MDE of the noise's true SE with 6 seeds: the SE is taken as known in the MDE, so the
	// realised power with an estimated SE sits a little below 80%.
	const n, sd = 6, 1.0
	mde := (TQuantile(0.975, n-1) + TQuantile(Power, n-1)) * sd / math.Sqrt(n)
	ys := make([]float64, n)
	hit := 0
	for range reps {
		for i := range ys {
			ys[i] = mde + sd*rng.NormFloat64()
		}
		if Mean(ys, nil, 0.05).Lo > 0 {
			hit++
		}
	}
	if p := float64(hit) / reps; p < 0.70 || p > 0.82 {
		t.Errorf("power at the MDE %.3f, want about 0.8 (0.70-0.82)", p)
	}
	t.Logf("coverage %.4f, null rejection %.4f, power at the MDE (6 seeds) %.3f", float64(cover)/reps, float64(reject)/reps, float64(hit)/reps)
}

// TestPairedMatchesSeeds: differences are taken seed by seed; a seed missing from one arm or with a NaN
// value is listed and enters nothing.
func TestPairedMatchesSeeds(t *testing.T) {
	d := Paired(BySeed{2: 5, 0: 3, 1: 4, 9: 1, 4: math.NaN()}, BySeed{0: 1, 1: 1, 2: 2, 3: 7, 4: 1})
	if !slices.Equal(d.Seeds, []int{0, 1, 2}) || !slices.Equal(d.Values, []float64{2, 3, 3}) || !slices.Equal(d.Missing, []int{3, 4, 9}) {
		t.Errorf("%+v", d)
	}
}

// TestHolmAndBonferroni: adjusted p-values on a textbook example; NaN is never rejected.
func TestHolmAndBonferroni(t *testing.T) {
	p := []float64{0.01, 0.04, 0.03, 0.005}
	want := []float64{0.03, 0.06, 0.06, 0.02}
	got := Holm(p)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("Holm %v = %v, want %v", p, got, want)
			break
		}
	}
	if b := Bonferroni(p); !slices.Equal(b, []float64{0.04, 0.16, 0.12, 0.02}) {
		t.Errorf("Bonferroni %v = %v", p, b)
	}
	if h := Holm([]float64{math.NaN(), 0.001}); h[0] != 1 || h[1] != 0.002 {
		t.Errorf("Holm with NaN: %v", h)
	}
}

// TestSlope: the least-squares slope of an exact line, and NaN without two distinct x.
func TestSlope(t *testing.T) {
	if s := Slope([]float64{1, 2, 4}, []float64{3, 5, 9}); math.Abs(s-2) > 1e-15 {
		t.Errorf("slope %g, want 2", s)
	}
	if s := Slope([]float64{1, 1}, []float64{3, 5}); !math.IsNaN(s) {
		t.Errorf("slope %g, want NaN", s)
	}
}
