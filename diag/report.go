package diag

import (
	"sort"

	"github.com/smallinit/smallinit/model"
)

// TensorWeights are the weight metrics of one named matrix.
type TensorWeights struct {
	Name  string `json:"name"`
	Class string `json:"class"`
	Layer int    `json:"layer"` // −1 for embedding and head
	WeightStats
}

// WeightReport measures every matrix of m. For the embedding and an untied head, whose rows are tokens, the
// row-cosine summaries use the rows of frequent (when given: the most frequent tokens first) instead of a
// random subsample.
func WeightReport(m *model.Model, o WeightOptions, frequent []int) []TensorWeights {
	var out []TensorWeights
	for _, t := range m.Specs {
		if !t.IsMatrix() {
			continue
		}
		w := m.Params.Flat[t.Offset : t.Offset+t.Size()]
		rows, cols := t.Shape[0], t.Shape[1]
		st := Weights(w, rows, cols, o)
		if (t.Class == model.ClassEmbed || t.Class == model.ClassHead) && len(frequent) > 0 {
			ids := frequent[:min(len(frequent), max(o.MaxCosRows, 2))]
			sub := Weights(SelectRows(w, cols, ids), len(ids), cols, o)
			st.MeanAbsCos, st.CosRatio, st.FracAbove09, st.CosRowsUsed, st.ZeroRows = sub.MeanAbsCos, sub.CosRatio, sub.FracAbove09, sub.CosRowsUsed, sub.ZeroRows
		}
		out = append(out, TensorWeights{Name: t.Name, Class: t.Class, Layer: t.Layer, WeightStats: st})
	}
	return out
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

// ClassSummary averages the weight metrics of the matrices of one class (over layers and experts).
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
	idx := map[string]int{}
	for _, w := range ws {
		i, ok := idx[w.Class]
		if !ok {
			i = len(out)
			idx[w.Class] = i
			out = append(out, ClassSummary{Class: w.Class})
		}
		s := &out[i]
		s.Tensors++
		s.StableRank += w.StableRank
		s.MeanAbsCos += w.MeanAbsCos
		s.CosRatio += w.CosRatio
		s.FracAbove += w.FracAbove09
	}
	for i := range out {
		n := float64(out[i].Tensors)
		out[i].StableRank /= n
		out[i].MeanAbsCos /= n
		out[i].CosRatio /= n
		out[i].FracAbove /= n
	}
	return out
}
