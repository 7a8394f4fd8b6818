package anchor

import (
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/model"
)

// MatrixCondensation is diag's condensation summary of one weight matrix: stable rank ‖W‖_F²/‖W‖₂², the
// mean |cos| between rows and its ratio to the random-direction baseline, and the share of row pairs with
// |cos| > 0.9 (2405.05409 §5.3 and App. D: condensed rows and a few dominant singular values go with the
// inferential solution).
type MatrixCondensation struct {
	Name        string  `json:"name"`
	Rows, Cols  int     `json:"-"`
	StableRank  float64 `json:"stable_rank"`
	MeanAbsCos  float64 `json:"mean_abs_cos"`
	CosRatio    float64 `json:"cos_ratio"`
	FracAbove09 float64 `json:"frac_abs_cos_above_0_9"`
}

// Condensation is a trained model's diagnostics: the item embeddings (tokens 20-99) and the first block's
// attention matrices W_Q, W_K, W_V, W_O, plus two row-cosine matrices for heatmaps: W_Q(1)'s rows clustered
// by diag.CosineMatrix (as 2405.05409 Fig. 5a-b and Fig. 10 group the neurons) and the item embeddings in
// value order (Fig. 5c-d's ordinal structure shows as bands).
type Condensation struct {
	Cell       Cell                 `json:"cell"`
	Matrices   []MatrixCondensation `json:"matrices"`
	QCos       []float32            `json:"-"`
	QRows      int                  `json:"-"`
	EmbedCos   []float32            `json:"-"`
	EmbedItems int                  `json:"-"`
}

// Condense computes the diagnostics of m (trained as cell c).
func Condense(m *model.Model, c Cell) Condensation {
	cf := m.Config
	d, hd := cf.Dim, cf.HeadSize()
	items := make([]int, 0, ItemMax-ItemMin+1)
	for x := ItemMin; x <= ItemMax; x++ {
		items = append(items, x)
	}
	emb := diag.SelectRows(m.Params.Embed, d, items)
	l0 := m.Params.Layers[0]
	q := l0.QKVG[:hd*d]
	k := l0.QKVG[hd*d : 2*hd*d]
	v := l0.QKVG[2*hd*d : 3*hd*d]
	o := diag.DefaultWeightOptions()
	o.Workers = 1
	out := Condensation{Cell: c}
	for _, mt := range []struct {
		name       string
		w          []float32
		rows, cols int
	}{{"embed (items 20-99)", emb, len(items), d}, {"W_Q(1)", q, hd, d}, {"W_K(1)", k, hd, d}, {"W_V(1)", v, hd, d}, {"W_O(1)", l0.O, d, hd}} {
		s := diag.Weights(mt.w, mt.rows, mt.cols, o)
		out.Matrices = append(out.Matrices, MatrixCondensation{Name: mt.name, Rows: mt.rows, Cols: mt.cols,
			StableRank: s.StableRank, MeanAbsCos: s.MeanAbsCos, CosRatio: s.CosRatio, FracAbove09: s.FracAbove09})
	}
	out.QCos, _ = diag.CosineMatrix(q, hd, d)
	out.QRows = hd
	// The embedding cosines in value order: undo CosineMatrix's clustering permutation.
	ce, order := diag.CosineMatrix(emb, len(items), d)
	n := len(items)
	out.EmbedCos = make([]float32, n*n)
	for a, i := range order {
		for b, j := range order {
			out.EmbedCos[i*n+j] = ce[a*n+b]
		}
	}
	out.EmbedItems = n
	return out
}
