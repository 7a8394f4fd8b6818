package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/safetensors"
)

// A model directory holds config.json (Hugging Face Llama fields plus smallinit's attn_gate, norm and
// smallinit_init) and model.safetensors (float32 tensors with Hugging Face Llama names): arch.ConfigFile and
// arch.WeightsFile, named below the model so that a reader there can tell a whole model directory. A model with
// attn_gate "none" and norm "rmsnorm" loads as a plain LlamaForCausalLM (Qwen2ForCausalLM with q/k/v biases).

// fileConfig is config.json. The norm ε is stored in rms_norm_eps for LayerNorm too (one ε for every norm).
type fileConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	VocabSize             int             `json:"vocab_size"`
	HiddenSize            int             `json:"hidden_size"`
	IntermediateSize      int             `json:"intermediate_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      int             `json:"num_key_value_heads"`
	HeadDim               int             `json:"head_dim"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	RMSNormEps            float64         `json:"rms_norm_eps"`
	RopeTheta             float64         `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling,omitempty"`
	TieWordEmbeddings     bool            `json:"tie_word_embeddings"`
	HiddenAct             string          `json:"hidden_act"`
	AttentionBias         *bool           `json:"attention_bias,omitempty"` // nil: absent (Qwen2 configs have none)
	MLPBias               bool            `json:"mlp_bias"`
	TorchDtype            string          `json:"torch_dtype"`
	NumExperts            int             `json:"num_experts,omitempty"`
	NumExpertsPerTok      int             `json:"num_experts_per_tok,omitempty"`
	MoEIntermediateSize   int             `json:"moe_intermediate_size,omitempty"`
	SharedExpertSize      *int            `json:"shared_expert_intermediate_size,omitempty"` // written for every MoE model: transformers' default is 5632
	NormTopKProb          bool            `json:"norm_topk_prob,omitempty"`
	RouterAuxLossCoef     float64         `json:"router_aux_loss_coef,omitempty"`
	RouterZLossCoef       float64         `json:"router_z_loss_coef,omitempty"`
	DecoderSparseStep     int             `json:"decoder_sparse_step,omitempty"`
	MLPOnlyLayers         []int           `json:"mlp_only_layers,omitempty"`
	CapacityFactor        float64         `json:"capacity_factor,omitempty"`
	RouterBiasUpdateRate  float64         `json:"router_bias_update_rate,omitempty"` // smallinit: auxiliary-loss-free balancing
	UseSlidingWindow      bool            `json:"use_sliding_window,omitempty"`      // Qwen2/Qwen3: whether sliding_window applies
	SlidingWindow         *int            `json:"sliding_window,omitempty"`          // Mistral: applies unless null
	QKNorm                bool            `json:"qk_norm,omitempty"`
	QKVBias               *bool           `json:"qkv_bias,omitempty"` // smallinit: q/k/v biases where model_type cannot say it
	AttnGate              string          `json:"attn_gate,omitempty"`
	Norm                  string          `json:"norm,omitempty"`
	Init                  json.RawMessage `json:"smallinit_init,omitempty"`
}

// ropeScalingJSON is config.json's rope_scaling object (Hugging Face modeling_rope_utils).
type ropeScalingJSON struct {
	RopeType                      string  `json:"rope_type"`
	Type                          string  `json:"type,omitempty"` // the older name of rope_type
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor                float64 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings,omitempty"`
}

