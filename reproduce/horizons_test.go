package reproduce

import (
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/tune"
)

// TestMatchedRowsPerSeedAtEveryHorizon: the LR grid's paired gains come out per tuning seed at the primary
// horizon (the trials) and at every shorter one (their branches), only where both γ ran the rate, and print as
// values, not intervals.
func TestMatchedRowsPerSeedAtEveryHorizon(t *testing.T) {
	grid := func(g float64, losses map[float64][2]float64, branch map[float64][2]float64) experiment.Tuned {
		tr := experiment.Tuned{Gamma: g, Width: 128, Grid: &tune.GridResult{}}
		for lr, l := range losses {
			for i, seed := range []uint64{1000, 1001} {
				tr.Grid.Trials = append(tr.Grid.Trials, tune.GridTrial{LR: lr, Seed: seed, Loss: l[i]})
				if b, ok := branch[lr]; ok {
					tr.Horizons = append(tr.Horizons, experiment.HorizonTrial{Horizon: 5, LR: lr, Seed: seed, Loss: b[i]})
				}
			}
		}
		return tr
	}
	tuned := []experiment.Tuned{
		grid(0.5, map[float64][2]float64{2e-3: {4.0, 4.1}, 4e-3: {3.9, 3.95}}, map[float64][2]float64{2e-3: {4.5, 4.6}}),
		grid(1, map[float64][2]float64{1e-3: {4.2, 4.2}, 2e-3: {4.05, 4.0}, 4e-3: {4.0, math.Inf(1)}}, map[float64][2]float64{2e-3: {4.4, 4.7}}),
		{Gamma: 1, Width: 64, Grid: &tune.GridResult{Trials: []tune.GridTrial{{LR: 2e-3, Seed: 1000, Loss: 9}}}},
	}
	rows := matchedRows(tuned, 128, 20)
	want := []MatchedRow{
		{5, 2e-3, 1000, 4.5, 4.4, 0.1}, {5, 2e-3, 1001, 4.6, 4.7, -0.1},
		{20, 2e-3, 1000, 4.0, 4.05, -0.05}, {20, 2e-3, 1001, 4.1, 4.0, 0.1},
		{20, 4e-3, 1000, 3.9, 4.0, -0.1}, {20, 4e-3, 1001, 3.95, math.Inf(1), math.Inf(-1)},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, r := range rows {
		w := want[i]
		if r.Horizon != w.Horizon || r.LR != w.LR || r.Seed != w.Seed || math.Abs(r.G05-w.G05) > 1e-12 || math.Abs(r.G1-w.G1) > 1e-12 ||
			!(math.Abs(r.Gain-w.Gain) < 1e-12 || r.Gain == w.Gain) {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	var b strings.Builder
	res := &Result{Matched: rows}
	if err := res.writeHorizons(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1001") || strings.Contains(b.String(), "CI") {
		t.Errorf("matched rows printed as:\n%s", b.String())
	}
	if _, err := rows[5].MarshalJSON(); err != nil {
		t.Errorf("a diverged trial's row does not marshal: %v", err)
	}
}

// TestTwoSeedTestsPrintValues: a comparison on two seeds prints both values, never a 1-df interval.
func TestTwoSeedTestsPrintValues(t *testing.T) {
	tt := Test{Name: "x", Estimate: stats.Estimate{Seeds: []int{1000, 1001}, Values: []float64{0.19, 0.15}}}
	tt.measure(ClaimAlpha)
	s := (&claimTests{tests: []Test{tt}}).text()
	if !strings.Contains(s, "seed 1000: +0.1900, seed 1001: +0.1500") || strings.Contains(s, "CI") {
		t.Errorf("two-seed evidence: %s", s)
	}
}
