package analyze

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/scale"
)

// TestMeasureWeightsOnly measures a freshly initialised tiny model without a token file: one weight record per
// matrix, one class summary per matrix class, no activations, and a text report that names every class.
func TestMeasureWeightsOnly(t *testing.T) {
	p, err := arch.LookupPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config
	c.Layers = 1
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := scale.Init(dir, c, recipe.DefaultInit(), 0, scale.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := Measure(dir, Options{Probes: 1, ProbeLen: 8})
	if err != nil {
		t.Fatal(err)
	}
	matrices, classes := 0, map[string]bool{}
	for _, s := range c.Tensors() {
		if s.IsMatrix() {
			matrices++
			classes[s.Class] = true
		}
	}
	if len(a.Weights) != matrices || len(a.Classes) != len(classes) || a.Activations != nil {
		t.Errorf("%d weights (want %d), %d classes (want %d), activations %v", len(a.Weights), matrices, len(a.Classes), len(classes), a.Activations)
	}
	var b bytes.Buffer
	a.WriteText(&b, false)
	for class := range classes {
		if !strings.Contains(b.String(), class) {
			t.Errorf("text report names no %s", class)
		}
	}
	if _, err := Measure(dir, Options{Probes: 0, ProbeLen: 8}); err == nil {
		t.Error("0 probes: no error")
	}
	// A probe longer than the context was cut to it in silence (issue 48, 5); the default fits any context.
	for _, tc := range []struct {
		probeLen int
		want     string // "": accepted
	}{
		{0, ""}, {2, ""}, {c.SeqLen, ""},
		{1, "need at least 1 probe of at least 2 tokens"},
		{c.SeqLen + 1, fmt.Sprintf("probe length %d: must be in [2, %d], the model's context", c.SeqLen+1, c.SeqLen)},
		{1 << 30, fmt.Sprintf("probe length %d: must be in [2, %d]", 1<<30, c.SeqLen)},
	} {
		_, err := Measure(dir, Options{Probes: 1, ProbeLen: tc.probeLen})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--probe-len %d: %v, want %q", tc.probeLen, err, tc.want)
		}
	}
}