// ReadConfig reads and validates dir/config.json, returning the model config and the raw init recipe
// (smallinit_init, nil when absent). Llama, Mistral, Qwen2, Qwen2-MoE, Qwen3 and Qwen3-MoE configs are read; a
// model with a sliding attention window gets the window as its context (SeqLen), where it computes exactly
// what the windowed model does.
func ReadConfig(dir string) (arch.Config, json.RawMessage, error) {
	path := filepath.Join(dir, arch.ConfigFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return arch.Config{}, nil, fmt.Errorf("read model config: %w", err)
	}
	var fc fileConfig
	if err := json.Unmarshal(b, &fc); err != nil {
		return arch.Config{}, nil, fmt.Errorf("model config %s: %w", path, err)
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(b, &present); err != nil {
		return arch.Config{}, nil, fmt.Errorf("model config %s: %w", path, err)
	}
	bad := func(format string, a ...any) (arch.Config, json.RawMessage, error) {
		return arch.Config{}, nil, fmt.Errorf("model config %s: %s", path, fmt.Sprintf(format, a...))
	}
	switch fc.ModelType {
	case "", "llama", "mistral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe":
	default:
		return bad("model_type %q is not supported (supported: llama, mistral, qwen2, qwen2_moe, qwen3, qwen3_moe)", fc.ModelType)
	}
	// Keys whose absence transformers fills with a default of its own (not what smallinit would assume): a
	// hand-written config must give them. Configs that transformers saves always hold them.
	for _, k := range []struct {
		key, types, dflt string
	}{
		{"num_key_value_heads", "mistral qwen2 qwen2_moe qwen3 qwen3_moe", "8, 32, 16, 32 or 4 by model_type"},
		{"head_dim", "qwen3 qwen3_moe", "128"},
		{"shared_expert_intermediate_size", "qwen2_moe", "5632"},
	} {
		_, ours := present["norm"] // smallinit writes it; its MoE files before this check had no shared key for 0
		if _, ok := present[k.key]; !ok && slices.Contains(strings.Fields(k.types), fc.ModelType) && !(ours && k.key == "shared_expert_intermediate_size") {
			return bad("%s is missing: for model_type %q transformers defaults it to %s, not what the other fields imply; give it", k.key, fc.ModelType, k.dflt)
		}
	}
	if _, ok := present["sliding_window"]; !ok && fc.ModelType == "mistral" {
		w := 4096 // MistralConfig's default: absent is not null
		fc.SlidingWindow = &w
	}
	if _, ok := present["rope_theta"]; ok && !(fc.RopeTheta > 1) {
		// Absent, transformers' LlamaConfig default of 10000 applies; given, it must be a usable base.
		return bad("rope_theta = %g: must be > 1 (leave the key out for the default 10000)", fc.RopeTheta)
	}
	if len(fc.MLPOnlyLayers) > 0 {
		return bad("mlp_only_layers is not supported (use decoder_sparse_step)")
	}
	if kv := fc.NumKeyValueHeads; kv < 0 || kv > 0 && fc.NumAttentionHeads > 0 && fc.NumAttentionHeads%kv != 0 {
		return bad("num_key_value_heads = %d: must divide num_attention_heads = %d", kv, fc.NumAttentionHeads)
	}
	if fc.HiddenAct != "" && fc.HiddenAct != "silu" {
		return bad("hidden_act %q is not supported (supported: silu)", fc.HiddenAct)
	}
	// Attention biases. Hugging Face's Qwen2 and Qwen2-MoE always have q_proj, k_proj and v_proj biases and no
	// o_proj bias, and their configs have no attention_bias; smallinit writes attention_bias false for its
	// bias-free qwen2_moe models. Llama's and Qwen3's attention_bias puts a bias on all four projections.
	qkvBias := false
	switch fc.ModelType {
	case "qwen2", "qwen2_moe":
		qkvBias = fc.AttentionBias == nil || *fc.AttentionBias
	default:
		if fc.AttentionBias != nil && *fc.AttentionBias {
			return bad("attention_bias = true is not supported for model_type %q: it adds a bias to o_proj as well as to q_proj, k_proj and v_proj, and o_proj biases are not supported (q/k/v biases alone: qkv_bias = true)", fc.ModelType)
		}
	}
	if fc.QKVBias != nil {
		qkvBias = *fc.QKVBias
	}
	if fc.MLPBias {
		return bad("mlp_bias = true is not supported (biases on gate_proj, up_proj and down_proj)")
	}
	var rs ropeScalingJSON
	if len(fc.RopeScaling) > 0 && string(fc.RopeScaling) != "null" {
		if err := json.Unmarshal(fc.RopeScaling, &rs); err != nil {
			return bad("rope_scaling = %s: %v", fc.RopeScaling, err)
		}
		if rs.RopeType == "" {
			rs.RopeType = rs.Type // configs older than transformers 4.45 name it "type"
		}
		switch rs.RopeType {
		case "":
			if rs != (ropeScalingJSON{}) {
				return bad("rope_scaling = %s names no rope_type (nor type): which scaling is meant is unknown", fc.RopeScaling)
			}
			// An object with none of the fields, like null: plain RoPE.
		case "default":
			rs = ropeScalingJSON{}
		case arch.RopeLlama3:
		default:
			// Only llama3 reads these three; a config that carries them for another scaling (yarn and
			// longrope configs do) loads as the scaling it names, and the model is the same without them.
			rs.LowFreqFactor, rs.HighFreqFactor, rs.OriginalMaxPositionEmbeddings = 0, 0, 0
		}
	}
	// Sliding-window attention (Mistral 7B v0.1; Qwen2 and Qwen3 with use_sliding_window) lets a query see only
	// the last sliding_window keys. On a sequence no longer than the window that is full causal attention, so
	// the model is loaded with its context cut to the window: exact on every sequence it runs.
	seqLen := fc.MaxPositionEmbeddings
	windowed := fc.SlidingWindow != nil && (fc.ModelType == "mistral" || fc.UseSlidingWindow)
	switch {
	case fc.UseSlidingWindow && fc.SlidingWindow == nil:
		return bad("use_sliding_window = true without a sliding_window length")
	case windowed && *fc.SlidingWindow < 1:
		return bad("sliding_window = %d: must be positive", *fc.SlidingWindow)
	case windowed:
		seqLen = min(seqLen, *fc.SlidingWindow)
	}
	c := arch.Config{
		Vocab: fc.VocabSize, Dim: fc.HiddenSize, FFN: fc.IntermediateSize, Layers: fc.NumHiddenLayers,
		Heads: fc.NumAttentionHeads, HeadDim: fc.HeadDim, SeqLen: seqLen,
		NormEps: fc.RMSNormEps, Norm: fc.Norm, AttnGate: fc.AttnGate, RopeTheta: fc.RopeTheta,
		RopeScaling: rs.RopeType, RopeFactor: rs.Factor, RopeLowFreqFactor: rs.LowFreqFactor,
		RopeHighFreqFactor: rs.HighFreqFactor, RopeOriginalSeqLen: rs.OriginalMaxPositionEmbeddings,
		Tied: fc.TieWordEmbeddings, FFNKind: arch.FFNDense, QKNorm: fc.QKNorm || fc.ModelType == "qwen3" || fc.ModelType == "qwen3_moe",
		QKVBias: qkvBias,
	}
	if fc.NumKeyValueHeads != fc.NumAttentionHeads {
		c.KVHeads = fc.NumKeyValueHeads // 0 (absent) is multi-head attention, as in Hugging Face
	}
	if fc.ModelType == "qwen2_moe" || fc.ModelType == "qwen3_moe" || fc.NumExperts > 0 {
		c.FFNKind, c.Experts, c.TopK, c.ExpertFFN = arch.FFNMoE, fc.NumExperts, fc.NumExpertsPerTok, fc.MoEIntermediateSize
		if fc.SharedExpertSize != nil {
			c.SharedFFN = *fc.SharedExpertSize
		}
		c.NormTopK, c.AuxCoef, c.ZLossCoef = fc.NormTopKProb, fc.RouterAuxLossCoef, fc.RouterZLossCoef
		c.SparseStep, c.Capacity, c.BiasRate = max(fc.DecoderSparseStep, 1), fc.CapacityFactor, fc.RouterBiasUpdateRate
	}
	if c.Norm == "" {
		c.Norm = arch.NormRMS
	}
	if c.AttnGate == "" {
		c.AttnGate = arch.GateNone
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if c.Heads > 0 && c.Dim%c.Heads == 0 && c.HeadDim == c.Dim/c.Heads {
		c.HeadDim = 0 // the default: d/H
	}
	if err := c.Validate(); err != nil {
		return bad("%v", err)
	}
	return c, fc.Init, nil
}

// writeConfig writes dir/config.json atomically.
func writeConfig(dir string, c arch.Config, init any) error {
	b, err := ConfigJSON(c, init, "float32")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, arch.ConfigFile), b)
}

