package diagrec

import (
	"encoding/json"
	"fmt"
	"math"
)

// JSON keys of the weight metrics (WeightMetrics), for callers that read one metric of a class summary.
const (
	MetricStableRank = "stable_rank"
	MetricMeanAbsCos = "mean_abs_cos"
	MetricCosRatio   = "cos_ratio"
	MetricFracAbove  = "frac_abs_cos_above_0_9"
)

// WeightMetric is one row of the weight-metric table: a metric of WeightStats (computed by Weights), its JSON
// key, which is the same in a tensor's weights and in its class summary, and how the report plots its
// per-class trajectory. Adding a metric is a WeightStats field with its computation and one row here: the
// class summaries (SummariseClasses, and ClassSummary's JSON) and the report's weight-trajectory figure follow
// the table.
type WeightMetric struct {
	Key     string                    // the JSON key (the json tag of its WeightStats field)
	OldKeys []string                  // earlier spellings of Key in class summaries, still read from existing files
	Of      func(WeightStats) float64 // the metric of one matrix
	Name    string                    // what the report calls it ("stable rank")
	// Axis is the y label of its trajectory panel ("": not plotted); short on a log axis, where gonum/plot pads
	// the plot's top by how far a long centred label would reach from the linear midpoint of the range.
	Axis string
	LogY bool // plotted on a log axis
}

// WeightMetrics is the table of weight metrics, in the order of the report's trajectory panels.
var WeightMetrics = []WeightMetric{
	{Key: MetricStableRank, Of: func(w WeightStats) float64 { return w.StableRank }, Name: "stable rank", Axis: "‖W‖F²/‖W‖₂²", LogY: true},
	{Key: MetricCosRatio, Of: func(w WeightStats) float64 { return w.CosRatio }, Name: "row-cosine ratio", Axis: "mean |cos| / random baseline"},
	{Key: MetricMeanAbsCos, Of: func(w WeightStats) float64 { return w.MeanAbsCos }, Name: "mean |cos|"},
	{Key: MetricFracAbove, OldKeys: []string{"frac_above_0_9", "frac_above_09"}, Of: func(w WeightStats) float64 { return w.FracAbove09 },
		Name: "share of row pairs with |cos| > 0.9"},
}

// weightMetric is the index of key's row in WeightMetrics (−1 when there is none).
func weightMetric(key string) int {
	for i, m := range WeightMetrics {
		if m.Key == key {
			return i
		}
	}
	return -1
}

// ClassSummary averages the weight metrics of the matrices of one class (over layers and experts). Each metric
// is the mean of its finite values (a one-row matrix, such as a shared-expert gate, has no row cosines); with
// none it is NaN, written as null.
type ClassSummary struct {
	Class   string
	Tensors int
	Means   []float64 // Means[i] is the mean of WeightMetrics[i]
}

// Mean is the class mean of the metric with JSON key key (NaN when the summary does not have it).
func (c ClassSummary) Mean(key string) float64 {
	if i := weightMetric(key); i >= 0 && i < len(c.Means) {
		return c.Means[i]
	}
	return math.NaN()
}

// String is the summary with its metrics by key.
func (c ClassSummary) String() string {
	s := fmt.Sprintf("{%s %d", c.Class, c.Tensors)
	for _, m := range WeightMetrics {
		s += fmt.Sprintf(" %s=%v", m.Key, c.Mean(m.Key))
	}
	return s + "}"
}

// MarshalJSON writes "class", "tensors" and every metric of the table under its key (sorted keys), a
// non-finite mean as null.
func (c ClassSummary) MarshalJSON() ([]byte, error) {
	obj := map[string]any{"class": c.Class, "tensors": c.Tensors}
	for _, m := range WeightMetrics {
		v := c.Mean(m.Key)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			obj[m.Key] = nil
		} else {
			obj[m.Key] = v
		}
	}
	return json.Marshal(obj)
}

// UnmarshalJSON reads what MarshalJSON writes, each metric under its key or one of its old spellings; a
// metric that is null or absent (a file from before it existed) is NaN.
func (c *ClassSummary) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*c = ClassSummary{Means: make([]float64, len(WeightMetrics))}
	if v, ok := obj["class"]; ok {
		if err := json.Unmarshal(v, &c.Class); err != nil {
			return fmt.Errorf("class summary: class: %w", err)
		}
	}
	if v, ok := obj["tensors"]; ok {
		if err := json.Unmarshal(v, &c.Tensors); err != nil {
			return fmt.Errorf("class summary: tensors: %w", err)
		}
	}
	for i, m := range WeightMetrics {
		c.Means[i] = math.NaN()
		for _, k := range append([]string{m.Key}, m.OldKeys...) {
			raw, ok := obj[k]
			if !ok {
				continue
			}
			var v *float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("class summary: %s: %w", k, err)
			}
			if v != nil {
				c.Means[i] = *v
			}
			break
		}
	}
	return nil
}

