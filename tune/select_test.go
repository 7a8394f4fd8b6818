package tune

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// world is a synthetic loss surface with a known optimum: L(lr, steps) = 3 + c·(log2(lr/opt))² + 20/steps,
// plus Gaussian noise of sd noise per trial; past diverge·opt the run diverges (NaN). The optimum moves with
// the budget as drift·log2(steps/100) octaves, as real optima drift lower with longer training.
type world struct {
	opt, c, noise, diverge, drift float64
	rng                           *rand.Rand
	calls                         int
}

func (w *world) train(lr float64, steps int) (float64, error) {
	w.calls++
	if w.diverge > 0 && lr > w.diverge*w.opt {
		return math.NaN(), nil
	}
	opt := w.opt * math.Pow(2, w.drift*math.Log2(float64(steps)/100))
	x := math.Log2(lr / opt)
	v := 3 + w.c*x*x + 20/float64(steps)
	if w.noise > 0 {
		v += w.noise * w.rng.NormFloat64()
	}
	return v, nil
}

func octaves(a, b float64) float64 { return math.Abs(math.Log2(a / b)) }

// TestSelectFindsKnownOptimum checks, without noise, that the chosen LR is the grid value nearest the optimum,
// bracketed, both when the optimum lies inside the initial grid and when it lies outside it on either side
// (the grid is extended), and that the spend stays within WorstCaseSteps.
func TestSelectFindsKnownOptimum(t *testing.T) {
	base := Options{Center: 4e-3, Values: 4, MinSteps: 25, MaxSteps: 200}
	for _, c := range []struct {
		name string
		opt  float64
		want float64
	}{
		{"inside", 2e-3, 2e-3},
		{"inside off-grid", 2.2e-3, 2e-3},
		{"above the grid", 3.2e-2, 3.2e-2}, // grid 1e-3..8e-3: two values past its top edge
		{"below the grid", 2.5e-4, 2.5e-4}, // two values below its bottom edge
	} {
		w := &world{opt: c.opt, c: 0.05}
		res, err := Select(base, w.train)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.LR-c.want) > 1e-12 || !res.Bracketed {
			t.Errorf("%s: chose %g (bracketed %v), want %g bracketed; curve %v", c.name, res.LR, res.Bracketed, c.want, res.Curve)
		}
		if res.Steps > base.WorstCaseSteps() {
			t.Errorf("%s: spent %d steps, worst case says %d", c.name, res.Steps, base.WorstCaseSteps())
		}
		// The chosen value and both neighbours were trained at the last rung's budget.
		at := map[float64]bool{}
		for _, p := range res.Curve {
			if p.Steps == base.MaxSteps {
				at[p.LR] = true
			}
		}
		for _, v := range []float64{c.want / 2, c.want, c.want * 2} {
			if !hasLR(at, v) {
				t.Errorf("%s: lr %g not trained at %d steps; curve %v", c.name, v, base.MaxSteps, res.Curve)
			}
		}
	}
}

func hasLR(at map[float64]bool, v float64) bool {
	for k := range at {
		if math.Abs(k-v) < 1e-9*v {
			return true
		}
	}
	return false
}

// TestSelectCheaperThanExhaustive checks that successive halving spends less than training every value the
// search touched at MaxSteps, and that Curve holds exactly the trials made, sorted.
func TestSelectCheaperThanExhaustive(t *testing.T) {
	o := Options{Center: 4e-3, Values: 8, MinSteps: 25, MaxSteps: 400, Eta: 4}
	w := &world{opt: 4e-3, c: 0.05}
	res, err := Select(o, w.train)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Curve) != w.calls {
		t.Fatalf("curve has %d points, trainer was called %d times", len(res.Curve), w.calls)
	}
	distinct := map[float64]bool{}
	sum := 0
	for i, p := range res.Curve {
		distinct[p.LR] = true
		sum += p.Steps
		if i > 0 && (p.Steps < res.Curve[i-1].Steps || p.Steps == res.Curve[i-1].Steps && p.LR <= res.Curve[i-1].LR) {
			t.Fatalf("curve not sorted by steps then lr at %d: %v", i, res.Curve)
		}
	}
	if sum != res.Steps {
		t.Errorf("Steps = %d, curve sums to %d", res.Steps, sum)
	}
	// 8·25 + 3·100 + 3·400 = 1,700 steps against 8·400 = 3,200 for every value at the full budget.
	if exhaustive := len(distinct) * o.MaxSteps; res.Steps*10 > exhaustive*6 {
		t.Errorf("spent %d steps, more than 60%% of exhaustive %d", res.Steps, exhaustive)
	}
	if got := o.Rungs(); len(got) != 3 || got[0] != 25 || got[1] != 100 || got[2] != 400 {
		t.Errorf("rungs %v, want 25 100 400", got)
	}
}

