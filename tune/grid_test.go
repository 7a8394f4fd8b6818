package tune

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bowl is a synthetic world with a known answer: the selection loss is a parabola in log2(lr) with its
// minimum at best, plus a per-seed offset; rates at or above spikeAt spike on seed 1 only.
func bowl(best, spikeAt float64, calls *atomic.Int64) SeedTrainer {
	return func(lr float64, seed uint64) (float64, float64, error) {
		calls.Add(1)
		x := math.Log2(lr / best)
		spike := 0.05
		if lr >= spikeAt*(1-1e-9) && seed == 1 {
			spike = 2
		}
		return 3 + 0.01*x*x + 0.001*float64(seed), spike, nil
	}
}

func TestSelectGrid(t *testing.T) {
	lrs := []float64{1e-3, 2e-3, 4e-3}
	for _, tc := range []struct {
		name      string
		best      float64
		spikeAt   float64
		threshold float64
		extend    int
		wantLR    float64
		bracketed bool
		trials    int
		err       string
	}{
		{name: "interior best", best: 2e-3, spikeAt: 1, threshold: 0.5, wantLR: 2e-3, bracketed: true, trials: 6},
		{name: "spiking best is vetoed", best: 4e-3, spikeAt: 4e-3, threshold: 0.5, wantLR: 2e-3, bracketed: true, trials: 6},
		{name: "no veto without a threshold", best: 4e-3, spikeAt: 4e-3, threshold: 0, wantLR: 4e-3, trials: 6},
		{name: "edge best extends", best: 8e-3, spikeAt: 1, threshold: 0.5, extend: 1, wantLR: 8e-3, trials: 8},
		{name: "edge best not extended is not bracketed", best: 8e-3, spikeAt: 1, threshold: 0.5, wantLR: 4e-3, trials: 6},
		{name: "low edge extends downward", best: 2.5e-4, spikeAt: 1, threshold: 0.5, extend: 2, wantLR: 2.5e-4, trials: 10},
		{name: "every rate vetoed", best: 2e-3, spikeAt: 1e-4, threshold: 0.5, trials: 6, err: "no rate trains stably"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			r, err := SelectGrid(GridOptions{LRs: lrs, Seeds: []uint64{0, 1}, SpikeThreshold: tc.threshold, Extend: tc.extend}, bowl(tc.best, tc.spikeAt, &calls))
			if calls := int(calls.Load()); calls != tc.trials {
				t.Errorf("%d trials, want %d", calls, tc.trials)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.LR-tc.wantLR) > 1e-12 || r.Bracketed != tc.bracketed {
				t.Errorf("lr %g bracketed %v, want %g %v (rates %+v)", r.LR, r.Bracketed, tc.wantLR, tc.bracketed, r.Rates)
			}
			if want := 3 + 0.01*math.Pow(math.Log2(r.LR/tc.best), 2) + 0.0005; math.Abs(r.Loss-want) > 1e-12 {
				t.Errorf("mean loss %g, want %g", r.Loss, want)
			}
			if len(r.Trials) != tc.trials || r.Trials[0].LR > r.Trials[len(r.Trials)-1].LR {
				t.Errorf("trials %+v: want %d sorted by rate", r.Trials, tc.trials)
			}
		})
	}
}

// TestSelectGridJobs: trials trained several at once give the result of one at a time, field for field, and
// really overlap; the first failing trial's error (in rate, then seed order) is the grid's.
func TestSelectGridJobs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		best      float64
		extend    int
		jobs      int
		inFlight  int64 // the most trials at once the grid must reach
		seeds     []uint64
		lrs       []float64
		threshold float64
	}{
		{name: "interior best, 2 at once", best: 2e-3, jobs: 2, inFlight: 2, seeds: []uint64{0, 1}, lrs: []float64{1e-3, 2e-3, 4e-3}},
		{name: "interior best, every trial at once", best: 2e-3, jobs: 6, inFlight: 6, seeds: []uint64{0, 1}, lrs: []float64{1e-3, 2e-3, 4e-3}},
		{name: "edge best extends, 3 seeds, 4 at once", best: 1.6e-2, extend: 2, jobs: 4, inFlight: 4, seeds: []uint64{0, 1, 2}, lrs: []float64{1e-3, 2e-3, 4e-3}},
		{name: "low edge with a veto, 3 at once", best: 2.5e-4, extend: 2, jobs: 3, inFlight: 3, seeds: []uint64{0, 1}, lrs: []float64{1e-3, 2e-3, 4e-3}, threshold: 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seq atomic.Int64
			o := GridOptions{LRs: tc.lrs, Seeds: tc.seeds, SpikeThreshold: tc.threshold, Extend: tc.extend}
			want, err := SelectGrid(o, bowl(tc.best, 4e-3, &seq))
			if err != nil {
				t.Fatal(err)
			}
			var calls, now, most atomic.Int64
			var mu sync.Mutex
			inner := bowl(tc.best, 4e-3, &calls)
			o.Jobs = tc.jobs
			got, err := SelectGrid(o, func(lr float64, seed uint64) (float64, float64, error) {
				n := now.Add(1)
				mu.Lock()
				most.Store(max(most.Load(), n))
				mu.Unlock()
				time.Sleep(20 * time.Millisecond) // long enough for the other workers to pick up their trials
				defer now.Add(-1)
				return inner(lr, seed)
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%d at once:\n%+v\nwant (one at a time)\n%+v", tc.jobs, got, want)
			}
			if calls.Load() != seq.Load() {
				t.Errorf("%d trials, want %d", calls.Load(), seq.Load())
			}
			if most.Load() != tc.inFlight {
				t.Errorf("at most %d trials at once, want %d", most.Load(), tc.inFlight)
			}
		})
	}
	_, err := SelectGrid(GridOptions{LRs: []float64{1e-3, 2e-3}, Seeds: []uint64{0, 1}, Jobs: 4}, func(lr float64, seed uint64) (float64, float64, error) {
		if seed == 1 {
			return 0, 0, fmt.Errorf("disk full at %g", lr)
		}
		return 3, 0, nil
	})
	if err == nil || !strings.Contains(err.Error(), "lr 0.001, seed 1: disk full at 0.001") {
		t.Errorf("err %v, want the first failing trial's (lr 0.001, seed 1)", err)
	}
}

