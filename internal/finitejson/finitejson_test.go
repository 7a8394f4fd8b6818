package finitejson

import (
	"encoding/json"
	"math"
	"testing"
)

type inner struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type withOwn struct{ X float64 }

func (withOwn) MarshalJSON() ([]byte, error) { return []byte(`"own"`), nil }

type sample struct {
	inner
	B      float64            `json:"b"` // hides inner.B
	F32    float32            `json:"f32"`
	Vals   []float64          `json:"vals"`
	Arr    [2]float64         `json:"arr"`
	ByKey  map[string]float64 `json:"by_key,omitempty"`
	ByInt  map[int]float64    `json:"by_int"`
	Ptr    *float64           `json:"ptr"`
	Opt    *inner             `json:"opt,omitempty"`
	Own    withOwn            `json:"own"`
	Name   string             `json:"name,omitempty"`
	Skip   float64            `json:"-"`
	Untagg int
	hidden float64
}

func finiteSample() sample {
	p := 2.5
	return sample{inner: inner{A: 1e-7, B: 3}, B: 4, F32: 0.1, Vals: []float64{1, 1e21, -0.5}, Arr: [2]float64{1, 2},
		ByKey: map[string]float64{"z": 1, "a": 2}, ByInt: map[int]float64{10: 1, 2: 2}, Ptr: &p, Own: withOwn{1},
		Name: "n", Skip: 9, Untagg: 7, hidden: 8}
}

// TestMarshalOfFiniteValuesIsEncodingJSONs checks that, with every number finite, Marshal writes the bytes
// encoding/json writes (field order, hiding, omitempty, map key order, nested MarshalJSON, number format).
func TestMarshalOfFiniteValuesIsEncodingJSONs(t *testing.T) {
	for _, v := range []any{finiteSample(), sample{}, inner{}, []inner{{1, 2}}, map[string]inner{"k": {}}} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("Marshal(%T):\n got %s\nwant %s", v, got, want)
		}
	}
}

// TestMarshalWritesNonFiniteAsNull checks each place a NaN or ±Inf can sit.
func TestMarshalWritesNonFiniteAsNull(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	s := finiteSample()
	s.A, s.B, s.F32 = nan, inf, float32(math.Inf(-1))
	s.Vals[1], s.Arr[0], s.ByKey["z"], s.ByInt[2] = nan, inf, nan, inf
	*s.Ptr = nan
	s.Opt = &inner{A: nan, B: 1}
	got, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":null,"b":null,"f32":null,"vals":[1,null,-0.5],"arr":[null,2],"by_key":{"a":2,"z":null},` +
		`"by_int":{"10":1,"2":null},"ptr":null,"opt":{"a":null,"b":1},"own":"own","name":"n","Untagg":7}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestUnmarshalReadsNullAndAbsentAsNaN reads back what Marshal wrote: the nulls, and a field absent from the
// input, come back as NaN; the finite numbers as written.
func TestUnmarshalReadsNullAndAbsentAsNaN(t *testing.T) {
	type rec struct {
		inner
		C float64 `json:"c"`
		D float64 `json:"d"`
		N int     `json:"n"`
	}
	var r rec
	if err := Unmarshal([]byte(`{"a":null,"b":2,"c":null,"n":3}`), &r); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(r.A) || r.B != 2 || !math.IsNaN(r.C) || !math.IsNaN(r.D) || r.N != 3 {
		t.Errorf("got %+v", r)
	}
	if err := Unmarshal([]byte(`{}`), r); err == nil {
		t.Error("Unmarshal into a non-pointer: no error")
	}
}

// TestMarshalRefusesStringOption checks that the one tag option it does not implement is an error, not a silent
// difference from encoding/json.
func TestMarshalRefusesStringOption(t *testing.T) {
	if _, err := Marshal(struct {
		X float64 `json:"x,string"`
	}{1}); err == nil {
		t.Error("no error")
	}
}
