package arch

import (
	"strings"
	"testing"

	"github.com/smallinit/smallinit/override"
)

// TestFromPresetReadsTheOneDialect checks that a preset's overrides read short and sectioned model keys alike,
// that d_ff follows an overridden width, and that a key of another section is refused by name.
func TestFromPresetReadsTheOneDialect(t *testing.T) {
	short, _, err := FromPreset("tiny", []override.Set{{Key: "norm_eps", Value: 1e-12}, {Key: "hidden_size", Value: int64(256)}})
	if err != nil {
		t.Fatal(err)
	}
	long, _, err := FromPreset("tiny", []override.Set{{Key: "model.norm_eps", Value: 1e-12}, {Key: "model.hidden_size", Value: int64(256)}})
	if err != nil {
		t.Fatal(err)
	}
	if short != long || short.NormEps != 1e-12 || short.Dim != 256 || short.FFN != DefaultFFN(256) {
		t.Errorf("short %+v\nlong  %+v", short, long)
	}
	if _, _, err := FromPreset("tiny", []override.Set{{Key: "init.gamma", Value: 0.5}}); err == nil || !strings.Contains(err.Error(), "init.gamma") {
		t.Errorf("init.gamma on a preset: %v, want an error naming the key", err)
	}
	if _, _, err := FromPreset("tiny", []override.Set{{Key: "qk_norm", Value: "yes"}}); err == nil || !strings.Contains(err.Error(), "qk_norm") {
		t.Errorf("qk_norm = yes: %v, want an error naming the key", err)
	}
}
