package scale

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/safetensors"
)

// fileConfig mirrors model's config.json (model/file.go, fileConfig): same fields, same order, same tags,
// so that the bytes written here equal model.Save's for a float32 checkpoint
// (TestScaleConfigMatchesModelSave). Only torch_dtype differs, following the stored dtype.
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
	AttentionBias         bool            `json:"attention_bias"`
	MLPBias               bool            `json:"mlp_bias"`
	TorchDtype            string          `json:"torch_dtype"`
	NumExperts            int             `json:"num_experts,omitempty"`
	NumExpertsPerTok      int             `json:"num_experts_per_tok,omitempty"`
	MoEIntermediateSize   int             `json:"moe_intermediate_size,omitempty"`
	SharedExpertSize      int             `json:"shared_expert_intermediate_size,omitempty"`
	NormTopKProb          bool            `json:"norm_topk_prob,omitempty"`
	RouterAuxLossCoef     float64         `json:"router_aux_loss_coef,omitempty"`
	RouterZLossCoef       float64         `json:"router_z_loss_coef,omitempty"`
	DecoderSparseStep     int             `json:"decoder_sparse_step,omitempty"`
	MLPOnlyLayers         []int           `json:"mlp_only_layers,omitempty"`
	CapacityFactor        float64         `json:"capacity_factor,omitempty"`
	QKNorm                bool            `json:"qk_norm,omitempty"`
	AttnGate              string          `json:"attn_gate,omitempty"`
	Norm                  string          `json:"norm,omitempty"`
	Init                  json.RawMessage `json:"smallinit_init,omitempty"`
}

// TorchDtype is the config.json torch_dtype of a stored dtype: float32, bfloat16 or float16.
func TorchDtype(d safetensors.DType) (string, error) {
	switch d {
	case safetensors.F32:
		return "float32", nil
	case safetensors.BF16:
		return "bfloat16", nil
	case safetensors.F16:
		return "float16", nil
	}
	return "", fmt.Errorf("dtype %q: want F32, BF16 or F16", d)
}

// configJSON renders config.json exactly as model.Save does, with torch_dtype set to torchDtype.
func configJSON(c model.Config, init any, torchDtype string) ([]byte, error) {
	fc := fileConfig{
		Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama",
		VocabSize: c.Vocab, HiddenSize: c.Dim, IntermediateSize: c.FFN, NumHiddenLayers: c.Layers,
		NumAttentionHeads: c.Heads, NumKeyValueHeads: c.Heads, HeadDim: c.HeadSize(),
		MaxPositionEmbeddings: c.SeqLen, RMSNormEps: c.NormEps, RopeTheta: c.RopeTheta,
		TieWordEmbeddings: c.Tied, HiddenAct: "silu", TorchDtype: torchDtype,
		AttnGate: c.AttnGate, Norm: c.Norm,
	}
	if c.QKNorm {
		fc.Architectures, fc.ModelType, fc.QKNorm = []string{"Qwen3ForCausalLM"}, "qwen3", true
	}
	if c.FFNKind == model.FFNMoE {
		fc.Architectures, fc.ModelType = []string{"Qwen2MoeForCausalLM"}, "qwen2_moe"
		fc.NumExperts, fc.NumExpertsPerTok, fc.MoEIntermediateSize = c.Experts, c.TopK, c.ExpertFFN
		fc.SharedExpertSize, fc.NormTopKProb, fc.RouterAuxLossCoef = c.SharedFFN, c.NormTopK, c.AuxCoef
		fc.RouterZLossCoef, fc.DecoderSparseStep, fc.CapacityFactor = c.ZLossCoef, c.SparseStep, c.Capacity
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

// WriteConfig writes dir/config.json for c atomically, in model.Save's format (a Hugging Face Llama, Qwen3 or
// Qwen2-MoE config plus smallinit's fields), with torch_dtype naming the stored dtype and init, if non-nil,
// recorded as smallinit_init.
func WriteConfig(dir string, c model.Config, init any, dtype safetensors.DType) error {
	td, err := TorchDtype(dtype)
	if err != nil {
		return err
	}
	b, err := configJSON(c, init, td)
	if err != nil {
		return err
	}
	return model.WriteFileAtomic(filepath.Join(dir, model.ConfigFile), b)
}

// writeFileSync writes data to path (a new file) and syncs it; the caller renames the directory into place.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
