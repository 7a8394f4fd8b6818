package scale

import (
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/safetensors"
)

// WeightReport is diag.WeightReport on a checkpoint instead of a model in memory: it streams the matrices of
// specs from r, one at a time (the next ones read ahead, see StreamOptions), and measures each with
// diag.Weights, which uses every core. For the embedding and an untied head the row-cosine summaries use the
// rows of frequent (when given) instead of a random subsample, as diag.WeightReport does; the results are the
// same as diag.WeightReport's on the loaded model (TestScaleWeightReportMatchesDiag).
func WeightReport(r safetensors.Reader, specs []model.TensorSpec, o diag.WeightOptions, frequent []int, so StreamOptions) ([]diag.TensorWeights, error) {
	var mats []model.TensorSpec
	for _, t := range specs {
		if t.IsMatrix() {
			mats = append(mats, t)
		}
	}
	so.Concurrent = false // diag.Weights is parallel itself
	out := make([]diag.TensorWeights, 0, len(mats))
	err := Stream(r, mats, so, func(t model.TensorSpec, w []float32) error {
		out = append(out, TensorWeights(t, w, o, frequent))
		return nil
	})
	return out, err
}

// TensorWeights measures one matrix t with values w as diag.WeightReport does: diag.Weights, with the
// row-cosine summaries of the embedding and an untied head taken over the rows of the frequent tokens (the
// first MaxCosRows of them) when frequent is not empty.
func TensorWeights(t model.TensorSpec, w []float32, o diag.WeightOptions, frequent []int) diag.TensorWeights {
	rows, cols := t.Shape[0], t.Shape[1]
	st := diag.Weights(w, rows, cols, o)
	if (t.Class == model.ClassEmbed || t.Class == model.ClassHead) && len(frequent) > 0 {
		limit := o.MaxCosRows
		if limit <= 0 {
			limit = diag.DefaultMaxCosRows
		}
		ids := frequent[:min(len(frequent), limit)]
		sub := diag.Weights(diag.SelectRows(w, cols, ids), len(ids), cols, o)
		st.MeanAbsCos, st.CosRatio, st.FracAbove09, st.CosRowsUsed, st.ZeroRows = sub.MeanAbsCos, sub.CosRatio, sub.FracAbove09, sub.CosRowsUsed, sub.ZeroRows
	}
	return diag.TensorWeights{Name: t.Name, Class: t.Class, Layer: t.Layer, WeightStats: st}
}
