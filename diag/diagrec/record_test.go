package diagrec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestRecordReadsLandedFileAndReencodesIt: every record of a diagnostics.jsonl written by the code as landed
// (from maps; testdata/README.md says how) decodes into Record with its metrics set, and encoding it again keeps
// every key and value (sameJSON; a metric added since may add keys). As of the commit that introduced Record
// the bytes were identical too (keys in the same sorted order).
func TestRecordReadsLandedFileAndReencodesIt(t *testing.T) {
	f, err := os.Open("testdata/diagnostics-landed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var steps []int
	for sc.Scan() {
		var line struct {
			Diagnostics json.RawMessage `json:"diagnostics"`
			Step        int             `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, line.Step)
		var r Record
		if err := json.Unmarshal(line.Diagnostics, &r); err != nil {
			t.Fatalf("step %d: %v", line.Step, err)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		// The class summaries' "frac_above_0_9" is now spelled as in the tensors' weights; it reads from the old key.
		landed := bytes.ReplaceAll(line.Diagnostics, []byte(`"frac_above_0_9"`), []byte(`"`+MetricFracAbove+`"`))
		if err := sameJSON(landed, out); err != nil {
			t.Errorf("step %d: the re-encoded record lost or changed a value of the landed one: %v", line.Step, err)
		}
		// 2 layers × (q, k, v, g, o) + layer 0's dense FFN (3) + layer 1's router, 2 experts and shared expert
		// (1 + 6 + 3 + shared gate 1), the embedding and the head.
		if len(r.Weights) != 2*5+3+11+2 || r.Activations == nil || len(r.Activations.Layers) != 2 {
			t.Fatalf("step %d: %d tensors, activations %v", line.Step, len(r.Weights), r.Activations)
		}
		w := r.Weights[0]
		if w.Name != "model.embed_tokens.weight" || w.Rows != 64 || w.Cols != 16 || !w.StableRankExact || !(w.StableRank > 1) ||
			!(w.EffectiveRank > 1) || !(w.CosRatio > 0) || w.CosRowsUsed != 64 || w.RandomBaseline != math.Sqrt(2/(math.Pi*16)) {
			t.Errorf("step %d: embedding %+v", line.Step, w)
		}
		if got, want := fmt.Sprint(r.Classes), fmt.Sprint(SummariseClasses(r.Weights)); got != want {
			t.Errorf("step %d: classes %v, want SummariseClasses %v", line.Step, got, want)
		}
		l1 := r.Activations.Layers[1]
		if len(l1.ExpertLoad) != 2 || len(l1.GateMean) != 2 || !(l1.RouterEntropy > 0) || len(r.Activations.Layers[0].ExpertLoad) != 0 ||
			!(r.Activations.ProbeLoss > 0) || !(r.Activations.FinalNorm.OutputRMS > 0) {
			t.Errorf("step %d: activations %+v", line.Step, r.Activations)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(steps, []int{0, 2, 4}) {
		t.Errorf("steps %v, want [0 2 4]", steps)
	}
}

// TestRecordRoundTrips: a record with every field of its weight types set (by reflection, so a metric added
// later is covered without editing this test) encodes and decodes to itself; a NaN or infinite metric is written
// as null and reads back as NaN, as does a key the file lacks.
func TestRecordRoundTrips(t *testing.T) {
	var tw TensorWeights
	fill(reflect.ValueOf(&tw).Elem(), 1)
	tw.PowerIters = 0 // not written (json:"-")
	cs := ClassSummary{Class: "q", Tensors: 4}
	for i := range WeightMetrics {
		cs.Means = append(cs.Means, float64(100+i)+0.25)
	}
	nan := tw
	nan.EffectiveRank, nan.MeanAbsCos, nan.SigmaMax = math.NaN(), math.Inf(1), math.Inf(-1)
	nanClass := ClassSummary{Class: "sh_gate", Tensors: 2, Means: make([]float64, len(WeightMetrics))}
	for i, m := range WeightMetrics {
		switch m.Key {
		case MetricStableRank:
			nanClass.Means[i] = 1
		case MetricFracAbove:
			nanClass.Means[i] = math.Inf(1)
		default:
			nanClass.Means[i] = math.NaN()
		}
	}
	act := ActivationStats{ProbeWindows: 3, ProbeLen: 8, ProbeLoss: 4.5, FirstTokenMass: 0.2, SinkRate: 25, FinalHiddenRMS: 1.5,
		FinalNorm: NormStat{Saturation: 1e-7, OutputRMS: 0.99},
		Layers: []LayerActivations{{Layer: 0, HiddenRMS: 0.06, AttnNorm: NormStat{0.5, 0.7}, FFNNorm: NormStat{0.1, 0.9}, AttnResidualRatio: 0.2,
			FFNResidualRatio: 0.06, FirstTokenMass: []float64{0.1, 0.2}, SinkAlpha: []float64{0.3, 0.4}, GateMean: []float64{0.5, 0.5},
			ExpertLoad: []float64{0.25, 0.75}, RouterEntropy: 0.6, Dropped: 2}}}
	in := Record{Activations: &act, Classes: []ClassSummary{cs, nanClass}, Weights: []TensorWeights{tw, nan}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"effective_rank":null`, `"mean_abs_cos":null`, `"sigma_max":null`, `"frac_abs_cos_above_0_9":null`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("encoded record has no %s:\n%s", key, b)
		}
	}
	if strings.Contains(string(b), "PowerIters") || strings.Contains(string(b), "power_iters") {
		t.Errorf("PowerIters was written:\n%s", b)
	}
	var out Record
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	want := in
	want.Weights = []TensorWeights{tw, nan}
	want.Weights[1].MeanAbsCos, want.Weights[1].SigmaMax = math.NaN(), math.NaN() // ±Inf is written as null
	want.Classes = []ClassSummary{cs, nanClass}
	want.Classes[1].Means[weightMetric(MetricFracAbove)] = math.NaN()
	if got, wnt := fmt.Sprintf("%+v %+v %+v", out.Weights, out.Classes, *out.Activations), fmt.Sprintf("%+v %+v %+v", want.Weights, want.Classes, *want.Activations); got != wnt {
		t.Errorf("round trip:\n got %s\nwant %s", got, wnt)
	}
	var old TensorWeights // a file from before a metric existed: the metric is unknown (NaN), not 0
	if err := json.Unmarshal([]byte(`{"name":"w","class":"q","layer":0,"rows":2,"cols":3,"stable_rank":1.5}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.StableRank != 1.5 || old.Rows != 2 || !math.IsNaN(old.CosRatio) || !math.IsNaN(old.FrobSq) || !math.IsNaN(old.RandomBaseline) {
		t.Errorf("partial line: %+v", old)
	}
}

// fill sets every exported field of the struct v (embedded structs included) to a distinct non-zero value.
func fill(v reflect.Value, seed int) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		seed++
		switch f.Kind() {
		case reflect.Struct:
			fill(f, seed*10)
		case reflect.Float64:
			f.SetFloat(float64(seed) + 0.25)
		case reflect.Int:
			f.SetInt(int64(seed))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString(fmt.Sprint("s", seed))
		default:
			panic("fill: no value for " + f.Kind().String())
		}
	}
}

// sameJSON reports an error unless every key of the JSON value old is in new with the same value
// (recursively; arrays element by element; numbers as float64, which the shortest encoding round-trips): new
// may have more keys.
func sameJSON(old, new []byte) error {
	var a, b any
	if err := json.Unmarshal(old, &a); err != nil {
		return err
	}
	if err := json.Unmarshal(new, &b); err != nil {
		return err
	}
	return sameValues("", a, b)
}

func sameValues(path string, a, b any) error {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: an object became %v", path, b)
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", path, k)
			}
			if err := sameValues(path+"."+k, v, w); err != nil {
				return err
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(y) != len(x) {
			return fmt.Errorf("%s: an array of %d became %v", path, len(x), b)
		}
		for i := range x {
			if err := sameValues(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); err != nil {
				return err
			}
		}
	default:
		if a != b {
			return fmt.Errorf("%s: %v became %v", path, a, b)
		}
	}
	return nil
}
