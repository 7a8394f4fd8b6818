package arch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/smallinit/smallinit/override"
)

// Preset is a named model shape with the batch size used to train and benchmark it. Presets are the project's
// shared yardstick: tests, benchmarks and python/torchref.py use the same ones. This file is the one preset
// table: train (model.preset), init and bench all resolve names with LookupPreset.
type Preset struct {
	Name   string
	Config Config
	Batch  int // sequences per step (B)
}

// Presets returns the engine's presets (engine and MoE issues): tiny, small and medium are dense (rmsnorm,
// ε = 1e-5, no gate, untied); tiny-moe and small-moe replace every FFN by E = 8 experts with top-2 routing and
// expert width d_ff/2, so that their active FFN parameters per token equal the dense preset's, the Switch
// load-balancing loss at α = 0.01 and auxiliary-loss-free balancing at router_bias_update_rate = 3e-3 (without
// it, a small-init model routes every token of a batch to the same two experts for its first ~150 steps: see
// train.TestTinyMoEKeepsExpertsBalanced). The study's larger scales are ScalePresets.
func Presets() []Preset {
	mk := func(name string, d, l, h, t, b int) Preset {
		return Preset{Name: name, Batch: b, Config: Config{
			Vocab: 4096, Dim: d, FFN: DefaultFFN(d), Layers: l, Heads: h, SeqLen: t,
			NormEps: DefaultNormEps, Norm: NormRMS, AttnGate: GateNone, RopeTheta: 10000, FFNKind: FFNDense,
		}}
	}
	moe := func(p Preset) Preset {
		p.Name += "-moe"
		c := &p.Config
		c.FFNKind, c.Experts, c.TopK, c.ExpertFFN = FFNMoE, 8, 2, c.FFN/2
		c.NormTopK, c.AuxCoef, c.SparseStep, c.BiasRate = true, 0.01, 1, 3e-3
		return p
	}
	tiny, small := mk("tiny", 128, 4, 4, 256, 16), mk("small", 256, 6, 8, 256, 16)
	return []Preset{tiny, small, mk("medium", 512, 8, 8, 512, 8), moe(tiny), moe(small)}
}

// Shapes of the study's scales (the issue "Beyond one machine"). All are Llama-like dense decoders: vocabulary
// V = 32000, context T = 2048, SwiGLU width d_ff = 8d/3 rounded up to a multiple of 64 (DefaultFFN), RMSNorm
// with ε = 1e-5, RoPE base 10000, no attention gate, untied LM head, and as many heads as the head size d_h
// allows: d_h = 64 up to 0.3B, d_h = 128 from 0.7B (as Llama and Qwen do at these widths). Parameter counts
// include the embedding and the head (2·V·d):
//
//	preset    d     L   H   d_h  d_ff   parameters  non-embedding
//	0.1b      768   12  12  64   2048   134.1M      85.0M
//	0.3b      1024  20  16  64   2752   318.5M      253.0M
//	0.7b      1536  22  12  128  4096   721.2M      622.9M
//	1.5b      2048  28  16  128  5504   1547.8M     1416.7M
//
// `--set qk_norm=true` gives the Qwen3 layout of the same shapes.
const (
	scaleVocab  = 32000
	scaleSeqLen = 2048
)

// ScalePresets returns the study's large presets, 0.1b, 0.3b, 0.7b and 1.5b (see the table above). Their Batch
// is 1: at T = 2048 the engine's activations for one sequence already take gigabytes at these widths, so they
// are meant for init (scale.Init), audit and analyze more than for training on one machine (bench and train
// check the memory they need first).
func ScalePresets() []Preset {
	mk := func(name string, d, l, h int) Preset {
		return Preset{Name: name, Batch: 1, Config: Config{
			Vocab: scaleVocab, Dim: d, FFN: DefaultFFN(d), Layers: l, Heads: h, SeqLen: scaleSeqLen,
			NormEps: DefaultNormEps, Norm: NormRMS, AttnGate: GateNone, RopeTheta: 10000, FFNKind: FFNDense,
		}}
	}
	return []Preset{mk("0.1b", 768, 12, 12), mk("0.3b", 1024, 20, 16), mk("0.7b", 1536, 22, 12), mk("1.5b", 2048, 28, 16)}
}

// LookupPreset returns the named preset, one of Presets() or ScalePresets(); names are case-insensitive, so
// 1.5B works too. The error lists every name.
func LookupPreset(name string) (Preset, error) {
	for _, p := range append(Presets(), ScalePresets()...) {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("unknown preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
}

// PresetNames lists every name LookupPreset accepts, the engine's presets first.
func PresetNames() []string {
	var names []string
	for _, p := range append(Presets(), ScalePresets()...) {
		names = append(names, p.Name)
	}
	return names
}

// The run-config keys of the two widths FollowHiddenSize reads (arch.KeyHiddenSize and arch.KeyFFN are
// these): hidden_size and intermediate_size in the [model] section.
const (
	KeyHiddenSize = "model.hidden_size"
	KeyFFN        = "model.intermediate_size"
)

// FollowHiddenSize is the one rule for d_ff after overrides of a preset's config: when hidden_size was
// overridden (dimSet) and intermediate_size was not (ffnSet false), d_ff follows the new width as DefaultFFN;
// otherwise it stays as the preset or the override gave it. Every path that resolves a preset and applies
// overrides (train.Load, the init and bench commands) calls it once, after the last override. The MoE expert
// width (moe_intermediate_size) does not follow; set it explicitly.
func (c *Config) FollowHiddenSize(dimSet, ffnSet bool) {
	if dimSet && !ffnSet {
		c.FFN = DefaultFFN(c.Dim)
	}
}

// FromPreset returns a preset's config (LookupPreset) with overrides applied, d_ff following hidden_size
// (FollowHiddenSize), validated. The overrides are model keys in the one override language, with or without
// their run-config section ("norm_eps=1e-12" or "model.norm_eps=1e-12", override.Qualify); any other section is
// an error naming the key.
func FromPreset(name string, sets []override.Set) (Config, Preset, error) {
	p, err := LookupPreset(name)
	if err != nil {
		return Config{}, p, err
	}
	doc := struct {
		Model Config `toml:"model"`
	}{p.Config}
	sets = override.Qualify(sets, doc, "model")
	if err := override.Apply(sets, &doc); errors.Is(err, override.ErrUnknownKey) {
		return doc.Model, p, fmt.Errorf("%w (only model keys apply to a preset)", err)
	} else if err != nil {
		return doc.Model, p, err
	}
	dimSet, ffnSet := false, false
	for _, s := range sets {
		dimSet, ffnSet = dimSet || s.Key == KeyHiddenSize, ffnSet || s.Key == KeyFFN
	}
	c := doc.Model
	c.FollowHiddenSize(dimSet, ffnSet)
	if err := c.Validate(); err != nil {
		return c, p, err
	}
	return c, p, nil
}
