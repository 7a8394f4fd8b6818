package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/audit"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
)

func cmdPool(t *testing.T) *kernel.Pool {
	pool := kernel.NewPool(1)
	t.Cleanup(pool.Close)
	return pool
}

// initDir runs `smallinit init` with args and returns the directory.
func initDir(t *testing.T, cmd initCmd) string {
	t.Helper()
	if cmd.Out == "" {
		cmd.Out = filepath.Join(t.TempDir(), "m")
	}
	var out, log bytes.Buffer
	if err := cmd.run(context.Background(), &out, &log, false); err != nil {
		t.Fatal(err)
	}
	return cmd.Out
}

// initDefaults is initCmd with the flag defaults.
func initDefaults() initCmd {
	return initCmd{Preset: "tiny", Rule: "gamma", Gamma: 1, Std: 0.02, DType: "f32", ShardSize: "2GB"}
}

// TestInitCmd: init through the streaming path (f32 and bf16, one file and tiny shards, the engine's presets
// and a shrunken study preset), then model.Load and compare with gammainit.Apply on an in-memory model.
func TestInitCmd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(c *initCmd)
		files int // safetensors files; 0: several
	}{
		{"tiny f32", func(c *initCmd) {}, 1},
		{"tiny bf16 sharded", func(c *initCmd) { c.DType, c.ShardSize = "bf16", "200KB" }, 0},
		{"tiny f32 sharded depth", func(c *initCmd) { c.ShardSize, c.DepthScale, c.Gamma = "0.5MiB", true, 0.5 }, 0},
		{"tiny-moe xavier bf16", func(c *initCmd) { c.Preset, c.Rule, c.DType = "tiny-moe", "xavier", "bf16" }, 1},
		{"0.1b shrunk", func(c *initCmd) {
			c.Preset, c.Rule, c.Std = "0.1b", "fixed", 0.02
			c.Set = []string{"hidden_size=64", "num_hidden_layers=2", "num_attention_heads=2", "vocab_size=300", "max_position_embeddings=64"}
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := initDefaults()
			cmd.Seed = 4
			tc.edit(&cmd)
			cmd.Out = filepath.Join(t.TempDir(), "m")
			cmd.JSON = true
			var out, log bytes.Buffer
			if err := cmd.run(context.Background(), &out, &log, false); err != nil {
				t.Fatal(err)
			}
			var rec initRecord
			if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
				t.Fatalf("--json output %q: %v", out.String(), err)
			}
			var st int
			for _, f := range rec.Files {
				if strings.HasSuffix(f, ".safetensors") {
					st++
				}
			}
			if tc.files > 0 && st != tc.files || tc.files == 0 && st < 2 {
				t.Errorf("files %v", rec.Files)
			}
			c, _, err := configFromPreset(cmd.Preset, cmd.Set)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := model.New(c, 1, cmdPool(t))
			if err != nil {
				t.Fatal(err)
			}
			recipe := recipe.Init{Rule: cmd.Rule, Gamma: cmd.Gamma, Std: cmd.Std, DepthScale: cmd.DepthScale}
			stds, err := gammainit.Apply(ref, recipe, cmd.Seed)
			if err != nil {
				t.Fatal(err)
			}
			if len(stds) != len(rec.Tensors) || stds[0] != rec.Tensors[0] || stds[len(stds)-1] != rec.Tensors[len(stds)-1] {
				t.Errorf("std record differs from gammainit.Apply's")
			}
			m, _, err := model.Load(cmd.Out, 1, cmdPool(t))
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range ref.Params.Flat {
				if cmd.DType == "bf16" {
					want = bf16(want)
				}
				if math.Float32bits(m.Params.Flat[i]) != math.Float32bits(want) {
					t.Fatalf("element %d: %v, want %v", i, m.Params.Flat[i], want)
				}
			}
			cfg, _ := os.ReadFile(filepath.Join(cmd.Out, arch.ConfigFile))
			wantDtype := map[string]string{"f32": "float32", "bf16": "bfloat16"}[cmd.DType]
			if !bytes.Contains(cfg, []byte(`"torch_dtype": "`+wantDtype+`"`)) {
				t.Errorf("config.json:\n%s", cfg)
			}
		})
	}

	for _, tc := range []struct {
		edit func(c *initCmd)
		want string
	}{
		{func(c *initCmd) { c.Preset = "2b" }, "unknown preset"},
		{func(c *initCmd) { c.ShardSize = "lots" }, "--shard-size"},
		{func(c *initCmd) { c.Set = []string{"hidden_size=100", "num_attention_heads=3"} }, "hidden_size"},
	} {
		cmd := initDefaults()
		tc.edit(&cmd)
		cmd.Out = filepath.Join(t.TempDir(), "m")
		if err := cmd.run(context.Background(), &bytes.Buffer{}, &bytes.Buffer{}, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// bf16 is v rounded to bfloat16 (nearest, ties to even) and widened back.
func bf16(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7fffffff > 0x7f800000 {
		return v
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

func TestInitCmdText(t *testing.T) {
	cmd := initDefaults()
	cmd.Out = filepath.Join(t.TempDir(), "m")
	var out bytes.Buffer
	if err := cmd.run(context.Background(), &out, &bytes.Buffer{}, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wrote " + cmd.Out, "F32 in model.safetensors config.json", "model.layers.3.mlp.down_proj.weight", "intended std"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestAuditCmd(t *testing.T) {
	dir := initDir(t, initCmd{Preset: "tiny", Rule: "gamma", Gamma: 0.5, DepthScale: true, DType: "bf16", ShardSize: "300KB"})
	for _, js := range []bool{false, true} {
		var out bytes.Buffer
		cmd := auditCmd{Model: dir, JSON: js}
		if err := cmd.run(&out, &bytes.Buffer{}, false); err != nil {
			t.Fatal(err)
		}
		want := "untrained: γ-rule γ=0.5 with 1/sqrt(2L) on o_proj/down_proj (as smallinit_init records)"
		if js {
			var rep struct {
				Verdict string         `json:"verdict"`
				Gamma   float64        `json:"gamma"`
				Classes []audit.Group  `json:"classes"`
				Norms   map[string]any `json:"norms"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != want || math.Abs(rep.Gamma-0.5) > 0.005 || len(rep.Classes) != 9 || rep.Norms["ones"] != true {
				t.Errorf("JSON report %s", out.String())
			}
		} else if !strings.Contains(out.String(), "verdict: "+want) {
			t.Errorf("text report:\n%s", out.String())
		}
	}
}

// TestAnalyzeCmd: the streaming analyze gives the weight report diag.WeightReport gives on the loaded model,
// and with --tokens the activation metrics of the full-context model.
func TestAnalyzeCmd(t *testing.T) {
	dir := initDir(t, initCmd{Preset: "tiny", Rule: "gamma", Gamma: 1, DType: "bf16", ShardSize: "250KB", Seed: 2})
	rng := rand.New(rand.NewPCG(3, 4))
	toks := make([]int32, 5000)
	for i := range toks {
		toks[i] = int32(rng.IntN(500))
	}
	tokFile := filepath.Join(t.TempDir(), "val.tok")
	if err := data.WriteTokens(tokFile, toks); err != nil {
		t.Fatal(err)
	}
	ref, _, err := model.Load(dir, 4, cmdPool(t)) // the previous analyze: full context, batch to fit the probes
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tokens string
	}{{"weights only", ""}, {"with tokens", tokFile}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := analyzeCmd{Model: dir, Tokens: tc.tokens, Probes: 16, JSON: true}
			var out bytes.Buffer
			if err := cmd.run(&out, &bytes.Buffer{}, false); err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			var frequent []int
			if tc.tokens != "" {
				frequent = diag.FrequentTokens(toks, ref.Config.Vocab)
			}
			ws := diag.WeightReport(ref, diag.DefaultWeightOptions(), frequent)
			wantW, _ := json.Marshal(ws)
			wantC, _ := json.Marshal(diagrec.SummariseClasses(ws))
			if string(got["weights"]) != string(wantW) || string(got["classes"]) != string(wantC) {
				t.Errorf("weights differ from diag.WeightReport on the loaded model")
			}
			if tc.tokens == "" {
				if _, ok := got["activations"]; ok {
					t.Error("activations without --tokens")
				}
				return
			}
			st, err := diag.Activations(ref, toks, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			var act diagrec.ActivationStats
			if err := json.Unmarshal(got["activations"], &act); err != nil {
				t.Fatal(err)
			}
			if act.ProbeWindows != 16 || len(act.Layers) != len(st.Layers) || math.Abs(act.ProbeLoss-st.ProbeLoss) > 1e-6*st.ProbeLoss ||
				math.Abs(act.Layers[2].AttnResidualRatio-st.Layers[2].AttnResidualRatio) > 1e-5 || math.Abs(act.SinkRate-st.SinkRate) > 1e-9 {
				t.Errorf("activations %+v\nwant %+v", act, st)
			}
		})
	}
	var out bytes.Buffer
	if err := (&analyzeCmd{Model: dir, Probes: 16, Tensors: true}).run(&out, &bytes.Buffer{}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "model.layers.3.mlp.down_proj.weight") || !strings.Contains(out.String(), "stable rank") {
		t.Errorf("text output:\n%s", out.String())
	}
}
