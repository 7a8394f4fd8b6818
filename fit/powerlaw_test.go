package fit

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// synthetic returns the law truth at n log-spaced sizes from lo to hi, seeds points per size, each loss with
// Gaussian noise of standard deviation sd (PCG seed 1).
func synthetic(truth PowerLaw, lo, hi float64, n, seeds int, sd float64) []Point {
	rng := rand.New(rand.NewPCG(1, 2))
	var pts []Point
	for i := range n {
		x := lo * math.Pow(hi/lo, float64(i)/float64(n-1))
		for range seeds {
			pts = append(pts, Point{X: x, Y: truth.Eval(x) + sd*rng.NormFloat64()})
		}
	}
	return pts
}

// TestFitRecoversSyntheticLaw checks that E = 1.7, A = 400, α = 0.3 come back within 2% from noisy losses at
// N = 1e5..1e7 (8 sizes, 3 seeds, noise sd 0.002 nats), and exactly (1e-6) without noise.
func TestFitRecoversSyntheticLaw(t *testing.T) {
	truth := PowerLaw{E: 1.7, A: 400, Alpha: 0.3}
	for _, c := range []struct {
		name  string
		sd    float64
		seeds int
		tol   float64
	}{{"exact", 0, 1, 1e-6}, {"noisy", 0.002, 3, 0.02}} {
		law, err := Fit(synthetic(truth, 1e5, 1e7, 8, c.seeds, c.sd))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, p := range []struct {
			name      string
			got, want float64
		}{{"E", law.E, truth.E}, {"A", law.A, truth.A}, {"α", law.Alpha, truth.Alpha}} {
			if rel := math.Abs(p.got/p.want - 1); rel > c.tol {
				t.Errorf("%s: %s = %.5g, want %.5g (relative error %.2g > %.2g)", c.name, p.name, p.got, p.want, rel, c.tol)
			}
		}
		if law.R2 < 0.999 || len(law.Residuals) != 8*c.seeds {
			t.Errorf("%s: R² = %g, %d residuals", c.name, law.R2, len(law.Residuals))
		}
	}
}

// TestFitEffectiveSizeGain checks N_eff/N = 1.44 for a treated model whose loss is the baseline law's at 1.44·N
// (a 44% effective-size gain), and the refusal below the asymptote.
func TestFitEffectiveSizeGain(t *testing.T) {
	truth := PowerLaw{E: 1.7, A: 400, Alpha: 0.3}
	law, err := Fit(synthetic(truth, 1e5, 1e7, 6, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []float64{2e5, 1e6, 5e6} {
		neff, err := law.EffectiveSize(truth.Eval(1.44 * n))
		if err != nil {
			t.Fatal(err)
		}
		if g := neff / n; math.Abs(g-1.44) > 1e-6 {
			t.Errorf("N = %g: N_eff/N = %.8f, want 1.44", n, g)
		}
	}
	if n, err := law.EffectiveSize(law.E - 0.01); !errors.Is(err, ErrBeyondAsymptote) || !math.IsInf(n, 1) {
		t.Errorf("L < E: %g, %v", n, err)
	}
}

// TestFitRefusals checks that Fit refuses data that do not determine the law: three sizes, flat losses,
// rising losses, losses linear in log N (best α at the search bound), and a law whose E is below 0 (docs/definitions.md §7:
// E ≥ 0; also wrapping ErrNegativeE).
func TestFitRefusals(t *testing.T) {
	truth := PowerLaw{E: 1.7, A: 400, Alpha: 0.3}
	flat := synthetic(PowerLaw{E: 3, A: 0, Alpha: 0.3}, 1e5, 1e7, 5, 2, 0)
	rising := synthetic(PowerLaw{E: 3, A: -50, Alpha: 0.3}, 1e5, 1e7, 5, 1, 0)
	var loglin []Point
	for i := range 6 {
		x := 1e5 * math.Pow(10, float64(i)/2.5)
		loglin = append(loglin, Point{X: x, Y: 6 - 0.2*math.Log(x)})
	}
	for _, c := range []struct {
		name string
		pts  []Point
		want string
	}{
		{"three sizes", synthetic(truth, 1e5, 1e7, 3, 4, 0.001), "3 distinct sizes, need at least 4"},
		{"flat", flat, "does not decrease"},
		{"rising", rising, "does not decrease"},
		{"log-linear", loglin, "at the bound"},
		{"negative E", synthetic(PowerLaw{E: -1, A: 60, Alpha: 0.2}, 1e5, 1e7, 5, 2, 0), "E ≥ 0"},
	} {
		_, err := Fit(c.pts)
		if !errors.Is(err, ErrUndetermined) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrUndetermined with %q", c.name, err, c.want)
		}
		if c.name == "negative E" && !errors.Is(err, ErrNegativeE) {
			t.Errorf("negative E: error %v does not wrap ErrNegativeE", err)
		}
	}
}

// TestFitBootstrapCoversTruth checks that the percentile interval of α from resampling seeds covers the true
// value and narrows with less noise, and that resampling is reproducible for a fixed seed.
func TestFitBootstrapCoversTruth(t *testing.T) {
	truth := PowerLaw{E: 1.7, A: 400, Alpha: 0.3}
	width := func(sd float64) (Interval, Bootstrapped) {
		pts := synthetic(truth, 1e5, 1e7, 6, 4, sd)
		var groups [][]float64
		var xs []float64
		for i := 0; i < len(pts); i += 4 {
			xs = append(xs, pts[i].X)
			groups = append(groups, []float64{pts[i].Y, pts[i+1].Y, pts[i+2].Y, pts[i+3].Y})
		}
		b, err := Bootstrap(groups, 300, 9, Level95, func(means []float64) ([]float64, error) {
			p := make([]Point, len(means))
			for i, m := range means {
				p[i] = Point{X: xs[i], Y: m}
			}
			law, err := Fit(p)
			return []float64{law.Alpha}, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return b.Intervals[0], b
	}
	wide, b1 := width(0.01)
	narrow, _ := width(0.001)
	if !(wide.Lo < truth.Alpha && truth.Alpha < wide.Hi) || !(narrow.Lo < truth.Alpha && truth.Alpha < narrow.Hi) {
		t.Errorf("intervals %+v, %+v do not cover α = 0.3", wide, narrow)
	}
	if !(narrow.Hi-narrow.Lo < wide.Hi-wide.Lo) {
		t.Errorf("less noise, no narrower interval: %+v vs %+v", narrow, wide)
	}
	again, b2 := width(0.01)
	if again != wide || b1.Failed != b2.Failed {
		t.Errorf("not reproducible: %+v vs %+v", again, wide)
	}
}

// TestFitQuantile checks type-7 interpolation and the handling of infinite order statistics.
func TestFitQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {0.25, 2}, {0.975, 4.9}, {1, 5}} {
		if got := Quantile(s, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%g) = %g, want %g", c.q, got, c.want)
		}
	}
	if got := Quantile([]float64{1, 2, math.Inf(1)}, 0.9); !math.IsInf(got, 1) {
		t.Errorf("quantile next to +Inf: %g", got)
	}
}
