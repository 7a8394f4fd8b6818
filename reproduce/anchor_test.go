package reproduce

import (
	"context"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/anchor"
	"github.com/smallinit/smallinit/experiment"
)

// anchorWorld builds the results of a γ ∈ {0.5, 1} anchor grid at depth 2 with two rates per seed: per seed,
// the better rate (seen-pair test accuracy seen) has the given (4,3) inferential and symmetric shares, the
// other rate learns nothing; anchor.Phase must pick the better one.
func anchorWorld(seen float64, inf05, sym05, inf1, sym1 []float64) *AnchorEvidence {
	var res []anchor.CellResult
	add := func(g float64, inf, sym []float64) {
		for i := range inf {
			s := uint64(i)
			good := &anchor.CompositeScore{Unseen: anchor.Shares{Inferential: inf[i], Symmetric: sym[i], Other: 1 - inf[i] - sym[i]}, SeenTest: seen}
			bad := &anchor.CompositeScore{Unseen: anchor.Shares{Other: 1}, SeenTest: seen / 10}
			res = append(res,
				anchor.CellResult{Cell: anchor.Cell{Task: anchor.TaskComposite, Gamma: g, Layers: 2, LR: 3e-4, Seed: s}, Loss: 3, Composite: bad},
				anchor.CellResult{Cell: anchor.Cell{Task: anchor.TaskComposite, Gamma: g, Layers: 2, LR: 1e-3, Seed: s}, Loss: 0.1, Composite: good})
		}
	}
	add(0.5, inf05, sym05)
	add(1, inf1, sym1)
	g := anchor.Grid{Gammas: []float64{0.5, 1}, Depths: []int{2}, LRs: []float64{3e-4, 1e-3}, Budget: anchor.Budget{Steps: 1000, Batch: 128}}
	return &AnchorEvidence{Dir: "anchor", Grid: g, Cells: res, Phase: anchor.Phase(res)}
}

// gateWorld is the supported world on four seeds, where seed 3's γ = 1 cell has not learnt the seen pairs and
// answers (4,3) against the claim: the per-seed gate drops it.
func gateWorld() *AnchorEvidence {
	a := anchorWorld(1, []float64{0.02, 0.05, 0.03, 0.9}, []float64{0.9, 0.85, 0.95, 0}, []float64{0.7, 0.76, 0.8, 0}, []float64{0, 0.02, 0.01, 0.9})
	for i := range a.Cells {
		if c := &a.Cells[i]; c.Cell.Seed == 3 && c.Cell.Gamma == 1 {
			s := *c.Composite
			s.SeenTest /= 2
			c.Composite = &s
		}
	}
	a.Phase = anchor.Phase(a.Cells)
	return a
}

