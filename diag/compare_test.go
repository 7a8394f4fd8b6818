package diag

import (
	"math"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag/diagrec"
)

func TestCompareWithItselfIsZeroAndBinsPartition(t *testing.T) {
	c := widthConfig(32, arch.GateNone)
	a := initModel(t, c, 0.5, 2)
	cmp, err := Compare(a, a, randomToks(5*64+1, 256), 4, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.All.MeanDeltaSym != 0 || cmp.All.MeanLogGap != 0 || cmp.All.WinShareA != 0 {
		t.Errorf("self-comparison: %+v", cmp.All)
	}
	total := 0
	for i, b := range cmp.Bins {
		total += b.Count
		if b.MeanDeltaSym != 0 {
			t.Errorf("bin %d: Δ_sym %g", i, b.MeanDeltaSym)
		}
		if i > 0 && b.Lo < cmp.Bins[i-1].Hi {
			t.Errorf("bin %d starts at %g before bin %d ends at %g", i, b.Lo, i-1, cmp.Bins[i-1].Hi)
		}
	}
	if total != 5*64 || cmp.All.Count != total {
		t.Errorf("bins hold %d tokens, all %d, want %d", total, cmp.All.Count, 5*64)
	}
}

// TestCompareLogGapIsLossDifference: the mean log gap equals loss_B − loss_A over the same tokens.
func TestCompareLogGapIsLossDifference(t *testing.T) {
	c := widthConfig(32, arch.GateNone)
	a, b := initModel(t, c, 0.5, 2), initModel(t, c, 1, 2)
	toks := randomToks(3*64+1, 256)
	var rows []diagrec.TokenGap
	cmp, err := Compare(a, b, toks, 10, 0, func(g diagrec.TokenGap) { rows = append(rows, g) })
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(cmp.All.MeanLogGap-(cmp.All.MeanLossB-cmp.All.MeanLossA)) > 1e-9 {
		t.Errorf("mean log gap %g, loss difference %g", cmp.All.MeanLogGap, cmp.All.MeanLossB-cmp.All.MeanLossA)
	}
	if len(rows) != 3*64 || rows[0].Pos != 1 || rows[0].Token != toks[1] {
		t.Errorf("rows: %d, first %+v", len(rows), rows[0])
	}
	for _, g := range rows {
		if g.DeltaSym < -1 || g.DeltaSym > 1 {
			t.Fatalf("Δ_sym %g outside [−1, 1]", g.DeltaSym)
		}
	}
}
