// Package scale takes smallinit beyond models that fit comfortably in one process: it writes freshly
// initialised checkpoints of the study's larger scales (0.1B to 1.5B parameters) tensor by tensor and shard by
// shard, without ever holding the model in memory, and it streams the weights of any checkpoint, one tensor at
// a time, for the weight diagnostics and the init audit.
//
// The streaming init (Init) draws every tensor from its own gammainit.Stream, in element order, exactly as
// gammainit.Apply does on an in-memory model: a float32 checkpoint is bit-identical to what model.Save writes
// after gammainit.Apply with the same config, recipe and seed, and a bfloat16 one holds those values rounded to
// nearest even.
package scale

import (
	"fmt"
	"strings"

	"github.com/smallinit/smallinit/model"
)

// Shapes of the study's scales (the issue "Beyond one machine"). All are Llama-like dense decoders: vocabulary
// V = 32000, context T = 2048, SwiGLU width d_ff = 8d/3 rounded up to a multiple of 64 (model.DefaultFFN),
// RMSNorm with ε = 1e-5, RoPE base 10000, no attention gate, untied LM head, and as many heads as the head
// size d_h allows: d_h = 64 up to 0.3B, d_h = 128 from 0.7B (as Llama and Qwen do at these widths). Parameter
// counts include the embedding and the head (2·V·d):
//
//	preset    d     L   H   d_h  d_ff   parameters  non-embedding
//	0.1b      768   12  12  64   2048   134.1M      85.0M
//	0.3b      1024  20  16  64   2752   318.5M      253.0M
//	0.7b      1536  22  12  128  4096   721.2M      622.9M
//	1.5b      2048  28  16  128  5504   1547.8M     1416.7M
//
// `--set qk_norm=true` gives the Qwen3 layout of the same shapes; any other shape is `--set key=value` away.
const (
	scaleVocab  = 32000
	scaleSeqLen = 2048
)

// Presets returns the study's large presets, 0.1b, 0.3b, 0.7b and 1.5b (see the table above). Their Batch is
// 1: at T = 2048 the engine's activations for one sequence already take gigabytes at these widths, so they are
// meant for init, audit and analyze rather than for training on one machine.
func Presets() []model.Preset {
	mk := func(name string, d, l, h int) model.Preset {
		return model.Preset{Name: name, Batch: 1, Config: model.Config{
			Vocab: scaleVocab, Dim: d, FFN: model.DefaultFFN(d), Layers: l, Heads: h, SeqLen: scaleSeqLen,
			NormEps: 1e-5, Norm: model.NormRMS, AttnGate: model.GateNone, RopeTheta: 10000, FFNKind: model.FFNDense,
		}}
	}
	return []model.Preset{mk("0.1b", 768, 12, 12), mk("0.3b", 1024, 20, 16), mk("0.7b", 1536, 22, 12), mk("1.5b", 2048, 28, 16)}
}

// LookupPreset returns the named preset: one of model.Presets() (tiny, small, medium, tiny-moe, small-moe) or
// of Presets() (0.1b, 0.3b, 0.7b, 1.5b; the names are case-insensitive, so 1.5B works too).
func LookupPreset(name string) (model.Preset, error) {
	if p, err := model.LookupPreset(name); err == nil {
		return p, nil
	}
	for _, p := range Presets() {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	return model.Preset{}, fmt.Errorf("unknown preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
}

// PresetNames lists every name LookupPreset accepts, the engine's presets first.
func PresetNames() []string {
	var names []string
	for _, p := range append(model.Presets(), Presets()...) {
		names = append(names, p.Name)
	}
	return names
}
