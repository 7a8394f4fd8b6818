package recipe

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/override"
)

// tomlFlatten is what a reader of config.toml gets: c encoded, decoded and flattened (override.Flatten).
func tomlFlatten(t *testing.T, c Config) map[string]any {
	t.Helper()
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if _, err := toml.Decode(string(b), &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, s := range override.Flatten(m) {
		out[s.Key] = s.Value
	}
	return out
}

// TestFlattenIsConfigTomlFlattened: the dotted keys and typed values Flatten reads from the struct are those of
// the config's config.toml, decoded and flattened, for the defaults and for configs setting the optional keys
// (per-class init overrides, loss positions, snapshots, a precision, a MoE preset).
func TestFlattenIsConfigTomlFlattened(t *testing.T) {
	half := 0.5
	classes := Default()
	classes.Init.Classes = map[string]InitOverride{"q": {Gamma: &half}, "head": {Rule: RuleFixed, Std: &half}}
	optional := Default()
	optional.Train.LossPositions, optional.Train.SnapshotSteps, optional.Train.Precision = []int{9}, []int{100, 200}, "bf16"
	optional.Data = DataConfig{Train: "data/train.tok", Val: "data/val.tok"}
	moe, err := LoadSets("", []override.Set{{Key: KeyPreset, Value: "tiny-moe"}, {Key: KeyDataTrain, Value: "x.tok"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Config{"defaults": Default(), "init classes": classes, "optional keys": optional, "moe": moe} {
		t.Run(name, func(t *testing.T) {
			got, want := c.Flatten(), tomlFlatten(t, c)
			if !reflect.DeepEqual(got, want) {
				for k, v := range want {
					if !reflect.DeepEqual(got[k], v) {
						t.Errorf("%s: Flatten %#v, config.toml %#v", k, got[k], v)
					}
				}
				for k, v := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("%s: Flatten %#v, not in config.toml", k, v)
					}
				}
			}
		})
	}
}

// TestLoadSetsReadsTheFileOnceThenTheOverrides: the file's keys apply over the preset it names, the overrides
// over the file (a later preset wins, d_ff follows an overridden width), and what comes back encodes and loads
// to the same config; an unknown or mistyped key is an error naming the key and where it came from.
func TestLoadSetsReadsTheFileOnceThenTheOverrides(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.toml")
	text := "seed = 3\n[model]\npreset = \"tiny\"\nnorm_eps = 1e-12\n[init]\ngamma = 1\n[init.classes.q]\ngamma = 0.25\n" +
		"[train]\nsteps = 40\nloss_positions = [1, 2]\n[data]\ntrain = \"t.tok\"\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadSets(path, []override.Set{{Key: KeyGamma, Value: 0.5}, {Key: "hidden_size", Value: int64(128)}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed != 3 || c.Model.Preset != "tiny" || c.Model.NormEps != 1e-12 || c.Init.Gamma != 0.5 ||
		*c.Init.Classes["q"].Gamma != 0.25 || c.Train.Steps != 40 || !reflect.DeepEqual(c.Train.LossPositions, []int{1, 2}) ||
		c.Model.Dim != 128 || c.Model.FFN != 384 || c.Data.Train != "t.tok" {
		t.Errorf("loaded %+v", c)
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(again, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if back, err := LoadSets(again, nil); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("config.toml loads back as %+v (%v), want %+v", back, err, c)
	}
	// The preset the overrides name replaces the file's, under the file's own model keys (in any case).
	if err := os.WriteFile(path, []byte("[model]\npreset = \"small\"\nnorm_eps = 1e-12\nNum_Hidden_Layers = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny, err := arch.LookupPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	c, err = LoadSets(path, []override.Set{{Key: KeyPreset, Value: "tiny"}, {Key: KeyDataTrain, Value: "x.tok"}})
	if err != nil || c.Model.Preset != "tiny" || c.Model.Dim != tiny.Config.Dim || c.Model.NormEps != 1e-12 ||
		c.Model.Layers != 3 || c.Train.BatchSize != tiny.Batch {
		t.Errorf("file on small, overrides on tiny: %+v (%v)", c.Model, err)
	}
	for _, tc := range []struct {
		name, file string
		sets       []override.Set
		want       string
		unknown    bool
	}{
		{"unknown key in the file", "[model]\nhidden_sise = 3\n", nil, "run.toml: unknown key model.hidden_sise", true},
		{"unknown override", "", []override.Set{{Key: "model.hidden_sise", Value: int64(3)}}, "overrides: unknown key model.hidden_sise", true},
		{"mistyped override", "", []override.Set{{Key: KeySteps, Value: "many"}}, `overrides: train.steps = "many": want an integer`, false},
		{"unknown preset", "", []override.Set{{Key: KeyPreset, Value: "huge"}}, "model.preset", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ""
			if tc.file != "" {
				p = filepath.Join(dir, "run.toml")
				os.WriteFile(p, []byte(tc.file), 0o644)
			}
			_, err := LoadSets(p, append([]override.Set{{Key: KeyDataTrain, Value: "x.tok"}}, tc.sets...))
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, override.ErrUnknownKey) != tc.unknown {
				t.Errorf("error %v, want one containing %q (unknown key: %v)", err, tc.want, tc.unknown)
			}
		})
	}
}

// TestEncodeEscapesStrings: a run config whose string values hold a quote and a newline (data paths a user
// wrote) is written into config.toml escaped, and reads back as the same config (issue 48, 3).
func TestEncodeEscapesStrings(t *testing.T) {
	c := Default()
	c.Data.Train = "/x\"\n[train]\nsteps = 1\n"
	c.Data.Val = "/v\tw"
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if _, err := toml.Decode(string(b), &back); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if back.Data != c.Data || back.Train.Steps != c.Train.Steps {
		t.Errorf("read back data %+v, steps %d; want %+v, %d", back.Data, back.Train.Steps, c.Data, c.Train.Steps)
	}
}
