package override

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// typedDoc is a destination with every shape a run config has: a top-level scalar, sections, an untagged
// embedded struct, a map of structs with pointer fields, lists, a skipped field and omitempty fields.
type typedDoc struct {
	Seed  uint64 `toml:"seed"`
	Model struct {
		Preset string `toml:"preset"`
		typedShape
	} `toml:"model"`
	Init struct {
		Gamma   float64                  `toml:"gamma"`
		Classes map[string]typedOverride `toml:"classes"`
	} `toml:"init"`
	Train struct {
		Steps     int     `toml:"steps"`
		Positions []int   `toml:"loss_positions"`
		Snapshots []int   `toml:"snapshot_steps,omitempty"`
		Precision string  `toml:"precision,omitempty"`
		Total     int     `toml:"-"`
		Ratio     float32 `toml:"ratio"`
		Skip      bool    `toml:"skip_nonfinite"`
	} `toml:"train"`
}

type typedShape struct {
	Dim     int     `toml:"hidden_size"`
	NormEps float64 `toml:"norm_eps"`
}

type typedOverride struct {
	Rule  string   `toml:"rule,omitempty"`
	Gamma *float64 `toml:"gamma"`
}

// TestApplySetsTypedFields: each override lands in its field with the field's type (an integer in a float field,
// a list in a slice, a map entry created and then amended), with no text in between.
func TestApplySetsTypedFields(t *testing.T) {
	var d typedDoc
	sets := []Set{
		{"seed", int64(7)}, {"model.preset", "tiny"}, {"model.hidden_size", int64(256)}, {"model.norm_eps", 1e-12},
		{"init.gamma", int64(1)}, {"init.classes.q.gamma", 0.5}, {"init.classes.q.rule", "gamma"},
		{"init.classes.o", map[string]any{"rule": "kaiming"}},
		{"train.loss_positions", []any{int64(9), int64(3)}}, {"train.steps", 40}, {"train.ratio", 0.25},
		{"train.Skip_NonFinite", true}, // another case of the tag, as TOML decoding accepts
	}
	if err := Apply(sets, &d); err != nil {
		t.Fatal(err)
	}
	half := 0.5
	want := typedDoc{Seed: 7}
	want.Model.Preset, want.Model.Dim, want.Model.NormEps = "tiny", 256, 1e-12
	want.Init.Gamma = 1
	want.Init.Classes = map[string]typedOverride{"q": {Rule: "gamma", Gamma: &half}, "o": {Rule: "kaiming"}}
	want.Train.Steps, want.Train.Positions, want.Train.Ratio, want.Train.Skip = 40, []int{9, 3}, 0.25, true
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Apply gave\n%+v\nwant\n%+v", d, want)
	}
}

// TestApplyNamesTheKey: an unknown key, a value of the wrong type, an out-of-range integer and a key below a
// scalar are errors naming the key and what its field wants.
func TestApplyNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     Set
		want    string
		unknown bool
	}{
		{"unknown key", Set{"model.hidden_sise", int64(3)}, "unknown key model.hidden_sise", true},
		{"unknown section", Set{"colour", int64(1)}, "unknown key colour", true},
		{"skipped field", Set{"train.Total", int64(1)}, "unknown key train.Total", true},
		{"string for a bool", Set{"train.skip_nonfinite", "yes"}, `train.skip_nonfinite = "yes": want true or false`, false},
		{"float for an integer", Set{"train.steps", 1.5}, "train.steps = 1.5: want an integer", false},
		{"string for a number", Set{"init.gamma", "half"}, `init.gamma = "half": want a number`, false},
		{"negative seed", Set{"seed", int64(-1)}, "seed = -1: out of the range of uint64", false},
		{"scalar for a list", Set{"train.loss_positions", int64(3)}, "train.loss_positions = 3: want a list", false},
		{"bad list element", Set{"train.loss_positions", []any{int64(1), "x"}}, `train.loss_positions[1] = "x": want an integer`, false},
		{"key below a scalar", Set{"init.gamma.x", int64(1)}, "init.gamma.x: init.gamma is a number, not a table", false},
		{"scalar for a table", Set{"model", int64(5)}, "model = 5: want a table", false},
		{"string not UTF-8", Set{"model.preset", "\xff"}, `model.preset = "\xff": not valid UTF-8`, false},
		{"float not finite", Set{"init.gamma", math.Inf(1)}, "init.gamma = +Inf: not finite", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d typedDoc
			err := Apply([]Set{tc.set}, &d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if errors.Is(err, ErrUnknownKey) != tc.unknown {
				t.Errorf("errors.Is(ErrUnknownKey) = %v, want %v", !tc.unknown, tc.unknown)
			}
		})
	}
	if err := Apply(nil, typedDoc{}); err == nil {
		t.Error("Apply to a struct value, not a pointer: no error")
	}
}

// TestStructIsTheTOMLFormFlattened: Struct gives what encoding a value to TOML, decoding it and flattening it
// gives (so a reader of the typed value sees the keys of the file), and Apply turns those sets back into the
// value.
func TestStructIsTheTOMLFormFlattened(t *testing.T) {
	half := 0.5
	full := typedDoc{Seed: 3}
	full.Model.Preset, full.Model.Dim, full.Model.NormEps = "small", 512, 1e-5
	full.Init.Gamma = 0.75
	full.Init.Classes = map[string]typedOverride{"q": {Gamma: &half}, "head": {Rule: "fixed"}}
	full.Train.Steps, full.Train.Positions, full.Train.Snapshots, full.Train.Precision = 9, []int{1, 2}, []int{4}, "bf16"
	full.Train.Ratio, full.Train.Total = 0.5, 99
	empty := typedDoc{}
	empty.Init.Classes = map[string]typedOverride{}
	for _, tc := range []struct {
		name string
		v    typedDoc
	}{{"every field set", full}, {"zero value", typedDoc{}}, {"empty map", empty}} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := toml.NewEncoder(&b).Encode(tc.v); err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if _, err := toml.Decode(b.String(), &m); err != nil {
				t.Fatal(err)
			}
			want := Flatten(m)
			got := Struct(tc.v)
			if len(got) != len(want) {
				t.Fatalf("Struct has %d keys, the TOML form %d:\n%v\n%v", len(got), len(want), got, want)
			}
			for i := range got {
				if got[i].Key != want[i].Key || !reflect.DeepEqual(got[i].Value, want[i].Value) {
					t.Errorf("key %d: Struct %s = %#v, TOML form %s = %#v", i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
				}
			}
			var back typedDoc
			if err := Apply(got, &back); err != nil {
				t.Fatal(err)
			}
			back.Train.Total = tc.v.Train.Total // "-": not a key
			if len(tc.v.Init.Classes) == 0 {
				back.Init.Classes = tc.v.Init.Classes // an empty table adds no key
			}
			if !reflect.DeepEqual(back, tc.v) {
				t.Errorf("Apply(Struct(v)) = %+v, want %+v", back, tc.v)
			}
		})
	}
}
