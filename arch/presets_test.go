package arch

import (
	"math"
	"strings"
	"testing"
)

// TestScalePresets checks the table in ScalePresets' documentation.
func TestScalePresets(t *testing.T) {
	want := map[string][6]int{ // d, L, H, d_h, d_ff, parameters in units of 0.1M
		"0.1b": {768, 12, 12, 64, 2048, 1341}, "0.3b": {1024, 20, 16, 64, 2752, 3185},
		"0.7b": {1536, 22, 12, 128, 4096, 7212}, "1.5b": {2048, 28, 16, 128, 5504, 15478},
	}
	for _, p := range ScalePresets() {
		c := p.Config
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("unexpected preset %s", p.Name)
			continue
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		got := [6]int{c.Dim, c.Layers, c.Heads, c.HeadSize(), c.FFN, int(math.Round(float64(c.NumParams()) / 1e5))}
		if got != w || c.Vocab != 32000 || c.SeqLen != 2048 || p.Batch != 1 {
			t.Errorf("%s: %v V=%d T=%d B=%d, want %v V=32000 T=2048 B=1", p.Name, got, c.Vocab, c.SeqLen, p.Batch, w)
		}
	}
}

// TestLookupPreset: every listed name resolves to its preset, in any case; an unknown one is refused with every
// name listed.
func TestLookupPreset(t *testing.T) {
	all := append(Presets(), ScalePresets()...)
	if names := PresetNames(); len(names) != len(all) {
		t.Fatalf("PresetNames %v for %d presets", names, len(all))
	}
	for _, p := range all {
		for _, name := range []string{p.Name, strings.ToUpper(p.Name)} {
			got, err := LookupPreset(name)
			if err != nil || got.Name != p.Name || got.Batch != p.Batch || got.Config.NumParams() != p.Config.NumParams() {
				t.Errorf("LookupPreset(%q) = %s, %v", name, got.Name, err)
			}
		}
	}
	_, err := LookupPreset("7b")
	if err == nil {
		t.Fatal("7b accepted")
	}
	for _, name := range PresetNames() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %s", err, name)
		}
	}
}

// TestFollowHiddenSize: d_ff follows hidden_size only when hidden_size was overridden and intermediate_size
// was not.
func TestFollowHiddenSize(t *testing.T) {
	for _, tc := range []struct {
		dimSet, ffnSet bool
		want           int
	}{{false, false, 1000}, {true, false, DefaultFFN(320)}, {true, true, 1000}, {false, true, 1000}} {
		c := Config{Dim: 320, FFN: 1000}
		c.FollowHiddenSize(tc.dimSet, tc.ffnSet)
		if c.FFN != tc.want {
			t.Errorf("dim set %v, ffn set %v: d_ff %d, want %d", tc.dimSet, tc.ffnSet, c.FFN, tc.want)
		}
	}
}