// TestSelectUnderNoise checks over 200 noisy worlds (noise sd 0.02 against 0.05 per octave² of curvature, so
// neighbours one octave off are 2.5 sd worse, and an optimum that drifts a third of an octave over the budgets) that the
// chosen LR is within one grid step of the optimum at MaxSteps in at least 95%, and bracketed in all but a few.
func TestSelectUnderNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	o := Options{Center: 4e-3, Values: 4, MinSteps: 25, MaxSteps: 200}
	near, brk := 0, 0
	const reps = 200
	for i := 0; i < reps; i++ {
		opt := 4e-3 * math.Pow(2, 6*rng.Float64()-3) // anywhere from 5e-4 to 3.2e-2: often outside the grid
		w := &world{opt: opt, c: 0.05, noise: 0.02, drift: -0.1, rng: rng}
		res, err := Select(o, w.train)
		if err != nil {
			t.Fatal(err)
		}
		final := opt * math.Pow(2, -0.1*math.Log2(200.0/100))
		if octaves(res.LR, final) <= 1 {
			near++
		}
		if res.Bracketed {
			brk++
		}
	}
	t.Logf("within one octave: %d/%d, bracketed %d/%d", near, reps, brk, reps)
	if near < reps*95/100 || brk < reps*95/100 {
		t.Errorf("within one octave %d/%d, bracketed %d/%d: want ≥ 95%% each", near, reps, brk, reps)
	}
}

// TestSelectDivergence checks that diverged trials (NaN) count as the worst loss, serialise as null, and that
// an optimum just below the divergence edge is still found and bracketed (the diverged neighbour is worse).
func TestSelectDivergence(t *testing.T) {
	w := &world{opt: 8e-3, c: 0.05, diverge: 1.5} // 1.6e-2 diverges
	res, err := Select(Options{Center: 4e-3, Values: 4, MinSteps: 25, MaxSteps: 100}, w.train)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.LR-8e-3) > 1e-12 || !res.Bracketed {
		t.Fatalf("chose %g bracketed %v, want 8e-3 bracketed; curve %v", res.LR, res.Bracketed, res.Curve)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"loss":null`) {
		t.Errorf("a diverged trial should serialise its loss as null: %s", b)
	}
}

// TestSelectBoundsAndExtensionLimit checks that the search stops at MaxLR and at MaxExtend and then says the
// optimum was not bracketed, instead of claiming an interior optimum.
func TestSelectBoundsAndExtensionLimit(t *testing.T) {
	for _, o := range []Options{
		{Center: 4e-3, Values: 4, MinSteps: 25, MaxSteps: 100, MaxLR: 1.6e-2},
		{Center: 4e-3, Values: 4, MinSteps: 25, MaxSteps: 100, MaxExtend: 1},
	} {
		w := &world{opt: 1, c: 0.05} // far above everything allowed
		res, err := Select(o, w.train)
		if err != nil {
			t.Fatal(err)
		}
		if res.Bracketed {
			t.Errorf("%+v: optimum far above the reachable grid reported as bracketed (chose %g)", o, res.LR)
		}
		for _, p := range res.Curve {
			if o.MaxLR > 0 && p.LR > o.MaxLR*(1+1e-9) {
				t.Errorf("tried lr %g above MaxLR %g", p.LR, o.MaxLR)
			}
		}
		if res.Steps > o.WorstCaseSteps() {
			t.Errorf("spent %d > worst case %d", res.Steps, o.WorstCaseSteps())
		}
	}
}

// TestSelectErrors checks that bad options are refused and a trainer error stops the search with context.
func TestSelectErrors(t *testing.T) {
	ok := func(float64, int) (float64, error) { return 1, nil }
	for _, o := range []Options{
		{Center: 0, Values: 4, MinSteps: 1, MaxSteps: 2},
		{Center: 1e-3, Values: 3, MinSteps: 1, MaxSteps: 2},
		{Center: 1e-3, Values: 4, MinSteps: 0, MaxSteps: 2},
		{Center: 1e-3, Values: 4, MinSteps: 4, MaxSteps: 2},
		{Center: 1e-3, Values: 4, MinSteps: 1, MaxSteps: 2, Factor: 1},
		{Center: 1e-3, Values: 4, MinSteps: 1, MaxSteps: 2, Keep: 2},
		{Center: 1e-3, Values: 4, MinSteps: 1, MaxSteps: 2, MinLR: 1e-2},
		{Center: 1e-3, Values: 4, MinSteps: 1, MaxSteps: 2, MaxLR: 1e-3}, // only 3 grid values fit below
	} {
		if _, err := Select(o, ok); err == nil {
			t.Errorf("%+v: want an error", o)
		}
	}
	boom := errors.New("boom")
	_, err := Select(Options{Center: 1e-3, Values: 4, MinSteps: 1, MaxSteps: 2}, func(float64, int) (float64, error) { return 0, boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "lr") {
		t.Errorf("trainer error not wrapped with context: %v", err)
	}
}
