package diagrec

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
)

// Record is one diagnostics record: what Training returns, and what train appends to diagnostics.jsonl under
// "diagnostics" (as rundir.DiagLine) every train.diagnostics_interval steps. Writers and readers of that file
// (report, and through its JSON keys the Python side) use this type and the ones it holds, so a metric added
// to them reaches every reader. The fields are in the order of their JSON keys, and TensorWeights and
// ClassSummary (whose metrics are the table WeightMetrics) encode with sorted keys, so a record encodes to the same bytes as the maps diag wrote before
// these types existed (TestRecordReadsLandedFileAndReencodesIt).
type Record struct {
	Activations *ActivationStats `json:"activations"` // nil in a record without activation metrics
	Classes     []ClassSummary   `json:"classes"`     // SummariseClasses(Weights); absent in the oldest files
	Weights     []TensorWeights  `json:"weights"`
}

// TensorWeights are the weight metrics of one named matrix: one element of a record's "weights".
type TensorWeights struct {
	Name  string `json:"name"`
	Class string `json:"class"`
	Layer int    `json:"layer"` // −1 for embedding and head
	WeightStats
}

// MarshalJSON writes the snake_case keys of the json tags (those of WeightStats inline) documented in the
// README; a metric that was not computed (effective rank of a large matrix) or is not finite (a diverged
// model) is null.
func (t TensorWeights) MarshalJSON() ([]byte, error) { return marshalFinite(t) }

// UnmarshalJSON reads what MarshalJSON writes; a metric that is null or absent (a file from before it existed)
// is NaN.
func (t *TensorWeights) UnmarshalJSON(b []byte) error {
	type plain TensorWeights // without these methods
	return unmarshalFinite(b, (*plain)(t))
}

// marshalFinite encodes the struct v as a JSON object with the keys of its json tags (embedded structs without a
// tag inline, "-" and untagged exported fields as encoding/json treats them), sorted, and every NaN or infinite
// float64 as null, which encoding/json would refuse.
func marshalFinite(v any) ([]byte, error) {
	obj := map[string]any{}
	finiteFields(reflect.ValueOf(v), obj)
	return json.Marshal(obj)
}

func finiteFields(v reflect.Value, obj map[string]any) {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",") // options (omitempty) are not used by these types
		switch {
		case name == "-":
		case f.Anonymous && name == "" && fv.Kind() == reflect.Struct:
			finiteFields(fv, obj)
		default:
			if name == "" {
				name = f.Name
			}
			if fv.Kind() == reflect.Float64 && (math.IsNaN(fv.Float()) || math.IsInf(fv.Float(), 0)) {
				obj[name] = nil
			} else {
				obj[name] = fv.Interface()
			}
		}
	}
}

// unmarshalFinite decodes b into the struct *p (a type without UnmarshalJSON) after setting every float64 field
// to NaN, so that a null or missing metric reads as NaN (unknown) rather than 0.
func unmarshalFinite(b []byte, p any) error {
	nanFields(reflect.ValueOf(p).Elem())
	return json.Unmarshal(b, p)
}

func nanFields(v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		switch f, fv := t.Field(i), v.Field(i); {
		case !f.IsExported():
		case fv.Kind() == reflect.Float64:
			fv.SetFloat(math.NaN())
		case f.Anonymous && fv.Kind() == reflect.Struct:
			nanFields(fv)
		}
	}
}
