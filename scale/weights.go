package scale

import (
	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/safetensors"
)

// WeightReport is diag.WeightReport on a checkpoint instead of a model in memory: it streams the matrices of
// specs from r, one at a time (the next ones read ahead, see StreamOptions), and measures each with
// diag.TensorReport, the per-matrix measurement of diag.WeightReport (diag.Weights, which uses every core; the
// embedding and an untied head measured on the rows of frequent, when given), so the results are those of
// diag.WeightReport on the loaded model (TestScaleWeightReportMatchesDiag, TestWeightReportMaxCosRowsAsDiag).
func WeightReport(r safetensors.Reader, specs []arch.TensorSpec, o diag.WeightOptions, frequent []int, so StreamOptions) ([]diagrec.TensorWeights, error) {
	var mats []arch.TensorSpec
	for _, t := range specs {
		if t.IsMatrix() {
			mats = append(mats, t)
		}
	}
	so.Concurrent = false // diag.Weights is parallel itself
	out := make([]diagrec.TensorWeights, 0, len(mats))
	err := Stream(r, mats, so, func(t arch.TensorSpec, w []float32) error {
		out = append(out, diag.TensorReport(t, w, o, frequent))
		return nil
	})
	return out, err
}
