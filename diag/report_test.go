package diag

import (
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/arch"
)

// TestTensorReportFrequentRowLimit: the row-cosine summaries of an embedding (rows are tokens) use the first
// MaxCosRows frequent tokens, every one of them when MaxCosRows < 0 and DefaultMaxCosRows when it is 0, and equal
// Weights on exactly those rows; a non-token matrix ignores frequent.
func TestTensorReportFrequentRowLimit(t *testing.T) {
	const rows, cols = 600, 8
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	frequent := make([]int, rows) // most frequent first: the highest ids
	for i := range frequent {
		frequent[i] = rows - 1 - i
	}
	embed := arch.TensorSpec{Name: "model.embed_tokens.weight", Class: arch.ClassEmbed, Layer: -1, Shape: []int{rows, cols}}
	for _, tc := range []struct {
		maxCosRows, wantRows int
	}{{-1, rows}, {0, DefaultMaxCosRows}, {100, 100}, {rows + 5, rows}} {
		o := WeightOptions{MaxCosRows: tc.maxCosRows}
		got := TensorReport(embed, w, o, frequent)
		ids := frequent[:tc.wantRows]
		want := Weights(SelectRows(w, cols, ids), len(ids), cols, o)
		if got.CosRowsUsed != tc.wantRows || got.MeanAbsCos != want.MeanAbsCos || got.FracAbove09 != want.FracAbove09 || got.CosRatio != want.CosRatio {
			t.Errorf("MaxCosRows %d: %d rows, mean |cos| %g; want %d rows, %g", tc.maxCosRows, got.CosRowsUsed, got.MeanAbsCos, tc.wantRows, want.MeanAbsCos)
		}
		if full := Weights(w, rows, cols, o); got.StableRank != full.StableRank || got.Name != embed.Name || got.Layer != -1 {
			t.Errorf("MaxCosRows %d: stable rank %g, want the whole matrix's %g", tc.maxCosRows, got.StableRank, full.StableRank)
		}
	}
	q := embed
	q.Class, q.Name = arch.ClassQ, "q"
	o := WeightOptions{MaxCosRows: -1}
	if got, want := TensorReport(q, w, o, frequent), Weights(w, rows, cols, o); got.WeightStats != want {
		t.Errorf("a q matrix used the frequent rows: %+v, want %+v", got.WeightStats, want)
	}
}