// ConfigJSON renders config.json for c: a Hugging Face Llama (Qwen2 with q/k/v biases, Qwen3 with QK-norm,
// Qwen2-MoE for MoE models) config plus smallinit's fields, with torch_dtype naming the stored dtype and init, if
// non-nil, recorded as smallinit_init. It is the one definition of the file, used by Save and by the streaming
// writer of large checkpoints.
func ConfigJSON(c arch.Config, init any, torchDtype string) ([]byte, error) {
	yes, no := true, false
	fc := fileConfig{
		Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama",
		VocabSize: c.Vocab, HiddenSize: c.Dim, IntermediateSize: c.FFN, NumHiddenLayers: c.Layers,
		NumAttentionHeads: c.Heads, NumKeyValueHeads: c.KVHeadCount(), HeadDim: c.HeadSize(),
		MaxPositionEmbeddings: c.SeqLen, RMSNormEps: c.NormEps, RopeTheta: c.RopeTheta,
		TieWordEmbeddings: c.Tied, HiddenAct: "silu", AttentionBias: &no, TorchDtype: torchDtype,
		AttnGate: c.AttnGate, Norm: c.Norm,
	}
	if c.RopeScaling != "" {
		// rope_type is what transformers reads (4.45 on); "type", its older name, is kept for tools that read
		// only that key. (transformers before 4.45 also wants exactly two keys, so it refuses this object.)
		rs := ropeScalingJSON{RopeType: c.RopeScaling, Type: c.RopeScaling, Factor: c.RopeFactor}
		if c.RopeScaling == arch.RopeLlama3 {
			rs.LowFreqFactor, rs.HighFreqFactor = c.RopeLowFreqFactor, c.RopeHighFreqFactor
			rs.OriginalMaxPositionEmbeddings = c.RopeOriginalSeqLen
		}
		raw, err := json.Marshal(rs)
		if err != nil {
			return nil, fmt.Errorf("encode rope_scaling: %w", err)
		}
		fc.RopeScaling = raw
	}
	if c.QKNorm {
		fc.Architectures, fc.ModelType, fc.QKNorm = []string{"Qwen3ForCausalLM"}, "qwen3", true
	}
	if c.FFNKind == arch.FFNMoE {
		// Qwen3-MoE is Qwen2-MoE with QK-norm and without the shared expert and q/k/v biases; Qwen2-MoE has
		// no QK-norm. Other combinations keep qwen2_moe with smallinit's fields (see TransformersGaps).
		fc.Architectures, fc.ModelType = []string{"Qwen2MoeForCausalLM"}, "qwen2_moe"
		if c.QKNorm && c.SharedFFN == 0 && !c.QKVBias {
			fc.Architectures, fc.ModelType = []string{"Qwen3MoeForCausalLM"}, "qwen3_moe"
		}
		shared := c.SharedFFN // 0 too: absent, transformers would build a 5632-wide shared expert
		fc.NumExperts, fc.NumExpertsPerTok, fc.MoEIntermediateSize = c.Experts, c.TopK, c.ExpertFFN
		fc.SharedExpertSize, fc.NormTopKProb, fc.RouterAuxLossCoef = &shared, c.NormTopK, c.AuxCoef
		fc.RouterZLossCoef, fc.DecoderSparseStep, fc.CapacityFactor = c.ZLossCoef, c.SparseStep, c.Capacity
		fc.RouterBiasUpdateRate = c.BiasRate
	}
	if c.QKVBias {
		switch fc.ModelType {
		case "llama": // Qwen2 is Llama with q/k/v biases
			fc.Architectures, fc.ModelType, fc.AttentionBias = []string{"Qwen2ForCausalLM"}, "qwen2", nil
		case "qwen2_moe": // q/k/v biases are Qwen2-MoE's default
			fc.AttentionBias = nil
		default: // Qwen3's attention_bias would put a bias on o_proj too
			fc.QKVBias = &yes
		}
	}
	if init != nil {
		raw, err := json.Marshal(init)
		if err != nil {
			return nil, fmt.Errorf("encode init recipe: %w", err)
		}
		fc.Init = raw
	}
	b, err := json.MarshalIndent(fc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// TransformersGaps lists what Hugging Face transformers, loading the config.json that ConfigJSON writes for c
// with the class its architectures entry names, would compute differently from smallinit; nil means the same
// model. transformers' classes ignore smallinit's own fields (attn_gate, norm, qkv_bias on Qwen3, qk_norm on
// Qwen2-MoE, router_bias_update_rate, capacity_factor) and the tensors they imply; python/torchref.py honours
// them all.
func TransformersGaps(c arch.Config) []string {
	var g []string
	if c.AttnGate != arch.GateNone {
		g = append(g, "attn_gate "+c.AttnGate+": the attention output gate (g_proj) is in no transformers architecture")
	}
	if c.Norm == arch.NormLayer {
		g = append(g, "norm layernorm: the Llama and Qwen classes use RMSNorm without biases")
	}
	moe := c.FFNKind == arch.FFNMoE
	switch {
	case c.QKNorm && c.QKVBias && !moe:
		g = append(g, "QK-norm with q/k/v biases: Qwen3ForCausalLM reads no qkv_bias and drops the biases")
	case c.QKNorm && moe && (c.SharedFFN > 0 || c.QKVBias):
		g = append(g, "QK-norm on a MoE model with a shared expert or q/k/v biases: Qwen2MoeForCausalLM has no QK-norm")
	}
	if moe && c.BiasRate > 0 {
		g = append(g, "router_bias_update_rate > 0: the expert-selection bias (mlp.gate.e_score_correction_bias) is not read by Qwen2-MoE or Qwen3-MoE, which select experts by the router's scores alone")
	}
	if moe && c.Capacity > 0 {
		g = append(g, "capacity_factor: transformers drops no tokens")
	}
	return g
}

// Save writes the model's config and parameters to dir (created if needed). init, if non-nil, is recorded as
// the init recipe (config.json field smallinit_init). Both files are written atomically.
func (m *Model) Save(dir string, init any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	w := safetensors.Create(filepath.Join(dir, arch.WeightsFile), map[string]string{"format": "pt"})
	for _, t := range m.Specs {
		if err := w.AddFloat32(t.Name, t.Shape, m.Params.Flat[t.Offset:t.Offset+t.Size()]); err != nil {
			w.Abort()
			return fmt.Errorf("save model %s: %w", dir, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("save model %s: %w", dir, err)
	}
	return writeConfig(dir, m.Config, init)
}

// Load reads a model directory into a new model with activations for batch sequences. Every tensor the config
// implies must be present with the right shape, no other tensor may be present, and no weight may be NaN or
// infinite; errors name the file and the tensor. The tensors are checked against the config, and the memory
// the model needs against the machine's, before anything is allocated: a config.json claiming a model larger
// than its weights file, or a context length whose activations cannot fit, is an error, not a crash.
func Load(dir string, batch int, pool *kernel.Pool) (*Model, json.RawMessage, error) {
	c, init, err := ReadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	f, err := safetensors.OpenModel(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("load weights: %w", err)
	}
	defer f.Close()
	if err := checkTensors(f, c.Tensors()); err != nil {
		return nil, nil, err
	}
	if err := CheckMemory(c, batch, 0); err != nil {
		return nil, nil, fmt.Errorf("load %s: %w", dir, err)
	}
	m, err := New(c, batch, pool)
	if err != nil {
		return nil, nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if err := m.readWeights(f); err != nil {
		return nil, nil, err
	}
	return m, init, nil
}

// LoadWeights reads the parameters from a safetensors file, or from a directory holding model.safetensors or
// a sharded model.safetensors.index.json (float32, float16 or bfloat16, converted on load); see Load for the
// checks.
func (m *Model) LoadWeights(path string) error {
	f, err := safetensors.OpenModel(path)
	if err != nil {
		return fmt.Errorf("load weights: %w", err)
	}
	defer f.Close()
	if err := checkTensors(f, m.Specs); err != nil {
		return err
	}
	return m.readWeights(f)
}

// checkTensors checks that f holds exactly the tensors specs describe, with their shapes.
func checkTensors(f safetensors.Reader, specs []arch.TensorSpec) error {
	path := f.Path()
	want := make(map[string]bool, len(specs))
	for _, t := range specs {
		want[t.Name] = true
		info, ok := f.Info(t.Name)
		if !ok {
			hint := ""
			if t.Class == arch.ClassQKVBias {
				hint = " (config.json implies q/k/v biases: model_type qwen2 and qwen2_moe have them unless attention_bias is false, any model_type with qkv_bias true)"
			}
			return fmt.Errorf("load weights %s: tensor %s is missing%s", path, t.Name, hint)
		}
		if !equalShape(info.Shape, t.Shape) {
			return fmt.Errorf("load weights %s: tensor %s has shape %v, the config implies %v", path, t.Name, info.Shape, t.Shape)
		}
	}
	var extra []string
	for _, info := range f.Tensors() {
		if !want[info.Name] {
			extra = append(extra, info.Name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		if len(extra) > 5 {
			extra = append(extra[:5], "...")
		}
		return fmt.Errorf("load weights %s: unexpected tensors %v (tie_word_embeddings, attn_gate, norm, attention_bias or qkv_bias in config.json may not match the file)", path, extra)
	}
	return nil
}

// readWeights reads every parameter from f (checked by checkTensors) and refuses NaN and infinite weights.
func (m *Model) readWeights(f safetensors.Reader) error {
	path := f.Path()
	for _, t := range m.Specs {
		dst := m.Params.Flat[t.Offset : t.Offset+t.Size()]
		if err := f.ReadFloat32(t.Name, dst); err != nil {
			return fmt.Errorf("load weights: %w", err)
		}
		for i, v := range dst {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("load weights %s: tensor %s element %d is %v", path, t.Name, i, v)
			}
		}
	}
	return nil
}

// CheckMemory refuses a model whose estimated memory (MemoryBytes, plus extra bytes, e.g. an optimizer's
// state) exceeds the machine's physical memory (or, where that is unknown, 2^47 bytes): allocating it would
// end in an out-of-memory kill or a crash instead of an error. The error names the context length and the
// batch, which are what usually make it too large.
func CheckMemory(c arch.Config, batch int, extra float64) error {
	need := MemoryBytes(c, batch, runtime.GOMAXPROCS(0)) + extra
	limit, where := float64(int64(1)<<47), "the 128 TB an allocation can have"
	if mem := physicalMemory(); mem > 0 {
		limit, where = float64(mem), fmt.Sprintf("this machine's %.1f GB", float64(mem)/1e9)
	}
	if need > limit {
		return fmt.Errorf("model of %d parameters with max_position_embeddings = %d and batch %d needs about %.3g GB (attention probabilities alone %.3g GB), more than %s of memory",
			c.NumParams(), c.SeqLen, batch, need/1e9, 4*attnProbs(c, float64(batch), float64(c.SeqLen), float64(c.SeqLen))*float64(c.Layers)/1e9, where)
	}
	return nil
}

// physicalMemory returns the machine's memory in bytes from /proc/meminfo, or 0 where it cannot be read.
func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return 0
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
