package anchor

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/report"
)

func compositeResult(gamma float64, L int, lr float64, seed uint64, inf, sym, seen float64) CellResult {
	return CellResult{Cell: Cell{Task: TaskComposite, Gamma: gamma, Layers: L, LR: lr, Seed: seed},
		Composite: &CompositeScore{Unseen: Shares{Inferential: inf, Symmetric: sym, Other: 1 - inf - sym, N: 560}, SeenTest: seen}}
}

// TestPhaseSelectsRatesBothWays: ours takes the rate with the best seen-pair test accuracy (shares from one
// run), the paper's takes each mapping's best over rates (possibly from different runs); seeds are averaged.
func TestPhaseSelectsRatesBothWays(t *testing.T) {
	res := []CellResult{
		compositeResult(0.5, 2, 1e-3, 1, 0.1, 0.8, 0.99),
		compositeResult(0.5, 2, 3e-4, 1, 0.4, 0.2, 0.90),
		compositeResult(0.5, 2, 1e-3, 2, 0.3, 0.6, 0.95),
		compositeResult(0.5, 2, 3e-4, 2, 0.0, 0.9, 0.97),
		compositeResult(0.8, 2, 1e-3, 1, 1, 0, 0.5), // below 90%: hatched
	}
	tie := compositeResult(0.8, 2, 3e-4, 1, 0, 1, 0.5) // same seen accuracy as the 1e-3 run, worse fit
	tie.Loss = 1
	res = append(res, tie)
	ph := Phase(res)
	if len(ph) != 2 || ph[0].Gamma != 0.5 || ph[1].Gamma != 0.8 {
		t.Fatalf("cells %+v", ph)
	}
	c := ph[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(c.Inf, 0.05) || !near(c.Sym, 0.85) || !near(c.SeenTest, 0.98) || c.LRs[0] != 1e-3 || c.LRs[1] != 3e-4 {
		t.Errorf("our selection: %+v, want inf 0.05, sym 0.85, seen 0.98, rates [1e-3 3e-4]", c)
	}
	if len(c.InfBySeed) != 2 || c.InfBySeed[0] != 0.1 || c.SymBySeed[1] != 0.9 || c.SeedIDs[1] != 2 {
		t.Errorf("per-seed shares %v %v of seeds %v, want [0.1 0] [0.8 0.9] of [1 2]", c.InfBySeed, c.SymBySeed, c.SeedIDs)
	}
	if !near(c.InfBest, 0.35) || !near(c.SymBest, 0.85) {
		t.Errorf("paper's selection: inf* %g sym* %g, want 0.35 and 0.85", c.InfBest, c.SymBest)
	}
	if !near(c.SDSym, math.Sqrt(0.005)) {
		t.Errorf("sd of the symmetric share %g, want %g", c.SDSym, math.Sqrt(0.005))
	}
	if ph[1].LRs[0] != 1e-3 || ph[1].Inf != 1 {
		t.Errorf("tie at equal seen accuracy went to rate %g (inferential %g), want 1e-3, the lower loss", ph[1].LRs[0], ph[1].Inf)
	}
	var b bytes.Buffer
	WriteTable(&b, ph, nil)
	if !strings.Contains(b.String(), " 0.50  2     2  0.05 ± 0.07  0.85 ± 0.07") {
		t.Errorf("table:\n%s", b.String())
	}
	page := Page(Grid{}, ph, nil, nil, b.String())
	grids, hatched := 0, 0
	for _, s := range page.Sections {
		for _, c := range s.Charts {
			grids++
			for _, h := range c.Rows[0][0].Grid.Hatch {
				if h {
					hatched++
				}
			}
		}
	}
	if grids != 5 || hatched != 5 {
		t.Errorf("the page has %d heatmaps and %d hatched cells, want 5 and 5 (one per heatmap)", grids, hatched)
	}
	html, err := report.RenderPage(page)
	if err != nil || strings.Count(string(html), "<svg") != 5 {
		t.Errorf("the drawn page has %d figures (%v), want 5", strings.Count(string(html), "<svg"), err)
	}
}

func TestMixCurvePicksTheBestFit(t *testing.T) {
	mk := func(gamma, lr float64, seed uint64, mem, tr, te float64) CellResult {
		return CellResult{Cell: Cell{Task: TaskMix, Gamma: gamma, Layers: 2, LR: lr, Seed: seed}, Mix: &MixScore{Memory: mem, RsnTrain: tr, RsnTest: te}}
	}
	mc := MixCurve([]CellResult{mk(0.8, 1e-3, 1, 0.1, 0.9, 0.8), mk(0.8, 3e-4, 1, 0.3, 0.5, 0.1), mk(0.3, 1e-3, 1, 0.2, 0.2, 0)})
	if len(mc) != 2 || mc[0].Gamma != 0.3 || mc[1].RsnTest != 0.8 || mc[1].LRs[0] != 1e-3 {
		t.Errorf("mix curve %+v", mc)
	}
}
