// Package model is smallinit's decoder-only Transformer: its parameters laid out in one flat buffer, and a
// forward and backward pass over preallocated activations (docs/definitions.md §1). It reads like llm.c's
// train_gpt2.c: every layer's forward and backward sit side by side, all activations live in one explicit struct
// allocated once, and a training step allocates nothing. The config it is built from, its tensor layout and the
// preset table are package arch's plain data, re-exported here under the names model has always had.
package model

import (
	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/override"
)

// Config is the shape and the architecture switches of a model (arch.Config).
type Config = arch.Config

// TensorSpec describes one named tensor inside the flat parameter buffer (arch.TensorSpec).
type TensorSpec = arch.TensorSpec

// Preset is a named model shape with its batch size (arch.Preset).
type Preset = arch.Preset

// The architecture's names, as arch defines them: norm, gate, FFN and RoPE-scaling kinds, tensor classes and
// the size bound.
const (
	NormRMS         = arch.NormRMS
	NormLayer       = arch.NormLayer
	GateNone        = arch.GateNone
	GateHeadwise    = arch.GateHeadwise
	GateElementwise = arch.GateElementwise
	FFNDense        = arch.FFNDense
	FFNMoE          = arch.FFNMoE
	ClassEmbed      = arch.ClassEmbed
	ClassQ          = arch.ClassQ
	ClassK          = arch.ClassK
	ClassV          = arch.ClassV
	ClassGate       = arch.ClassGate
	ClassO          = arch.ClassO
	ClassFFNGate    = arch.ClassFFNGate
	ClassFFNUp      = arch.ClassFFNUp
	ClassFFNDown    = arch.ClassFFNDown
	ClassHead       = arch.ClassHead
	ClassRouter     = arch.ClassRouter
	ClassRouterB    = arch.ClassRouterB
	ClassShGate     = arch.ClassShGate
	ClassNorm       = arch.ClassNorm
	ClassNormBias   = arch.ClassNormBias
	ClassQKVBias    = arch.ClassQKVBias
	RopeLinear      = arch.RopeLinear
	RopeLlama3      = arch.RopeLlama3
	MaxDim          = arch.MaxDim
)

// DefaultFFN is arch.DefaultFFN.
func DefaultFFN(d int) int { return arch.DefaultFFN(d) }

// Presets is arch.Presets.
func Presets() []Preset { return arch.Presets() }

// ScalePresets is arch.ScalePresets.
func ScalePresets() []Preset { return arch.ScalePresets() }

// LookupPreset is arch.LookupPreset.
func LookupPreset(name string) (Preset, error) { return arch.LookupPreset(name) }

// PresetNames is arch.PresetNames.
func PresetNames() []string { return arch.PresetNames() }

// FromPreset is arch.FromPreset.
func FromPreset(name string, sets []override.Set) (Config, Preset, error) {
	return arch.FromPreset(name, sets)
}
