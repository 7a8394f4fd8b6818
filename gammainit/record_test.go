package gammainit

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/smallinit/smallinit/recipe"
)

// TestParseRecord: init.json as Go's loop and the Python side write it, and a config.json's smallinit_init,
// parse; a record without a valid recipe is refused.
func TestParseRecord(t *testing.T) {
	cases := []struct {
		name, json string
		ok         bool
	}{
		{"python init.json", `{"recipe": {"rule": "gamma", "gamma": 0.5}, "seed": 3, "tensors": [{"name": "q", "class": "q", "d_in": 8, "intended_std": 0.35, "drawn_std": 0.34, "gamma_eff": 0.5}]}`, true},
		{"smallinit_init", `{"recipe":{"rule":"fixed","gamma":0,"std":0.02},"seed":0}`, true},
		{"no recipe", `{"seed":1}`, false},
		{"bad rule", `{"recipe":{"rule":"magic","gamma":1}}`, false},
		{"null", `null`, false},
		{"not JSON", `{`, false},
	}
	for _, tc := range cases {
		_, err := ParseRecord([]byte(tc.json))
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestRecordBytesAsTheMapsBefore: a Record encodes to the same bytes as the untyped maps the writers encoded
// before it (a run's init.json, indented; a config.json's smallinit_init from a run and from the init
// command), so existing files and new ones are identical, and a record read back equals the one written.
func TestRecordBytesAsTheMapsBefore(t *testing.T) {
	g := 0.5
	ini := recipe.Init{Rule: recipe.RuleGamma, Gamma: 1, DepthScale: true, Classes: map[string]recipe.InitOverride{"ffn_down": {Gamma: &g}}}
	opt := recipe.DefaultAdamW()
	stds := []TensorStd{{Name: "model.layers.0.mlp.down_proj.weight", Class: "ffn_down", FanIn: 64, Intended: 0.125, Drawn: 0.1249, GammaEff: 0.5}}
	cases := []struct {
		name   string
		rec    Record
		before any
		indent bool
	}{
		{"init.json", Record{Optimizer: &opt, Recipe: ini, Seed: 7, Tensors: stds},
			map[string]any{"recipe": ini, "seed": uint64(7), "optimizer": opt, "tensors": stds}, true},
		{"smallinit_init", Record{Recipe: ini, Seed: 7}, map[string]any{"recipe": ini, "seed": uint64(7)}, false},
		{"smallinit_init, fixed std, seed 0", Record{Recipe: recipe.Init{Rule: recipe.RuleFixed, Std: 0.02}},
			map[string]any{"recipe": recipe.Init{Rule: recipe.RuleFixed, Std: 0.02}, "seed": uint64(0)}, false},
	}
	for _, tc := range cases {
		enc := json.Marshal
		if tc.indent {
			enc = func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
		}
		got, err := enc(tc.rec)
		if err != nil {
			t.Fatal(err)
		}
		want, err := enc(tc.before)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: record encodes to\n%s\nthe map to\n%s", tc.name, got, want)
		}
		back, err := ParseRecord(got)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(back, tc.rec) {
			t.Errorf("%s: read back %+v, wrote %+v", tc.name, back, tc.rec)
		}
	}
}
