package diag

import (
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/model"
)

// Training is the diagnostics a training run appends to diagnostics.jsonl every train.diagnostics_interval
// steps (train.Options.Diagnostics; the train command, the demo and every sweep run use it), a diagrec.Record: every
// matrix's weight metrics, their per-class means, and the activation metrics on 16 probe windows of 64 tokens.
func Training(_ int, m *model.Model, probe []int32) (any, error) {
	w := WeightReport(m, DefaultWeightOptions(), nil)
	a, err := Activations(m, probe, 16, min(64, m.Config.SeqLen))
	if err != nil {
		return nil, err
	}
	return diagrec.Record{Activations: &a, Classes: diagrec.SummariseClasses(w), Weights: w}, nil
}
