package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/safetensors"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	pool := kernel.NewPool(1)
	defer pool.Close()
	for _, tc := range append(switchCases[:len(switchCases):len(switchCases)], gqaCases...) {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newTestModel(t, tc.cfg, 1, pool)
			fillRandomAll(m, 1, 0.5)
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
	m := newTestModel(t, testConfig(arch.NormRMS, arch.GateNone, 1e-5, false), 1, pool)
	fillRandom(m, 1, 0.5)
	if err := m.Save(base, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(base, arch.ConfigFile))
	weights, _ := os.ReadFile(filepath.Join(base, arch.WeightsFile))
	gated := newTestModel(t, testConfig(arch.NormRMS, arch.GateElementwise, 1e-5, false), 1, pool)
	gdir := t.TempDir()
	gated.Save(gdir, nil)
	gweights, _ := os.ReadFile(filepath.Join(gdir, arch.WeightsFile))
	nan := newTestModel(t, testConfig(arch.NormRMS, arch.GateNone, 1e-5, false), 1, pool)
	nan.Params.Embed[3] = float32(nan.Params.Embed[3]) / 0 * 0
	ndir := t.TempDir()
	nan.Save(ndir, nil)
	nweights, _ := os.ReadFile(filepath.Join(ndir, arch.WeightsFile))
	for _, tc := range []struct {
		name, want      string
		config, weights []byte
	}{
		{"missing config", "config.json", nil, weights},
		{"config not json", "config.json", []byte("{"), weights},
		{"negative size", "hidden_size", []byte(strings.Replace(string(cfg), `"hidden_size": 8`, `"hidden_size": -8`, 1)), weights},
		{"kv heads not dividing heads", "num_key_value_heads = 3: must divide num_attention_heads = 2", []byte(strings.Replace(string(cfg), `"num_key_value_heads": 2`, `"num_key_value_heads": 3`, 1)), weights},
		{"gqa config, multi-head weights", "k_proj.weight has shape [8 8], the config implies [4 8]", []byte(strings.Replace(string(cfg), `"num_key_value_heads": 2`, `"num_key_value_heads": 1`, 1)), weights},
		{"llama attention_bias", "attention_bias = true is not supported for model_type \"llama\": it adds a bias to o_proj", []byte(strings.Replace(string(cfg), `"attention_bias": false`, `"attention_bias": true`, 1)), weights},
		{"qwen3 attention_bias", "o_proj", []byte(strings.Replace(strings.Replace(string(cfg), `"attention_bias": false`, `"attention_bias": true`, 1), `"model_type": "llama"`, `"model_type": "qwen3"`, 1)), weights},
		{"mlp_bias", "mlp_bias = true is not supported", []byte(strings.Replace(string(cfg), `"mlp_bias": false`, `"mlp_bias": true`, 1)), weights},
		{"rope_scaling yarn", `rope_scaling = "yarn" is not supported (supported: "linear", "llama3", or none)`, []byte(strings.Replace(string(cfg), `"rope_theta": 10000,`, `"rope_theta": 10000, "rope_scaling": {"rope_type": "yarn", "factor": 4},`, 1)), weights},
		{"rope_scaling llama3 incomplete", "rope_scaling llama3: low_freq_factor = 0 and high_freq_factor = 0", []byte(strings.Replace(string(cfg), `"rope_theta": 10000,`, `"rope_theta": 10000, "rope_scaling": {"rope_type": "llama3", "factor": 8},`, 1)), weights},
		{"rope_scaling factor below 1", "rope_scaling linear: factor = 0.5, must be ≥ 1", []byte(strings.Replace(string(cfg), `"rope_theta": 10000,`, `"rope_theta": 10000, "rope_scaling": {"type": "linear", "factor": 0.5},`, 1)), weights},
		{"rope_scaling without a type", `rope_scaling = {"original_max_position_embeddings": 1000} names no rope_type (nor type)`, []byte(strings.Replace(string(cfg), `"rope_theta": 10000,`, `"rope_theta": 10000, "rope_scaling": {"original_max_position_embeddings": 1000},`, 1)), weights},
		{"rope_scaling not an object", "rope_scaling = 3", []byte(strings.Replace(string(cfg), `"rope_theta": 10000,`, `"rope_theta": 10000, "rope_scaling": 3,`, 1)), weights},
		{"sliding window without a length", "use_sliding_window = true without a sliding_window length", []byte(strings.Replace(string(cfg), `"model_type": "llama"`, `"model_type": "qwen2", "use_sliding_window": true`, 1)), weights},
		{"sliding window of 0", "sliding_window = 0: must be positive", []byte(strings.Replace(string(cfg), `"model_type": "llama"`, `"model_type": "mistral", "sliding_window": 0`, 1)), weights},
		{"qwen2 without bias tensors", "q_proj.bias is missing (config.json implies q/k/v biases: model_type qwen2 and qwen2_moe have them unless attention_bias is false", []byte(strings.Replace(strings.Replace(string(cfg), `"model_type": "llama"`, `"model_type": "qwen2"`, 1), `"attention_bias": false,`, ``, 1)), weights},
		{"unknown architecture", "model_type", []byte(strings.Replace(string(cfg), `"model_type": "llama"`, `"model_type": "gpt2"`, 1)), weights},
		{"missing weights", "model.safetensors", cfg, nil},
		{"truncated weights", "model.safetensors", cfg, weights[:len(weights)-10]},
		{"extra tensors", "unexpected tensors", cfg, gweights},
		{"wrong shape", "shape", []byte(strings.Replace(string(cfg), `"vocab_size": 16`, `"vocab_size": 17`, 1)), weights},
		{"nan weight", "NaN", cfg, nweights},
	} {
		dir := t.TempDir()
		if tc.config != nil {
			os.WriteFile(filepath.Join(dir, arch.ConfigFile), tc.config, 0o644)
		}
		if tc.weights != nil {
			os.WriteFile(filepath.Join(dir, arch.WeightsFile), tc.weights, 0o644)
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
	c := testConfig(arch.NormRMS, arch.GateHeadwise, 1e-5, false)
	m := newTestModel(t, c, 1, pool)
	fillRandom(m, 4, 0.5)
	dir := t.TempDir()
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, arch.WeightsFile))
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

// TestReadConfigSlidingWindow: a sliding window that applies (Mistral's sliding_window unless null; Qwen2's
// and Qwen3's only with use_sliding_window) cuts the context to the window, where the windowed attention is
// full causal attention; one that does not apply, or is longer than the context, leaves it.
func TestReadConfigSlidingWindow(t *testing.T) {
	for _, tc := range []struct {
		name, fields string
		seqLen       int
	}{
		{"mistral v0.1", `"model_type": "mistral", "sliding_window": 4096`, 4096},
		{"mistral v0.3", `"model_type": "mistral", "sliding_window": null`, 32768},
		{"mistral, window beyond the context", `"model_type": "mistral", "sliding_window": 65536`, 32768},
		{"qwen2, window off", `"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": false`, 32768},
		{"qwen2, window on", `"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": true`, 4096},
		{"llama ignores the field", `"model_type": "llama", "sliding_window": 4096`, 32768},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := `{` + tc.fields + `, "vocab_size": 32, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
				"num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32768, "rms_norm_eps": 1e-05,
				"hidden_act": "silu"}`
			if err := os.WriteFile(filepath.Join(dir, arch.ConfigFile), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			c, _, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			if c.SeqLen != tc.seqLen {
				t.Errorf("context %d, want %d", c.SeqLen, tc.seqLen)
			}
		})
	}
}

