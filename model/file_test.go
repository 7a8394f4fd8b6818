package model

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/kernel"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	pool := kernel.NewPool(1)
	defer pool.Close()
	for _, tc := range switchCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newTestModel(t, tc.cfg, 1, pool)
			fillRandom(m, 1, 0.5)
			if err := m.Save(dir, map[string]any{"gamma": 1}); err != nil {
				t.Fatal(err)
			}
			got, init, err := Load(dir, 1, pool)
			if err != nil {
				t.Fatal(err)
			}
			if got.Config != m.Config {
				t.Errorf("config %+v, saved %+v", got.Config, m.Config)
			}
			var compact bytes.Buffer
			json.Compact(&compact, init)
			if compact.String() != `{"gamma":1}` {
				t.Errorf("init recipe %s", init)
			}
			for i, v := range m.Params.Flat {
				if got.Params.Flat[i] != v {
					t.Fatalf("parameter %d: %g, saved %g", i, got.Params.Flat[i], v)
				}
			}
		})
	}
}

func TestLoadRefusesBadModels(t *testing.T) {
	pool := kernel.NewPool(1)
	defer pool.Close()
	base := t.TempDir()
	m := newTestModel(t, testConfig(NormRMS, GateNone, 1e-5, false), 1, pool)
	fillRandom(m, 1, 0.5)
	if err := m.Save(base, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(base, ConfigFile))
	weights, _ := os.ReadFile(filepath.Join(base, WeightsFile))
	gated := newTestModel(t, testConfig(NormRMS, GateElementwise, 1e-5, false), 1, pool)
	gdir := t.TempDir()
	gated.Save(gdir, nil)
	gweights, _ := os.ReadFile(filepath.Join(gdir, WeightsFile))
	nan := newTestModel(t, testConfig(NormRMS, GateNone, 1e-5, false), 1, pool)
	nan.Params.Embed[3] = float32(nan.Params.Embed[3]) / 0 * 0
	ndir := t.TempDir()
	nan.Save(ndir, nil)
	nweights, _ := os.ReadFile(filepath.Join(ndir, WeightsFile))
	for _, tc := range []struct {
		name, want      string
		config, weights []byte
	}{
		{"missing config", "config.json", nil, weights},
		{"config not json", "config.json", []byte("{"), weights},
		{"negative size", "hidden_size", []byte(strings.Replace(string(cfg), `"hidden_size": 8`, `"hidden_size": -8`, 1)), weights},
		{"gqa", "grouped-query", []byte(strings.Replace(string(cfg), `"num_key_value_heads": 2`, `"num_key_value_heads": 1`, 1)), weights},
		{"unknown architecture", "model_type", []byte(strings.Replace(string(cfg), `"model_type": "llama"`, `"model_type": "gpt2"`, 1)), weights},
		{"missing weights", "model.safetensors", cfg, nil},
		{"truncated weights", "model.safetensors", cfg, weights[:len(weights)-10]},
		{"extra tensors", "unexpected tensors", cfg, gweights},
		{"wrong shape", "shape", []byte(strings.Replace(string(cfg), `"vocab_size": 16`, `"vocab_size": 17`, 1)), weights},
		{"nan weight", "NaN", cfg, nweights},
	} {
		dir := t.TempDir()
		if tc.config != nil {
			os.WriteFile(filepath.Join(dir, ConfigFile), tc.config, 0o644)
		}
		if tc.weights != nil {
			os.WriteFile(filepath.Join(dir, WeightsFile), tc.weights, 0o644)
		}
		_, _, err := Load(dir, 1, pool)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
