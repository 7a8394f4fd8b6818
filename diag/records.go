package diag

import "github.com/smallinit/smallinit/diag/diagrec"

// The record types of diagnostics.jsonl, of `smallinit compare --json` and of `smallinit coordcheck --json`,
// with the metric tables that name their fields: package diagrec's plain data, which readers below the model
// (a report) use, re-exported here where they are computed.
type (
	Record           = diagrec.Record
	TensorWeights    = diagrec.TensorWeights
	WeightStats      = diagrec.WeightStats
	WeightMetric     = diagrec.WeightMetric
	ClassSummary     = diagrec.ClassSummary
	LayerMetric      = diagrec.LayerMetric
	NormStat         = diagrec.NormStat
	LayerActivations = diagrec.LayerActivations
	ActivationStats  = diagrec.ActivationStats
	TokenGap         = diagrec.TokenGap
	GapBin           = diagrec.GapBin
	Comparison       = diagrec.Comparison
	CompareRecord    = diagrec.CompareRecord
	Coordcheck       = diagrec.Coordcheck
	CoordPoint       = diagrec.CoordPoint
	CoordFit         = diagrec.CoordFit
)

// The metric keys and figure names of the tables, and the sink threshold (diagrec's).
const (
	MetricStableRank = diagrec.MetricStableRank
	MetricMeanAbsCos = diagrec.MetricMeanAbsCos
	MetricCosRatio   = diagrec.MetricCosRatio
	MetricFracAbove  = diagrec.MetricFracAbove
	FigureSink       = diagrec.FigureSink
	FigureNorm       = diagrec.FigureNorm
	SinkThreshold    = diagrec.SinkThreshold
)

// WeightMetrics is diagrec.WeightMetrics, the table of weight metrics.
var WeightMetrics = diagrec.WeightMetrics

// LayerMetrics is diagrec.LayerMetrics, the table of per-layer activation metrics.
var LayerMetrics = diagrec.LayerMetrics

// SummariseClasses is diagrec.SummariseClasses.
func SummariseClasses(ws []TensorWeights) []ClassSummary { return diagrec.SummariseClasses(ws) }

// SinkRatePercent is diagrec.SinkRatePercent.
func SinkRatePercent(alpha []float64) float64 { return diagrec.SinkRatePercent(alpha) }
