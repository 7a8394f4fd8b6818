package diag

import (
	"math"
	"sort"

	"github.com/smallinit/smallinit/model"
)

// WeightReport measures every matrix of m with TensorReport.
func WeightReport(m *model.Model, o WeightOptions, frequent []int) []TensorWeights {
	var out []TensorWeights
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
func TensorReport(t model.TensorSpec, w []float32, o WeightOptions, frequent []int) TensorWeights {
	rows, cols := t.Shape[0], t.Shape[1]
	st := Weights(w, rows, cols, o)
	if (t.Class == model.ClassEmbed || t.Class == model.ClassHead) && len(frequent) > 0 {
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
	return TensorWeights{Name: t.Name, Class: t.Class, Layer: t.Layer, WeightStats: st}
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

// ClassSummary averages the weight metrics of the matrices of one class (over layers and experts). Each metric
// is the mean of its finite values (a one-row matrix, such as a shared-expert gate, has no row cosines); with
// none it is NaN, written as null.
type ClassSummary struct {
	Class      string  `json:"class"`
	Tensors    int     `json:"tensors"`
	StableRank float64 `json:"stable_rank"`
	MeanAbsCos float64 `json:"mean_abs_cos"`
	CosRatio   float64 `json:"cos_ratio"`
	FracAbove  float64 `json:"frac_above_0_9"`
}

// SummariseClasses groups a weight report by tensor class, in first-seen order.
func SummariseClasses(ws []TensorWeights) []ClassSummary {
	var out []ClassSummary
	type sums struct{ v, n [4]float64 }
	var acc []sums
	idx := map[string]int{}
	for _, w := range ws {
		i, ok := idx[w.Class]
		if !ok {
			i = len(out)
			idx[w.Class] = i
			out = append(out, ClassSummary{Class: w.Class})
			acc = append(acc, sums{})
		}
		out[i].Tensors++
		for k, v := range [4]float64{w.StableRank, w.MeanAbsCos, w.CosRatio, w.FracAbove09} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				acc[i].v[k] += v
				acc[i].n[k]++
			}
		}
	}
	for i := range out {
		var m [4]float64
		for k := range m {
			m[k] = acc[i].v[k] / acc[i].n[k] // 0/0 = NaN: no finite value
		}
		out[i].StableRank, out[i].MeanAbsCos, out[i].CosRatio, out[i].FracAbove = m[0], m[1], m[2], m[3]
	}
	return out
}