// TestJudgeAnchor: the anchor claim's verdict on constructed worlds with known answers.
func TestJudgeAnchor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		a          *AnchorEvidence
		want       string
		reason     string // in the reason
		evidence   string // in the evidence
		intervalLo int    // sign of the decisive interval's lower bound (0: not checked)
	}{
		{"γ=1 infers, γ=0.5 symmetric", anchorWorld(1, []float64{0.02, 0.05, 0.03}, []float64{0.9, 0.85, 0.95}, []float64{0.7, 0.76, 0.8}, []float64{0, 0.02, 0.01}),
			Supported, "", "symmetric 0.900", 1},
		{"γ=0.5 infers more", anchorWorld(1, []float64{0.7, 0.76, 0.8}, []float64{0, 0.02, 0.01}, []float64{0.02, 0.05, 0.03}, []float64{0.9, 0.85, 0.95}),
			Contradicted, "", "inferential 0.753", -1},
		{"within the noise", anchorWorld(1, []float64{0.4, 0.2, 0.5}, []float64{0.5, 0.7, 0.4}, []float64{0.3, 0.8, 0.1}, []float64{0.6, 0.1, 0.8}),
			Inconclusive, "one-sided p", "", 0},
		{"γ=1 infers, γ=0.5 other", anchorWorld(1, []float64{0.02, 0.05, 0.03}, []float64{0.2, 0.3, 0.25}, []float64{0.7, 0.76, 0.8}, []float64{0, 0.02, 0.01}),
			Inconclusive, "not mostly symmetric", "", 1},
		{"seen pairs not learnt", anchorWorld(0.5, []float64{0.02, 0.05, 0.03}, []float64{0.9, 0.85, 0.95}, []float64{0.7, 0.76, 0.8}, []float64{0, 0.02, 0.01}),
			Untestable, "only 0 seeds learnt the seen pairs in both γ cells (need 3)", "dropped [0 1 2]", 0},
		{"one seed not learnt is dropped", gateWorld(), Supported, "", "3 seeds kept [0 1 2], dropped [3]", 1},
		{"two seeds", anchorWorld(1, []float64{0.02, 0.05}, []float64{0.9, 0.85}, []float64{0.7, 0.76}, []float64{0, 0.02}),
			Inconclusive, "too few seeds", "", 0},
		{"no grid", nil, Inconclusive, "no anchor grid", "", 0},
		{"no γ=1 cell", &AnchorEvidence{Grid: anchor.Grid{Depths: []int{2}}}, Inconclusive, "anchor cells missing", "", 0},
	} {
		c := judgeAnchor(tc.a)
		if c.N != 1 || c.Verdict != tc.want || !strings.Contains(c.Reason, tc.reason) || !strings.Contains(c.Evidence, tc.evidence) {
			t.Errorf("%s: %s (%s): %s; want %s with %q, %q", tc.name, c.Verdict, c.Reason, c.Evidence, tc.want, tc.reason, tc.evidence)
			continue
		}
		if tc.intervalLo != 0 {
			e := c.Tests[0].Estimate
			if e.N != 3 || tc.intervalLo > 0 && !(e.Lo > 0) || tc.intervalLo < 0 && !(e.Hi < 0) {
				t.Errorf("%s: decisive estimate %+v", tc.name, e)
			}
			if !c.Tests[0].Decisive || c.Tests[1].Decisive || c.Detail == nil || c.Tests[0].POneSided == nil {
				t.Errorf("%s: tests %+v, detail %v", tc.name, c.Tests, c.Detail)
			}
			// The robustness row: the shares at each rate of the grid, reported. At 3e-4 the world learns
			// nothing (both γ answer "other"): a zero difference.
			if len(c.Tests) != 4 || c.Tests[2].Decisive || !strings.Contains(c.Tests[2].Name, "at LR 0.0003") || c.Tests[2].Estimate.Mean != 0 ||
				!strings.Contains(c.Tests[3].Name, "at LR 0.001") || c.Tests[3].Estimate.Mean != c.Tests[0].Estimate.Mean {
				t.Errorf("%s: per-rate rows %+v", tc.name, c.Tests[2:])
			}
			if p := *c.Tests[0].POneSided; tc.want == Supported && !(p <= ClaimAlpha) || tc.want == Contradicted && !(p >= 1-ClaimAlpha) {
				t.Errorf("%s: one-sided p %g", tc.name, p)
			}
		}
	}
}

