package diagrec

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestWeightMetricsTable: every row's key is the JSON key under which a tensor's weights carry the value its Of
// reads (one spelling in tensors and class summaries), keys and old spellings are unique, and a class
// summary written with an old spelling reads as the current key.
func TestWeightMetricsTable(t *testing.T) {
	var ws WeightStats
	fill(reflect.ValueOf(&ws).Elem(), 1)
	b, err := json.Marshal(TensorWeights{Name: "w", Class: "q", WeightStats: ws})
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range WeightMetrics {
		v, ok := obj[m.Key].(float64)
		if !ok || v != m.Of(ws) {
			t.Errorf("metric %s: the tensor's JSON has %v under its key, Of gives %g", m.Key, obj[m.Key], m.Of(ws))
		}
		for _, k := range append([]string{m.Key}, m.OldKeys...) {
			if seen[k] {
				t.Errorf("key %s is listed twice", k)
			}
			seen[k] = true
		}
		if m.Name == "" {
			t.Errorf("metric %s has no name", m.Key)
		}
	}
	for _, old := range []string{`{"class":"q","tensors":2,"frac_above_0_9":0.25}`, `{"class":"q","tensors":2,"frac_above_09":0.25}`} {
		var c ClassSummary
		if err := json.Unmarshal([]byte(old), &c); err != nil {
			t.Fatal(err)
		}
		if c.Mean(MetricFracAbove) != 0.25 || c.Tensors != 2 || !math.IsNaN(c.Mean(MetricStableRank)) {
			t.Errorf("%s read as %v", old, c)
		}
	}
}

// TestSummariseClassesMeansFiniteValues: each class mean is over the finite values of its tensors, in
// first-seen class order, NaN with none.
func TestSummariseClassesMeansFiniteValues(t *testing.T) {
	ws := []TensorWeights{
		{Class: "q", WeightStats: WeightStats{StableRank: 2, CosRatio: 1, MeanAbsCos: 0.1, FracAbove09: math.NaN()}},
		{Class: "k", WeightStats: WeightStats{StableRank: 5, CosRatio: math.Inf(1), MeanAbsCos: 0.2, FracAbove09: math.NaN()}},
		{Class: "q", WeightStats: WeightStats{StableRank: 4, CosRatio: math.NaN(), MeanAbsCos: 0.3, FracAbove09: math.NaN()}},
	}
	cs := SummariseClasses(ws)
	if len(cs) != 2 || cs[0].Class != "q" || cs[0].Tensors != 2 || cs[1].Class != "k" {
		t.Fatalf("classes %v", cs)
	}
	for _, c := range []struct {
		class int
		key   string
		want  float64
	}{{0, MetricStableRank, 3}, {0, MetricCosRatio, 1}, {0, MetricMeanAbsCos, 0.2}, {1, MetricStableRank, 5}, {1, MetricCosRatio, math.NaN()}, {0, MetricFracAbove, math.NaN()}} {
		got := cs[c.class].Mean(c.key)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) && math.Abs(got-c.want) > 1e-15 {
			t.Errorf("class %s %s: %g, want %g", cs[c.class].Class, c.key, got, c.want)
		}
	}
}

// TestLayerMetricsTable: every row's key is a JSON key of a layer's activation record, its value is read from
// that layer, and it names a figure and a panel.
func TestLayerMetricsTable(t *testing.T) {
	l := LayerActivations{Layer: 1, AttnNorm: NormStat{Saturation: 0.1, OutputRMS: 0.7}, FFNNorm: NormStat{Saturation: 0.2, OutputRMS: 0.9},
		FirstTokenMass: []float64{0.2, 0.4}, SinkAlpha: []float64{0.1, 0.5, 0.6, 0.2}}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"first_token_mass": 0.3, "sink_alpha": 50, "attn_norm": 0.7, "ffn_norm": 0.9}
	for _, m := range LayerMetrics {
		if _, ok := obj[m.Key]; !ok {
			t.Errorf("metric %s: not a key of a layer's record %s", m.Key, b)
		}
		if w, ok := want[m.Key]; ok && math.Abs(m.Of(l)-w) > 1e-12 {
			t.Errorf("metric %s: %g, want %g", m.Key, m.Of(l), w)
		}
		if m.Figure == "" || m.Title == "" || m.Axis == "" {
			t.Errorf("metric %s has no figure, title or axis", m.Key)
		}
	}
	if !math.IsNaN(SinkRatePercent(nil)) {
		t.Error("the sink rate of no heads is not NaN")
	}
}
