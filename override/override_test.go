package override

import (
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestParseTypesValues: a value is read as TOML (so true is a bool, 1e-12 a float, 3 an int), a bare word as a
// string, and String writes what Parse reads back to the same value.
func TestParseTypesValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"model.qk_norm=true", true},
		{"model.norm_eps=1e-12", 1e-12},
		{"train.steps=3", int64(3)},
		{"model.attn_gate=elementwise", "elementwise"},
		{`model.attn_gate="none"`, "none"},
		{"init.gamma = 0.5", 0.5},
	} {
		s, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if !Equal(s.Value, tc.want) {
			t.Errorf("Parse(%q) = %#v, want %#v", tc.in, s.Value, tc.want)
		}
		back, err := Parse(s.String())
		if err != nil || !Equal(back.Value, s.Value) || back.Key != s.Key {
			t.Errorf("Parse(%q.String() = %q) = %#v, %v", tc.in, s.String(), back, err)
		}
	}
	for _, bad := range []string{"no-equals", "=3", ""} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// TestApplyNamesTheKeyOfAnUnknownOrMistypedValue: an unknown key and a value of the wrong type are errors naming the key.
func TestApplyNamesTheKeyOfAnUnknownOrMistypedValue(t *testing.T) {
	var dst struct {
		Model struct {
			QKNorm bool    `toml:"qk_norm"`
			Eps    float64 `toml:"norm_eps"`
		} `toml:"model"`
	}
	sets, err := ParseAll([]string{"model.qk_norm=true", "model.norm_eps=1e-12"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(sets, &dst); err != nil || !dst.Model.QKNorm || dst.Model.Eps != 1e-12 {
		t.Fatalf("Apply: %v, %+v", err, dst)
	}
	unknown, _ := ParseAll([]string{"model.qk_nrom=true"})
	if err := Apply(unknown, &dst); !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "model.qk_nrom") {
		t.Errorf("unknown key: %v", err)
	}
	wrong, _ := ParseAll([]string{"model.qk_norm=yes"})
	if err := Apply(wrong, &dst); err == nil || !strings.Contains(err.Error(), "model.qk_norm") {
		t.Errorf("a string for a bool: %v", err)
	}
}

// TestQualifyGivesShortKeysTheirSection checks the one rule for a key without a dot: a top-level key of the
// destination stays, any other joins the default section; dotted keys are untouched.
func TestQualifyGivesShortKeysTheirSection(t *testing.T) {
	type dst struct {
		Seed  uint64         `toml:"seed"`
		Model map[string]any `toml:"model"`
		Init  map[string]any `toml:"init"`
	}
	in := []Set{{"norm_eps", 1e-12}, {"seed", int64(3)}, {"init.gamma", 0.5}, {"model.hidden_size", int64(64)}, {"model", "x"}}
	want := []string{"model.norm_eps", "seed", "init.gamma", "model.hidden_size", "model"}
	got := Qualify(in, &dst{}, "model")
	for i, s := range got {
		if s.Key != want[i] || !Equal(s.Value, in[i].Value) {
			t.Errorf("%v: got %v, want key %s", in[i], s, want[i])
		}
	}
	if in[0].Key != "norm_eps" {
		t.Error("Qualify changed its input")
	}
}

// TestDocumentEscapesValues: a string value holding a quote and a newline (a path a user wrote) is written
// escaped into a grid file's [base] (Document), so it reads back as that one value and adds no key (issue 48,
// 3: nothing a user writes adds a line to a generated file).
func TestDocumentEscapesValues(t *testing.T) {
	evil := "/x\"\nbase = \"/etc/passwd\"\n[axes]\n"
	doc, err := Document([]Set{{Key: "data.val", Value: evil}, {Key: "init.gamma", Value: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(doc, "\n"); n != 2 {
		t.Errorf("%d lines for two keys:\n%s", n, doc)
	}
	var m map[string]any
	if _, err := toml.Decode(doc, &m); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	d, _ := m["data"].(map[string]any)
	if len(m) != 2 || len(d) != 1 || d["val"] != evil {
		t.Errorf("read back %#v, want data.val = %q and init.gamma", m, evil)
	}
}
