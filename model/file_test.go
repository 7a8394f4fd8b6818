package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/safetensors"
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

// TestLoadShardedBFloat16: a checkpoint split into two bfloat16 shards with a model.safetensors.index.json
// (the Hugging Face layout of large models) loads, with every weight rounded to bfloat16.
func TestLoadShardedBFloat16(t *testing.T) {
	pool := kernel.NewPool(1)
	defer pool.Close()
	c := testConfig(NormRMS, GateHeadwise, 1e-5, false)
	m := newTestModel(t, c, 1, pool)
	fillRandom(m, 4, 0.5)
	dir := t.TempDir()
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, WeightsFile))
	weightMap := map[string]string{}
	shards := []*safetensors.Writer{
		safetensors.Create(filepath.Join(dir, "model-00001-of-00002.safetensors"), nil),
		safetensors.Create(filepath.Join(dir, "model-00002-of-00002.safetensors"), nil),
	}
	for i, ts := range m.Specs {
		s := i % 2
		if err := shards[s].AddFloat32As(ts.Name, safetensors.DType("BF16"), ts.Shape, m.Params.Flat[ts.Offset:ts.Offset+ts.Size()]); err != nil {
			t.Fatal(err)
		}
		weightMap[ts.Name] = fmt.Sprintf("model-0000%d-of-00002.safetensors", s+1)
	}
	for _, w := range shards {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644)
	got, _, err := Load(dir, 1, pool)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range m.Params.Flat {
		bf := math.Float32frombits(math.Float32bits(v) + 0x7FFF + (math.Float32bits(v)>>16)&1) // round to nearest even
		bf = math.Float32frombits(math.Float32bits(bf) &^ 0xFFFF)
		if got.Params.Flat[i] != bf {
			t.Fatalf("parameter %d: loaded %g, bfloat16 of %g is %g", i, got.Params.Flat[i], v, bf)
		}
	}
}