func TestSelectGridDiverged(t *testing.T) {
	r, err := SelectGrid(GridOptions{LRs: []float64{1e-3, 2e-3, 4e-3}, Seeds: []uint64{0, 1}}, func(lr float64, seed uint64) (float64, float64, error) {
		if lr > 3e-3 && seed == 0 {
			return math.NaN(), 0, nil
		}
		return 5 - lr*100, 0, nil // the larger the better, but 4e-3 diverges on seed 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.LR != 2e-3 {
		t.Fatalf("lr %g, want 2e-3 (4e-3 diverged on a seed)", r.LR)
	}
	if _, ok := r.RateLoss(4e-3); ok {
		t.Error("a diverged rate reads as usable")
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("a diverged trial does not marshal: %v", err)
	}
}

func TestGridOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    GridOptions
		want string
	}{
		{GridOptions{LRs: []float64{1e-3}, Seeds: []uint64{0, 1}}, "at least 2 rates"},
		{GridOptions{LRs: []float64{1e-3, 2e-3}, Seeds: []uint64{0}}, "at least 2 seeds"},
		{GridOptions{LRs: []float64{2e-3, 1e-3}, Seeds: []uint64{0, 1}}, "increasing"},
		{GridOptions{LRs: []float64{-1, 1e-3}, Seeds: []uint64{0, 1}}, "positive"},
		{GridOptions{LRs: []float64{1e-3, 2e-3}, Seeds: []uint64{0, 0}}, "twice"},
		{GridOptions{LRs: []float64{1e-3, 2e-3}, Seeds: []uint64{0, 1}, SpikeThreshold: math.Inf(1)}, "spike threshold"},
		{GridOptions{LRs: []float64{1e-3, 2e-3}, Seeds: []uint64{0, 1}, Extend: -1}, "extend"},
		{GridOptions{LRs: []float64{1e-3, 2e-3}, Seeds: []uint64{0, 1}, Jobs: -1}, "jobs"},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestTransferAndCheck(t *testing.T) {
	if got := Transfer(2e-3, 128, 64, 1); math.Abs(got-4e-3) > 1e-15 {
		t.Errorf("1/d rule: %g, want 4e-3", got)
	}
	if got := Transfer(2e-3, 128, 48, 0); got != 2e-3 {
		t.Errorf("constant rule: %g, want 2e-3", got)
	}
	g := GridResult{LR: 4e-3, Loss: 3.00, Rates: []GridRate{{LR: 2e-3, Loss: 3.01}, {LR: 4e-3, Loss: 3.00}, {LR: 8e-3, Loss: 3.2, Vetoed: true}}}
	for _, tc := range []struct {
		rule, tol float64
		pass      bool
		cost      float64
	}{
		{2e-3, 0.019, true, 0.01},
		{2e-3, 0.005, false, 0.01},
		{4e-3, 0, true, 0},
		{8e-3, 1, false, math.NaN()}, // vetoed: the rule's rate is not usable there
		{1e-3, 1, false, math.NaN()}, // not trained
	} {
		c := CheckTransfer(1, 48, g, tc.rule, tc.tol)
		if c.Pass != tc.pass || !(math.Abs(c.Cost-tc.cost) < 1e-12 || math.IsNaN(c.Cost) && math.IsNaN(tc.cost)) {
			t.Errorf("rule %g tol %g: %+v, want pass %v cost %g", tc.rule, tc.tol, c, tc.pass, tc.cost)
		}
	}
}
