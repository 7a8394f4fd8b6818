package diag

import (
	"sort"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/model"
)

// WeightReport measures every matrix of m with TensorReport.
func WeightReport(m *model.Model, o WeightOptions, frequent []int) []diagrec.TensorWeights {
	var out []diagrec.TensorWeights
	for _, t := range m.Specs {
		if t.IsMatrix() {
			out = append(out, TensorReport(t, m.Params.Flat[t.Offset:t.Offset+t.Size()], o, frequent))
		}
	}
	return out
}

// TensorReport measures the matrix t with values w (row-major, t.Shape) by Weights. For the embedding and an
// untied head, whose rows are tokens, the row-cosine summaries use the rows of frequent (when given: the most
// frequent tokens first) instead of a random subsample: the first o.MaxCosRows of them, every one when
// o.MaxCosRows < 0, DefaultMaxCosRows when it is 0. It is the one per-matrix measurement of WeightReport and of
// the streaming report of a checkpoint (scale.WeightReport), so the two cannot disagree.
func TensorReport(t arch.TensorSpec, w []float32, o WeightOptions, frequent []int) diagrec.TensorWeights {
	rows, cols := t.Shape[0], t.Shape[1]
	st := Weights(w, rows, cols, o)
	if (t.Class == arch.ClassEmbed || t.Class == arch.ClassHead) && len(frequent) > 0 {
		limit := o.MaxCosRows
		switch {
		case limit < 0:
			limit = len(frequent) // every row, as documented
		case limit == 0:
			limit = DefaultMaxCosRows
		}
		ids := frequent[:min(len(frequent), limit)]
		sub := Weights(SelectRows(w, cols, ids), len(ids), cols, o)
		st.MeanAbsCos, st.CosRatio, st.FracAbove09, st.CosRowsUsed, st.ZeroRows = sub.MeanAbsCos, sub.CosRatio, sub.FracAbove09, sub.CosRowsUsed, sub.ZeroRows
	}
	return diagrec.TensorWeights{Name: t.Name, Class: t.Class, Layer: t.Layer, WeightStats: st}
}

// FrequentTokens returns the token ids of toks ordered by decreasing count (ties: lower id first), the ones
// never seen left out.
func FrequentTokens(toks []int32, vocab int) []int {
	counts := make([]int, vocab)
	for _, t := range toks {
		if int(t) < vocab && t >= 0 {
			counts[t]++
		}
	}
	var ids []int
	for id, n := range counts {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	sort.SliceStable(ids, func(i, j int) bool { return counts[ids[i]] > counts[ids[j]] })
	return ids
}
