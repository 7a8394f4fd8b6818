package reproduce

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/tune"
)

// TestLadderAtItsOwnHorizon: when the ladder trains at a horizon of its own, its rung at H1's width is its own
// run (not the γ grid's, which trained longer), H1 carries no effective size read through that ladder (H2 states
// it, at the ladder's horizon), the per-width gains stand beside the slope, and the ladder's grid at its ends is
// never mixed with the primaries' grid in a matched-rate slope. A world with a known answer: at the ladder's
// horizon γ = 1 gains 0.1 more per unit of ln N; at H1's horizon it loses 0.3 at width 128.
func TestLadderAtItsOwnHorizon(t *testing.T) {
	n := map[int]int64{96: 480096, 128: 918656, 160: 1373600, 240: 2997360}
	gain := func(w int) float64 { return 0.1 * math.Log(float64(n[w])/float64(n[128])) }
	var recs []RunRecord
	rec := func(role Role, g float64, w, steps, seed int, loss float64) {
		recs = append(recs, RunRecord{Role: role, Gamma: g, Width: w, N: n[w], Steps: steps, Seed: seed, Gate: "elementwise",
			Score: RunScore{HeldOut: eval.HeldOutScore{Overall: eval.SplitScore{Loss: loss}}}, Health: Health{Spike: math.NaN(), Plateau: math.NaN()}})
	}
	for seed := 0; seed < 7; seed++ {
		s := 0.01 * float64(seed%3) // a seed effect both γ share
		noise := 0.002 * float64(seed%2)
		rec(RoleGamma, 0.5, 128, 8972, seed, 4.4+s)
		rec(RoleGamma, 1, 128, 8972, seed, 4.7+s+noise) // H1's horizon: γ = 1 loses 0.3
		for w := range n {
			base := 3 + 200*math.Pow(float64(n[w]), -0.3) + s // γ = 0.5 on a law L(N) = E + A·N^(−α)
			rec(RoleLadder, 0.5, w, 2243*int(n[w])/int(n[128]), seed, base)
			rec(RoleLadder, 1, w, 2243*int(n[w])/int(n[128]), seed, base-gain(w)-noise)
		}
	}
	ev, err := evidenceOf(recs, "")
	if err != nil {
		t.Fatal(err)
	}
	if !ev.LadderOwnHorizon || len(ev.Ladder) != 4 {
		t.Fatalf("ladder own horizon %v with %d rungs, want true and 4", ev.LadderOwnHorizon, len(ev.Ladder))
	}
	for _, r := range ev.Ladder {
		if r.Width == 128 && math.Abs(r.G1.Seeds[0].Overall-r.G05.Seeds[0].Overall) > 1e-9 {
			t.Errorf("the ladder's width-128 rung is the γ grid's run (gain %g), not its own", r.G05.Seeds[0].Overall-r.G1.Seeds[0].Overall)
		}
	}
	ev.Primaries = &Primaries{Alpha: 0.05, EffectiveSize: 0.44, PriorLadderSlope: -0.053, MinWidths: 4, MinSpan: 2.5, Horizon: experiment.Horizon{Width: 128}}
	claims := judgePrimaries(ev, 200)
	h1, h2 := claims[0], claims[1]
	if h1.Tests[0].EffSize != nil {
		t.Errorf("H1 carries an effective size read through a ladder at another horizon: %+v", h1.Tests[0].EffSize)
	}
	if d, ok := h2.Detail.(map[string]any); !ok || d["effective_size_at_ladder_horizon"] == nil {
		t.Errorf("H2's detail lacks the effective size at the ladder's horizon: %+v", h2.Detail)
	}
	if got := h2.Tests[0].Estimate.Mean; math.Abs(got-0.1) > 1e-6 {
		t.Errorf("H2 slope %g, want 0.1", got)
	}
	widths := 0
	for _, x := range h2.Tests {
		if strings.HasPrefix(x.Name, "gain at width ") {
			widths++
			var w int
			for k := range n {
				if strings.HasPrefix(x.Name, "gain at width "+itoa(k)+" ") {
					w = k
				}
			}
			if math.Abs(x.Estimate.Mean-gain(w)-0.002*3/7) > 1e-6 || x.Estimate.N != 7 {
				t.Errorf("%s: %g over %d seeds, want %g over 7", x.Name, x.Estimate.Mean, x.Estimate.N, gain(w)+0.002*3/7)
			}
		}
	}
	if widths != 4 {
		t.Errorf("%d per-width gains beside the slope, want 4", widths)
	}

	// The grids: the primaries' at width 128 (H1's horizon) and the ladder's at its ends (its own horizon).
	tuned := map[string]experiment.Tuned{}
	for _, g := range []float64{0.5, 1} {
		add := func(key string, w int, tpp, offset float64) {
			gr := &tune.GridResult{}
			for _, lr := range []float64{2e-3, 4e-3} {
				for _, seed := range []uint64{1000, 1001} {
					loss := 4.0
					if g == 1 {
						loss -= offset
					}
					gr.Trials = append(gr.Trials, tune.GridTrial{LR: lr, Seed: seed, Loss: loss})
				}
			}
			tuned[key] = experiment.Tuned{Gamma: g, Width: w, TokensPerParam: tpp, Grid: gr}
		}
		add(experiment.TunedKey(g, 128), 128, 0, -0.3)
		add(experiment.LadderTunedKey(g, 96, 5), 96, 5, gain(96))
		add(experiment.LadderTunedKey(g, 240, 5), 240, 5, gain(240))
	}
	ev.Grid = gridEvidence(tuned, ev.Ladder)
	for _, r := range gridMatched(ev, 0.02) {
		if math.Abs(r.Estimate.Mean+0.3) > 1e-9 {
			t.Errorf("%s: %g, want −0.3 from the primaries' grid alone", r.Name, r.Estimate.Mean)
		}
	}
	rows := gridMatchedSlopes(ev, 0.01)
	if len(rows) != 2 {
		t.Fatalf("%d matched-rate slopes, want 2 (one per rate, over the ladder's ends)", len(rows))
	}
	for _, r := range rows {
		if !strings.Contains(r.Name, "widths 96, 240 at the ladder's 5 tokens per parameter") || math.Abs(r.Estimate.Mean-0.1) > 1e-9 {
			t.Errorf("%s: slope %g, want 0.1 over the ladder's ends alone", r.Name, r.Estimate.Mean)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