// TestAnchorGridOfPlan: the built-in plan's anchor grid is γ ∈ {0.5, 1} at depth 2, two rates, the tier's
// seeds and steps (8h: 1500 steps; the 2 h tier leaves it out), and costs cells × steps ×
// batch × window tokens at the cell model's FLOPs per token.
func TestAnchorGridOfPlan(t *testing.T) {
	p, d := reproduceDesign(t)
	for _, tc := range []struct {
		o     Options
		steps int
		seeds int
	}{
		{Options{Budget: 30 * 60e9}, 50, 2},
		{Options{Budget: 120 * 60e9}, 0, 0},      // the 2 h tier spends its budget on the primaries: no anchor grid
		{Options{Budget: 480 * 60e9}, 0, 0},      // the 8 h tier is H1 at 20 tokens per parameter: no anchor grid
		{Options{Budget: 1440 * 60e9}, 1500, 12}, // the tier's seeds (the plan runs the prefix that fits)
		{Options{Budget: 1440 * 60e9, AnchorSteps: 2, Seeds: 5}, 2, 5},
	} {
		seeds := p.SeedsFor(tc.o.Budget)
		if tc.o.Seeds > 0 {
			seeds = experiment.SeedRange(tc.o.Seeds)
		}
		g := (&study{o: &tc.o, design: d}).anchorGrid(p.TierFor(tc.o.Budget), seeds)
		if tc.steps == 0 {
			if g != nil {
				t.Errorf("%s: grid %+v, want none", tc.o.Budget, g)
			}
			continue
		}
		if g == nil || g.Budget.Steps != tc.steps || len(g.Seeds) != tc.seeds || len(g.Cells()) != 2*2*tc.seeds || g.Shape.Dim != 128 || g.Depths[0] != 2 {
			t.Fatalf("%s: grid %+v", tc.o.Budget, g)
		}
		w, err := anchorWork(g)
		if err != nil {
			t.Fatal(err)
		}
		tc1, err := anchor.RunConfig(g.Cells()[0], g.Shape, g.Budget, "x")
		if err != nil {
			t.Fatal(err)
		}
		want := float64(len(g.Cells())*tc.steps*128*tc1.Model.SeqLen) * tc1.Model.FLOPsPerToken() / float64(tc.seeds)
		if d := w.FLOPsPerSeed/want - 1; d > 1e-9 || d < -1e-9 || !strings.Contains(w.Text, "cells") {
			t.Errorf("%s: work %+v, want %g FLOPs per seed", tc.o.Budget, w, want)
		}
	}
	if (&study{o: &Options{}}).anchorGrid(nil, []uint64{0}) != nil {
		t.Error("a plan without [anchor] has an anchor grid")
	}
}

// TestAnchorGridRunsAndResumes: a tiny grid (2 steps, width 16) trains its 4 cells into the directory, is
// aggregated into γ = 0.5 and γ = 1 cells and judged; run again it trains nothing; a grid of other steps in the
// same directory is refused.
func TestAnchorGridRunsAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 4 tiny anchor cells")
	}
	p := &AnchorSpec{Gammas: []float64{0.5, 1}, Depth: 1, LRs: []float64{1e-3}, Dim: 16, FFN: 32, HeadDim: 8, Batch: 8, Examples: 64, Steps: 2}
	g := anchorGrid(p, []uint64{1, 2}, 2)
	dir := t.TempDir()
	var log strings.Builder
	a, err := runAnchor(context.Background(), g, dir, &Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Cells) != 4 || len(a.Phase) != 2 || a.Phase[0].Seeds != 2 || strings.Count(log.String(), "anchor-g") != 4 {
		t.Fatalf("cells %d, phase %+v:\n%s", len(a.Cells), a.Phase, log.String())
	}
	c := judgeAnchor(a)
	t.Logf("claim %d: %s\n  %s (%s): %s", c.N, c.Text, c.Verdict, c.Reason, c.Evidence)
	if c.Evidence == "" || c.Verdict == Supported {
		t.Errorf("2 steps at width 16: %s (%s): %s", c.Verdict, c.Reason, c.Evidence)
	}
	log.Reset()
	again, err := runAnchor(context.Background(), g, dir, &Options{Log: &log})
	if err != nil || len(again.Cells) != 4 || strings.Contains(log.String(), "anchor-g") {
		t.Errorf("resume: %v, %d cells, log:\n%s", err, len(again.Cells), log.String())
	}
	if _, err := runAnchor(context.Background(), anchorGrid(p, []uint64{1, 2}, 3), dir, &Options{}); err == nil || !strings.Contains(err.Error(), "holds a grid of 2 steps") {
		t.Errorf("a grid of 3 steps over one of 2: %v", err)
	}
}