// SummariseClasses groups a weight report by tensor class, in first-seen order, with the mean of every metric
// of WeightMetrics over the finite values.
func SummariseClasses(ws []TensorWeights) []ClassSummary {
	var out []ClassSummary
	var sum, n [][]float64
	idx := map[string]int{}
	for _, w := range ws {
		i, ok := idx[w.Class]
		if !ok {
			i = len(out)
			idx[w.Class] = i
			out = append(out, ClassSummary{Class: w.Class})
			sum, n = append(sum, make([]float64, len(WeightMetrics))), append(n, make([]float64, len(WeightMetrics)))
		}
		out[i].Tensors++
		for k, m := range WeightMetrics {
			if v := m.Of(w.WeightStats); !math.IsNaN(v) && !math.IsInf(v, 0) {
				sum[i][k] += v
				n[i][k]++
			}
		}
	}
	for i := range out {
		out[i].Means = make([]float64, len(WeightMetrics))
		for k := range WeightMetrics {
			out[i].Means[k] = sum[i][k] / n[i][k] // 0/0 = NaN: no finite value
		}
	}
	return out
}

// Figures of the report that plot per-layer activation metrics (LayerMetric.Figure).
const (
	FigureSink = "attention-sink"  // attention to the first token
	FigureNorm = "norm-saturation" // the norms' output RMS
)

// LayerMetric is one row of the per-layer activation-metric table: a number for one layer of an activation
// record (a per-head metric summarised over the heads), its JSON key in the layer's record, and the panel that
// plots it against the layer. Adding a metric is a LayerActivations field with its computation (Activations)
// and one row here: the report draws a panel for it in its figure.
type LayerMetric struct {
	Key      string                         // the JSON key of its field in a layer's record
	Of       func(LayerActivations) float64 // its value for one layer
	Figure   string                         // the report figure holding its panel (FigureSink, FigureNorm)
	Title    string                         // the panel's title
	Axis     string                         // its y label
	YFrom0   bool                           // the y axis starts at 0
	YAtLeast float64                        // the y axis reaches at least this (0: no minimum)
	SharedY  bool                           // the panels of its figure share one y range
}

// LayerMetrics is the table of per-layer activation metrics, in panel order.
var LayerMetrics = []LayerMetric{
	{Key: "first_token_mass", Of: func(l LayerActivations) float64 { return meanFinite(l.FirstTokenMass) }, Figure: FigureSink,
		Title: "first-token attention mass", Axis: "mean over heads and queries of A[i, 0]", YFrom0: true},
	{Key: "sink_alpha", Of: func(l LayerActivations) float64 { return SinkRatePercent(l.SinkAlpha) }, Figure: FigureSink,
		Title: "sink rate", Axis: fmt.Sprintf("%% of heads with α > %g", SinkThreshold), YFrom0: true, YAtLeast: 100},
	{Key: "attn_norm", Of: func(l LayerActivations) float64 { return l.AttnNorm.OutputRMS }, Figure: FigureNorm,
		Title: "attention input norm: r = sqrt(m / (m + ε))", Axis: "r (1: ε negligible)", YAtLeast: 1, SharedY: true},
	{Key: "ffn_norm", Of: func(l LayerActivations) float64 { return l.FFNNorm.OutputRMS }, Figure: FigureNorm,
		Title: "FFN input norm: r = sqrt(m / (m + ε))", Axis: "r (1: ε negligible)", YAtLeast: 1, SharedY: true},
}

// meanFinite is the plain mean of xs (NaN when empty).
func meanFinite(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// SinkRatePercent is the percentage of heads whose first-token attention α exceeds SinkThreshold (NaN with no
// heads).
func SinkRatePercent(alpha []float64) float64 {
	if len(alpha) == 0 {
		return math.NaN()
	}
	n := 0
	for _, a := range alpha {
		if a > SinkThreshold {
			n++
		}
	}
	return 100 * float64(n) / float64(len(alpha))
}
