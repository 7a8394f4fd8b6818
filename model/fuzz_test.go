package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/allocs"

	"github.com/smallinit/smallinit/kernel"
)

// savedTestModel saves a randomly filled testConfig model into a new directory and returns its config.json
// and model.safetensors bytes.
func savedTestModel(tb testing.TB, c arch.Config) (config, weights []byte) {
	tb.Helper()
	pool := kernel.NewPool(1)
	defer pool.Close()
	m, err := New(c, 1, pool)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range m.Params.Flat {
		m.Params.Flat[i] = float32(i%7) / 7
	}
	dir := tb.TempDir()
	if err := m.Save(dir, map[string]any{"rule": "gamma"}); err != nil {
		tb.Fatal(err)
	}
	config, _ = os.ReadFile(filepath.Join(dir, arch.ConfigFile))
	weights, _ = os.ReadFile(filepath.Join(dir, arch.WeightsFile))
	return config, weights
}

// configSeeds are config.json files for FuzzReadConfig and FuzzLoad: every architecture switch as written by
// Save, Hugging Face spellings, and broken ones.
func configSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, tc := range switchCases {
		c, _ := savedTestModel(f, tc.cfg)
		out = append(out, c)
	}
	out = append(out,
		[]byte(`{"model_type":"qwen3","vocab_size":16,"hidden_size":8,"intermediate_size":16,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":2,"max_position_embeddings":6,"rms_norm_eps":1e-6,"rope_theta":1000000,"tie_word_embeddings":true,"rope_scaling":null}`),
		[]byte(`{"vocab_size":16777216,"hidden_size":512,"intermediate_size":16,"num_hidden_layers":2,"num_attention_heads":2,"max_position_embeddings":16777216,"rms_norm_eps":1e-5}`),
		// rope_scaling fields that the scaling does not read, and no scaling named (found by the fuzzer).
		[]byte(`{"vocab_size":6,"hidden_size":8,"intermediate_size":6,"num_hidden_layers":2,"num_attention_heads":2,"max_position_embeddings":6,"rms_norm_eps":0.01,"rope_theta":10,"rope_scaling":{"original_max_position_embeddings":1000}}`),
		[]byte(`{"vocab_size":6,"hidden_size":8,"intermediate_size":6,"num_hidden_layers":2,"num_attention_heads":2,"max_position_embeddings":6,"rms_norm_eps":0.01,"rope_theta":10,"rope_scaling":{"type":"linear","factor":2,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":1000}}`),
		[]byte(`{"vocab_size":-1}`),
		[]byte(`{"hidden_size":1e400}`),
		[]byte(`{"num_experts":1024,"num_experts_per_tok":1024,"moe_intermediate_size":1048576}`),
		[]byte(`[]`),
		[]byte(``),
	)
	return out
}

// FuzzReadConfig reads arbitrary bytes as config.json. A config it accepts must pass Config.Validate and
// survive a save and reload unchanged; errors must name the file; it may allocate at most 1 MB plus 64 bytes per
// byte of input (it reads the file and decodes JSON, and allocates nothing the config's sizes ask for).
func FuzzReadConfig(f *testing.F) {
	for _, b := range configSeeds(f) {
		f.Add(b)
	}
	dir, again := f.TempDir(), f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, arch.ConfigFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var c arch.Config
		var err error
		n := allocs.Bytes(func() { c, _, err = ReadConfig(dir) })
		if limit := uint64(1<<20 + 64*len(b)); n > limit {
			t.Fatalf("ReadConfig of %d bytes allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if err != nil {
			if !strings.Contains(err.Error(), filepath.Join(dir, arch.ConfigFile)) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ReadConfig accepted a config that fails Validate: %v", err)
		}
		if err := writeConfig(again, c, nil); err != nil {
			t.Fatal(err)
		}
		c2, _, err := ReadConfig(again)
		if err != nil || c2 != c {
			t.Fatalf("config does not survive a save and reload: %+v\nreloaded %+v (%v)", c, c2, err)
		}
	})
}

// FuzzLoad loads a model directory with an arbitrary config.json beside a fixed, valid model.safetensors (a
// testConfig model). A config that does not describe the file's tensors must fail before the model is
// allocated; one that loads must allocate no more than MemoryBytes estimates for it plus the input-size bound
// of the readers. Configs whose estimate is over 64 MB are skipped (TestLoadChecksSizesFirst covers them).
func FuzzLoad(f *testing.F) {
	for _, b := range configSeeds(f) {
		f.Add(b)
	}
	dir := f.TempDir()
	_, weights := savedTestModel(f, testConfig(arch.NormRMS, arch.GateNone, 1e-5, false))
	if err := os.WriteFile(filepath.Join(dir, arch.WeightsFile), weights, 0o644); err != nil {
		f.Fatal(err)
	}
	pool := kernel.NewPool(1)
	f.Cleanup(pool.Close)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, arch.ConfigFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, _, err := ReadConfig(dir)
		est := 0.0
		if err == nil {
			if est = MemoryBytes(c, 1, pool.Workers()); est > 64<<20 {
				t.Skip("fuzz input out of scope: estimated memory over 64 MB")
			}
		}
		var m *Model
		n := allocs.Bytes(func() { m, _, err = Load(dir, 1, pool) })
		if limit := uint64(1.25*est) + 4<<20 + 64*uint64(len(b)+len(weights)); n > limit {
			t.Fatalf("Load allocated %d bytes (limit %d, estimate %.0f)", n, limit, est)
		}
		if err != nil {
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error does not name the directory: %v", err)
			}
			return
		}
		if m.Config.NumParams() != int64(len(m.Params.Flat)) {
			t.Fatalf("config of %d parameters, %d loaded", m.Config.NumParams(), len(m.Params.Flat))
		}
	})
}

// TestLoadChecksSizesFirst: a config.json claiming a model far larger than its weights file, or a context
// length whose activations cannot fit in memory, is refused with an error naming the problem before anything
// is allocated (it used to allocate the claimed model, or panic in makeslice).
func TestLoadChecksSizesFirst(t *testing.T) {
	cfg, weights := savedTestModel(t, testConfig(arch.NormRMS, arch.GateNone, 1e-5, false))
	pool := kernel.NewPool(1)
	defer pool.Close()
	for _, tc := range []struct{ name, from, to, want string }{
		{"huge vocabulary", `"vocab_size": 16`, `"vocab_size": 16777216`, "shape"},
		{"huge width", `"intermediate_size": 16`, `"intermediate_size": 16777216`, "shape"},
		{"huge context", `"max_position_embeddings": 6`, `"max_position_embeddings": 16777216`, "max_position_embeddings = 16777216"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, arch.ConfigFile), []byte(strings.Replace(string(cfg), tc.from, tc.to, 1)), 0o644)
		os.WriteFile(filepath.Join(dir, arch.WeightsFile), weights, 0o644)
		var err error
		n := allocs.Bytes(func() { _, _, err = Load(dir, 8, pool) })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if n > 16<<20 {
			t.Errorf("%s: allocated %d bytes before refusing", tc.name, n)
		}
	}
	c := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)
	if err := CheckMemory(c, 1, 0); err != nil {
		t.Errorf("CheckMemory of a tiny model: %v", err)
	}
	c.SeqLen = 1 << 24
	if err := CheckMemory(c, 1, 0); err == nil {
		t.Error("CheckMemory of a 2^24 context: no error")
	}
}
