package reproduce

import (
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/tune"
)

// TestGridMatchedRows: the full-horizon LR grid gives H1 at every matched rate at the γ grid's width and H2 at
// every matched rate over the widths the grid ran at, from the tuning seeds' selection losses; they are reported
// beside the primaries, never decisive. A world with a known answer: γ = 1 gains 0.1 at width 128 and 0.1 more
// per unit of ln N at every rate.
func TestGridMatchedRows(t *testing.T) {
	n := map[int]float64{48: 120240, 128: 918656}
	tuned := map[string]experiment.Tuned{}
	for _, w := range []int{48, 128} {
		for _, g := range []float64{0.5, 1} {
			gr := &tune.GridResult{}
			for _, lr := range []float64{1e-3, 2e-3} {
				for _, seed := range []uint64{1000, 1001, 1002} {
					loss := 4 + float64(seed-1000)*0.01 // a seed effect shared by both γ
					if g == 1 {
						loss -= 0.1 + 0.1*math.Log(n[w]/n[128]) + 0.001*float64(seed%2)
					}
					gr.Trials = append(gr.Trials, tune.GridTrial{LR: lr, Seed: seed, Loss: loss})
				}
			}
			tuned[experiment.TunedKey(g, w)] = experiment.Tuned{Gamma: g, Width: w, Grid: gr}
		}
	}
	ev := &Evidence{Width: 128, Ladder: []Rung{{Width: 48, N: n[48]}, {Width: 128, N: n[128]}}}
	ev.Grid = gridEvidence(tuned, ev.Ladder)
	if len(ev.Grid) != 4 || ev.Grid[0].Width != 48 || ev.Grid[0].LR != 1e-3 || ev.Grid[3].N != n[128] {
		t.Fatalf("grid cells %+v, want 2 widths × 2 rates, sorted, with N", ev.Grid)
	}
	h1 := gridMatched(ev, 0.02)
	h2 := gridMatchedSlopes(ev, 0.01)
	if len(h1) != 2 || len(h2) != 2 {
		t.Fatalf("%d H1 rows and %d H2 rows, want 2 each (one per rate)", len(h1), len(h2))
	}
	for _, r := range h1 {
		if math.Abs(r.Estimate.Mean-0.1-0.001/3) > 1e-9 || r.Estimate.N != 3 || r.Decisive || !strings.Contains(r.Name, "[reported]") {
			t.Errorf("%s: mean %g over %d seeds, decisive %v; want 0.1003 over 3, reported", r.Name, r.Estimate.Mean, r.Estimate.N, r.Decisive)
		}
	}
	for _, r := range h2 {
		if r.Estimate.N != 3 || !(math.Abs(r.Estimate.Mean-0.1) <= 1e-9) || !strings.Contains(r.Name, "widths 48, 128") {
			t.Errorf("%s: slope %g, want 0.1 per unit ln N", r.Name, r.Estimate.Mean)
		}
	}
	if gridEvidence(map[string]experiment.Tuned{"x": {Gamma: 1, Width: 128}}, nil) != nil {
		t.Error("a halving sweep (no grid) gave grid evidence")
	}
}