// TestReadConfigRopeScaling: rope_scaling read as python/smallinit_torch/model.py's Config reads it (its
// tests/test_config.py is the twin): null, an empty object and "default" are plain RoPE, and llama3's three
// fields are kept for llama3 only (a config of another scaling that carries them loads without them).
func TestReadConfigRopeScaling(t *testing.T) {
	llama3 := `"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 1000`
	for _, tc := range []struct {
		name, rs string
		want     arch.Config // only its rope fields are compared
	}{
		{"null", `null`, arch.Config{}},
		{"empty object", `{}`, arch.Config{}},
		{"default", `{"rope_type": "default", "factor": 2}`, arch.Config{}},
		{"linear with llama3's fields", `{"type": "linear", ` + llama3 + `}`, arch.Config{RopeScaling: arch.RopeLinear, RopeFactor: 8}},
		{"llama3", `{"rope_type": "llama3", ` + llama3 + `}`, arch.Config{RopeScaling: arch.RopeLlama3, RopeFactor: 8,
			RopeLowFreqFactor: 1, RopeHighFreqFactor: 4, RopeOriginalSeqLen: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := `{"vocab_size": 32, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 2,
				"num_attention_heads": 4, "max_position_embeddings": 64, "rms_norm_eps": 1e-05, "rope_scaling": ` + tc.rs + `}`
			if err := os.WriteFile(filepath.Join(dir, arch.ConfigFile), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			c, _, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := arch.Config{RopeScaling: c.RopeScaling, RopeFactor: c.RopeFactor, RopeLowFreqFactor: c.RopeLowFreqFactor,
				RopeHighFreqFactor: c.RopeHighFreqFactor, RopeOriginalSeqLen: c.RopeOriginalSeqLen}
			if got != tc.want {
				t.Errorf("rope fields %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestLoadHuggingFaceGQACheckpoints: checkpoints laid out as Hugging Face writes them — config.json with the
// fields (and extra keys) of real Llama-3, Mistral, Qwen2, Qwen2-MoE and Qwen3 configs, tensors named and shaped from
// those architectures' definitions (not from Config.Tensors), in bfloat16 — load with grouped-query attention
// and the q/k/v biases their model_type implies, hold the written values, and run forward (equal to the float64
// reference) and backward.
func TestLoadHuggingFaceGQACheckpoints(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	const V, d, L, H, T = 32, 16, 2, 4, 8
	for _, tc := range []struct {
		name    string
		config  string
		kv, dh  int
		bias    bool // q_proj, k_proj, v_proj biases
		qkNorm  bool
		experts int // Qwen2-MoE experts (0: dense), with a shared expert
		tied    bool
	}{
		{"llama3", `"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_key_value_heads": 2,
			"rope_theta": 500000.0, "rope_scaling": null, "attention_bias": false, "attention_dropout": 0.0,
			"mlp_bias": false, "pretraining_tp": 1, "bos_token_id": 128000, "eos_token_id": 128001, "initializer_range": 0.02,
			"tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.0"`, 2, 4, false, false, 0, false},
		{"mistral", `"architectures": ["MistralForCausalLM"], "model_type": "mistral", "num_key_value_heads": 2, "head_dim": 6,
			"rope_theta": 1000000.0, "sliding_window": null, "attention_dropout": 0.0, "tie_word_embeddings": false,
			"torch_dtype": "bfloat16", "transformers_version": "4.42.0.dev0"`, 2, 6, false, false, 0, false},
		{"qwen2", `"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_key_value_heads": 1,
			"rope_theta": 1000000.0, "rope_scaling": null, "sliding_window": 32768, "use_sliding_window": false,
			"max_window_layers": 24, "attention_dropout": 0.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16"`, 1, 4, true, false, 0, true},
		{"qwen2_moe", `"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "num_key_value_heads": 2,
			"rope_theta": 1000000.0, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
			"shared_expert_intermediate_size": 24, "norm_topk_prob": false, "decoder_sparse_step": 1,
			"router_aux_loss_coef": 0.001, "output_router_logits": false, "mlp_only_layers": [], "use_sliding_window": false,
			"tie_word_embeddings": false, "torch_dtype": "bfloat16"`, 2, 4, true, false, 4, false},
		{"qwen3", `"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_key_value_heads": 2, "head_dim": 6,
			"rope_theta": 1000000, "rope_scaling": null, "attention_bias": false, "tie_word_embeddings": true,
			"torch_dtype": "bfloat16"`, 2, 6, false, true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			config := fmt.Sprintf(`{%s, "vocab_size": %d, "hidden_size": %d, "intermediate_size": 24,
				"num_hidden_layers": %d, "num_attention_heads": %d, "max_position_embeddings": %d, "rms_norm_eps": 1e-06,
				"hidden_act": "silu", "use_cache": true}`, tc.config, V, d, L, H, T)
			if err := os.WriteFile(filepath.Join(dir, arch.ConfigFile), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			type tensor struct {
				name  string
				shape []int
			}
			ts := []tensor{{"model.embed_tokens.weight", []int{V, d}}, {"model.norm.weight", []int{d}}}
			if !tc.tied {
				ts = append(ts, tensor{"lm_head.weight", []int{V, d}})
			}
			mlp := func(p string, f int) []tensor {
				return []tensor{{p + "gate_proj.weight", []int{f, d}}, {p + "up_proj.weight", []int{f, d}}, {p + "down_proj.weight", []int{d, f}}}
			}
			for l := 0; l < L; l++ {
				p := fmt.Sprintf("model.layers.%d.", l)
				ts = append(ts, tensor{p + "input_layernorm.weight", []int{d}}, tensor{p + "post_attention_layernorm.weight", []int{d}},
					tensor{p + "self_attn.q_proj.weight", []int{H * tc.dh, d}}, tensor{p + "self_attn.k_proj.weight", []int{tc.kv * tc.dh, d}},
					tensor{p + "self_attn.v_proj.weight", []int{tc.kv * tc.dh, d}}, tensor{p + "self_attn.o_proj.weight", []int{d, H * tc.dh}})
				if tc.bias {
					ts = append(ts, tensor{p + "self_attn.q_proj.bias", []int{H * tc.dh}}, tensor{p + "self_attn.k_proj.bias", []int{tc.kv * tc.dh}},
						tensor{p + "self_attn.v_proj.bias", []int{tc.kv * tc.dh}})
				}
				if tc.qkNorm {
					ts = append(ts, tensor{p + "self_attn.q_norm.weight", []int{tc.dh}}, tensor{p + "self_attn.k_norm.weight", []int{tc.dh}})
				}
				if tc.experts == 0 {
					ts = append(ts, mlp(p+"mlp.", 24)...)
					continue
				}
				ts = append(ts, tensor{p + "mlp.gate.weight", []int{tc.experts, d}}, tensor{p + "mlp.shared_expert_gate.weight", []int{1, d}})
				ts = append(ts, mlp(p+"mlp.shared_expert.", 24)...)
				for e := 0; e < tc.experts; e++ {
					ts = append(ts, mlp(fmt.Sprintf("%smlp.experts.%d.", p, e), 8)...)
				}
			}
			rng := rand.New(rand.NewPCG(17, 17))
			written := map[string][]float32{}
			w := safetensors.Create(filepath.Join(dir, arch.WeightsFile), map[string]string{"format": "pt"})
			for _, tn := range ts {
				n := 1
				for _, s := range tn.shape {
					n *= s
				}
				v := make([]float32, n)
				for i := range v {
					switch {
					case strings.HasSuffix(tn.name, "norm.weight"):
						v[i] = float32(1 + 0.1*rng.NormFloat64())
					case strings.HasSuffix(tn.name, ".bias"):
						v[i] = float32(0.1 * rng.NormFloat64())
					default:
						v[i] = float32(rng.NormFloat64() / math.Sqrt(float64(tn.shape[1])))
					}
					v[i] = math.Float32frombits(math.Float32bits(v[i]) &^ 0xFFFF) // exactly representable in bfloat16
				}
				written[tn.name] = v
				if err := w.AddFloat32As(tn.name, safetensors.DType("BF16"), tn.shape, v); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			m, _, err := Load(dir, 2, pool)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			if c.KVHeadCount() != tc.kv || c.QKVBias != tc.bias || c.QKNorm != tc.qkNorm || c.HeadSize() != tc.dh || (c.FFNKind == arch.FFNMoE) != (tc.experts > 0) {
				t.Fatalf("config %+v: want %d key/value heads, q/k/v biases %v, QK-norm %v, d_h %d, %d experts", c, tc.kv, tc.bias, tc.qkNorm, tc.dh, tc.experts)
			}
			if len(m.Specs) != len(ts) {
				t.Fatalf("model has %d tensors, the checkpoint %d", len(m.Specs), len(ts))
			}
			for _, s := range m.Specs {
				want := written[s.Name]
				for i, v := range m.Params.Flat[s.Offset : s.Offset+s.Size()] {
					if v != want[i] {
						t.Fatalf("%s element %d: loaded %g, written %g", s.Name, i, v, want[i])
					}
				}
			}
			in, tg := randomTokens(rand.New(rand.NewPCG(18, 18)), 2*T, V)
			loss, err := m.Forward(in, tg)
			if err != nil {
				t.Fatal(err)
			}
			want, _, wantLogits := newRef(m).forward(in, tg)
			if e := math.Abs(loss-want) / want; e > 1e-6 {
				t.Errorf("loss %.8f, reference %.8f (rel err %.2e)", loss, want, e)
			}
			if e := relErr(m.Logits(), wantLogits); e > 1e-5 {
				t.Errorf("logits rel err %.2e", e)
			}
			m.ZeroGrads()
			m.Backward()
			for _, s := range m.Specs {
				var sq float64
				for _, g := range m.Grads.Flat[s.Offset : s.Offset+s.Size()] {
					sq += float64(g) * float64(g)
				}
				// An expert the router sends no token has a zero gradient; the attention tensors never do.
				if math.IsNaN(sq) || math.IsInf(sq, 0) || sq == 0 && strings.Contains(s.Name, "self_attn") {
					t.Errorf("%s: gradient norm² %g", s.Name, sq)
				}
			}
		})
	}
}

// TestConfigJSONNamesTheArchitecture: config.json names the Hugging Face architecture that has the model's
// attention: Qwen2 for q/k/v biases (its default, so no attention_bias), Qwen2-MoE without attention_bias when
// biased and with attention_bias false when not, and smallinit's qkv_bias where the model_type cannot say it
// (Qwen3's attention_bias would add an o_proj bias); num_key_value_heads is KV.
func TestConfigJSONNamesTheArchitecture(t *testing.T) {
	for _, tc := range []struct {
		name, modelType, attentionBias, qkvBias string // attentionBias, qkvBias: the JSON value, "" when absent
		kv                                      int
	}{
		{"rms_eps1e-5_none", "llama", "false", "", 2},
		{"gqa_h4_kv2_qkvbias", "qwen2", "", "", 2},
		{"mqa_h4_kv1_elementwise", "llama", "false", "", 1},
		{"gqa_h4_kv2_qknorm_qkvbias_headwise_layernorm_tied", "qwen3", "false", "true", 2},
		{"moe_top2_norm_shared_aux_z", "qwen2_moe", "false", "", 2},
		{"moe_top2_shared_kv1_qkvbias", "qwen2_moe", "", "", 1},
	} {
		var c arch.Config
		for _, sc := range append(switchCases[:len(switchCases):len(switchCases)], gqaCases...) {
			if sc.name == tc.name {
				c = sc.cfg
			}
		}
		b, err := ConfigJSON(c, nil, "float32")
		if err != nil {
			t.Fatal(err)
		}
		var fc map[string]any
		if err := json.Unmarshal(b, &fc); err != nil {
			t.Fatal(err)
		}
		str := func(key string) string {
			if v, ok := fc[key]; ok {
				return fmt.Sprint(v)
			}
			return ""
		}
		if str("model_type") != tc.modelType || str("attention_bias") != tc.attentionBias || str("qkv_bias") != tc.qkvBias ||
			str("num_key_value_heads") != fmt.Sprint(tc.kv) {
			t.Errorf("%s: model_type %q, attention_bias %q, qkv_bias %q, num_key_value_heads %q; want %q, %q, %q, %d", tc.name,
				str("model_type"), str("attention_bias"), str("qkv_bias"), str("num_key_value_heads"), tc.modelType, tc.attentionBias, tc.qkvBias, tc.kv)
		}
	}
}

// TestConfigJSONForTransformers: the config.json written for a model names the transformers class that
// computes it where one exists (Qwen3-MoE for QK-norm MoE without a shared expert or q/k/v biases), always
// states the shared expert's width for MoE (absent, transformers would build a 5632-wide one), reads back to
// the same Config, and TransformersGaps names what no transformers class computes.
func TestConfigJSONForTransformers(t *testing.T) {
	preset := func(name string) arch.Config {
		p, err := arch.LookupPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		return p.Config
	}
	qkMoE := preset("tiny-moe")
	qkMoE.QKNorm, qkMoE.BiasRate = true, 0
	shared := preset("tiny-moe")
	shared.SharedFFN = 64
	gated := preset("tiny")
	gated.AttnGate = arch.GateElementwise
	for _, tc := range []struct {
		name      string
		c         arch.Config
		modelType string
		gaps      int
	}{
		{"tiny", preset("tiny"), "llama", 0},
		{"tiny gated", gated, "llama", 1},
		{"tiny-moe", preset("tiny-moe"), "qwen2_moe", 1}, // the expert-selection bias
		{"MoE with QK-norm", qkMoE, "qwen3_moe", 0},
		{"MoE with a shared expert", shared, "qwen2_moe", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ConfigJSON(tc.c, nil, "float32")
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			if raw["model_type"] != tc.modelType {
				t.Errorf("model_type %v, want %s", raw["model_type"], tc.modelType)
			}
			if v, ok := raw["shared_expert_intermediate_size"]; (tc.c.FFNKind == arch.FFNMoE) != ok || ok && v != float64(tc.c.SharedFFN) {
				t.Errorf("shared_expert_intermediate_size %v (present %v) for a model with shared width %d", v, ok, tc.c.SharedFFN)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, arch.ConfigFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			back, _, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.c) {
				t.Errorf("read back %+v\nwrote     %+v", back, tc.c)
			}
			if gaps := TransformersGaps(tc.c); len(gaps) != tc.gaps {
				t.Errorf("gaps %q, want %d", gaps, tc.gaps)
			}
		})
	}
}

// TestReadConfigTransformersDefaults: a hand-written config that leaves out a key whose transformers default
// differs from what the other fields imply is refused naming the key; Mistral without sliding_window gets
// MistralConfig's 4096; an explicit head_dim that heads do not divide into hidden_size is kept.
func TestReadConfigTransformersDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, fields, want string
		seqLen, headDim    int
	}{
		{"qwen2 without kv heads", `"model_type": "qwen2", "hidden_size": 16, "num_attention_heads": 4`, "num_key_value_heads is missing", 0, 0},
		{"qwen3 without head_dim", `"model_type": "qwen3", "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2`, "head_dim is missing", 0, 0},
		{"qwen2_moe without shared width", `"model_type": "qwen2_moe", "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2, "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 8`, "shared_expert_intermediate_size is missing", 0, 0},
		{"mistral without sliding_window", `"model_type": "mistral", "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2`, "", 4096, 0},
		{"llama without kv heads", `"model_type": "llama", "hidden_size": 16, "num_attention_heads": 4`, "", 32768, 0},
		{"head_dim with 3 heads in 98", `"model_type": "llama", "hidden_size": 98, "num_attention_heads": 3, "head_dim": 32`, "", 32768, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := `{` + tc.fields + `, "vocab_size": 32, "intermediate_size": 24, "num_hidden_layers": 2,
				"max_position_embeddings": 32768, "rms_norm_eps": 1e-05, "hidden_act": "silu"}`
			if err := os.WriteFile(filepath.Join(dir, arch.ConfigFile), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			c, _, err := ReadConfig(dir)
			switch {
			case tc.want != "":
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), arch.ConfigFile) {
					t.Errorf("error %v, want one naming %s and saying %q", err, arch.ConfigFile, tc.want)
				}
			case err != nil:
				t.Fatal(err)
			case c.SeqLen != tc.seqLen || c.HeadDim != tc.headDim:
				t.Errorf("context %d, head_dim %d; want %d, %d", c.SeqLen, c.HeadDim, tc.seqLen, tc.headDim)
			}
		})
	}
}

// TestValidateRefusesHugeTensorCounts: a config claiming millions of tensors is refused before its tensors are
// listed (which would take gigabytes), and quickly.
func TestValidateRefusesHugeTensorCounts(t *testing.T) {
	c := testConfig(arch.NormRMS, arch.GateNone, 1e-5, false)
	c.Layers, c.FFNKind, c.Experts, c.TopK, c.ExpertFFN, c.SparseStep = 1<<20, arch.FFNMoE, 64, 2, 8, 1
	n := testing.AllocsPerRun(1, func() {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tensors") {
			t.Errorf("error %v, want a refusal of the tensor count", err)
		}
	})
	if n > 100 {
		t.Errorf("Validate allocated %.0f times refusing it", n)
	}
}

// TestRopeThetaGivenMustBeUsable: rope_theta 0 (or negative) in config.json is refused naming the key, where
// before 0 silently became 10000; an absent key keeps transformers' default of 10000.
func TestRopeThetaGivenMustBeUsable(t *testing.T) {
	c := arch.Config{Vocab: 32, Dim: 16, Layers: 1, Heads: 2, FFN: 32, SeqLen: 8, NormEps: 1e-5, Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	base, err := ConfigJSON(c, nil, "float32")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"zero", `"rope_theta": 10000,`, `"rope_theta": 0,`, "rope_theta = 0: must be > 1"},
		{"negative", `"rope_theta": 10000,`, `"rope_theta": -10000,`, "rope_theta = -10000: must be > 1"},
		{"absent", `"rope_theta": 10000,`, ``, ""},
	} {
		dir := t.TempDir()
		text := strings.Replace(string(base), tc.old, tc.new, 1)
		if text == string(base) {
			t.Fatalf("%s: the config has no %s", tc.name, tc.old)
		}
		os.WriteFile(filepath.Join(dir, arch.ConfigFile), []byte(text), 0o644)
		got, _, err := ReadConfig(dir)
		switch {
		case tc.want == "" && (err != nil || got.RopeTheta != 10000):
			t.Errorf("%s: %v, rope_theta %g, want 10000", tc.name, err, got.RopeTheta)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestNewRefusesABatchThatCannotFit: a batch of a billion windows (analyze --probes 1000000000 asked for 49 TB)
// is refused by New with the estimate, before anything is allocated.
func TestNewRefusesABatchThatCannotFit(t *testing.T) {
	c := arch.Config{Vocab: 64, Dim: 16, Layers: 1, Heads: 2, FFN: 32, SeqLen: 64, NormEps: 1e-5, Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := New(c, 1_000_000_000, kernel.NewPool(1))
	runtime.ReadMemStats(&m1)
	if err == nil || !strings.Contains(err.Error(), "batch 1000000000") || !strings.Contains(err.Error(), "of memory") {
		t.Fatalf("New with a billion-window batch: %v", err)
	}
	if m1.TotalAlloc-m0.TotalAlloc > 1<<20 {
		t.Errorf("refusing the batch allocated %d bytes", m1.TotalAlloc-m0.TotalAlloc)
	}
}
