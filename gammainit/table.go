package gammainit

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
)

// TableFile is where the repository keeps the table, relative to its root: the PyTorch package
// (python/smallinit_torch) reads it, and a test of this package fails when it differs from Table's output.
const TableFile = "python/smallinit_torch/gammainit_table.json"

// TableTensor is one tensor name of the table. Layer and expert indices are written {L} and {E}.
type TableTensor struct {
	Name    string `json:"name"`
	Class   string `json:"class"`
	Init    string `json:"init"`                // "normal" (drawn by the recipe), "ones" or "zeros"
	DInAxis *int   `json:"d_in_axis,omitempty"` // matrices: the axis of the stored [d_out, d_in] shape that is d_in
}

// TableExample is what Apply records for one model config and recipe: the reference a second implementation of
// the rule (the PyTorch package's gamma_init_) must reproduce tensor by tensor.
type TableExample struct {
	Config  json.RawMessage `json:"config"` // config.json as the engine writes it
	Recipe  recipe.Init     `json:"recipe"`
	Tensors []TensorStd     `json:"tensors"` // Apply's record; drawn_std of the seed-0 draw
}

// TableRule is one rule of the table: its name, the recipe key of its parameter ("" for none) with the range
// Validate allows, and σ as an expression of d_in, d_out, gamma and std (Python's syntax and precedence).
type TableRule struct {
	Name    string   `json:"name"`
	Param   string   `json:"param,omitempty"`
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
	MinOpen bool     `json:"min_open,omitempty"`
	Sigma   string   `json:"sigma"`
}

func tableRules() []TableRule {
	var out []TableRule
	for _, r := range recipe.Rules() {
		tr := TableRule{Name: r.Name, Param: r.Param, Sigma: r.Sigma}
		if r.Param != "" {
			lo, hi := r.Min, r.Max
			tr.Min, tr.Max, tr.MinOpen = &lo, &hi, r.MinOpen
		}
		out = append(out, tr)
	}
	return out
}

// TableDoc is the table: the rules, the classes a recipe may override, the classes depth scaling divides,
// every tensor name the engine writes with its class, how it starts and which axis is d_in, and examples.
type TableDoc struct {
	Format      string         `json:"format"`
	Rules       []TableRule    `json:"rules"`
	Classes     []string       `json:"classes"`
	DepthScaled []string       `json:"depth_scaled"`
	Tensors     []TableTensor  `json:"tensors"`
	Examples    []TableExample `json:"examples"`
}

// tableConfigs are the model configs the table is read from: between them they have every tensor the engine
// writes (both gate kinds, q/k/v biases, QK-norm, LayerNorm biases, dense and MoE FFNs, a shared expert, the
// router bias), with dimensions that differ from each other so that d_in's axis is unambiguous.
func tableConfigs() []arch.Config {
	dense := arch.Config{Vocab: 64, Dim: 24, FFN: 40, Layers: 2, Heads: 3, KVHeads: 1, HeadDim: 10, SeqLen: 16,
		NormEps: 1e-5, RopeTheta: 10000, AttnGate: arch.GateElementwise, Norm: arch.NormLayer, QKNorm: true, QKVBias: true}
	moe := arch.Config{Vocab: 64, Dim: 24, FFN: 40, Layers: 2, Heads: 3, HeadDim: 10, SeqLen: 16, NormEps: 1e-5,
		RopeTheta: 10000, AttnGate: arch.GateHeadwise, Norm: arch.NormRMS, FFNKind: arch.FFNMoE, Experts: 4, TopK: 2, ExpertFFN: 14,
		SharedFFN: 18, SparseStep: 1, BiasRate: 1e-3}
	return []arch.Config{dense, moe}
}

// tableRecipes are the recipes of the table's examples: every rule, depth scaling and per-class overrides. A rule
// none of the fixed recipes uses gets one of its own, with its parameter mid-range.
func tableRecipes() []recipe.Init {
	f := func(v float64) *float64 { return &v }
	out := []recipe.Init{
		recipe.DefaultInit(),
		{Rule: recipe.RuleGamma, Gamma: 0.5, DepthScale: true},
		{Rule: recipe.RuleFixed, Std: 0.02},
		{Rule: recipe.RuleXavier},
		{Rule: recipe.RuleKaiming, DepthScale: true},
		{Rule: recipe.RuleGamma, Gamma: 0.75, Classes: map[string]recipe.InitOverride{arch.ClassEmbed: {Std: f(0.02)},
			arch.ClassHead: {Gamma: f(1)}, arch.ClassO: {Rule: recipe.RuleKaiming}, arch.ClassRouter: {Rule: recipe.RuleXavier}}},
	}
	used := map[string]bool{}
	for _, r := range out {
		used[r.Rule] = true
		for _, o := range r.Classes {
			used[o.Rule] = true
		}
	}
	for _, r := range recipe.Rules() {
		if !used[r.Name] {
			rec := recipe.Init{Rule: r.Name}
			switch mid := (r.Min + r.Max) / 2; r.Param {
			case recipe.ParamGamma:
				rec.Gamma = mid
			case recipe.ParamStd:
				rec.Std = mid
			}
			out = append(out, rec)
		}
	}
	return out
}

var indexRe = regexp.MustCompile(`\.(layers|experts)\.\d+\.`)

// template replaces layer and expert indices by {L} and {E}.
func template(name string) string {
	return indexRe.ReplaceAllStringFunc(name, func(s string) string {
		if s[1] == 'l' {
			return ".layers.{L}."
		}
		return ".experts.{E}."
	})
}

// Table builds the table from this package's own behaviour: each config's model is initialised by Apply and
// every tensor's start ("ones", "zeros" or drawn) is read off the result, the classes depth scaling divides are
// those whose StdFor changes with it, and the examples are Apply's records.
func Table() (TableDoc, error) {
	doc := TableDoc{Format: "smallinit gammainit table v2 (written by gammainit.Table; do not edit)",
		Rules: tableRules(), Classes: recipe.ClassNames()}
	pool := kernel.NewPool(1)
	defer pool.Close()
	seen := map[string]bool{}
	depth := map[string]bool{}
	for _, c := range tableConfigs() {
		if err := c.Validate(); err != nil {
			return doc, fmt.Errorf("table config: %w", err)
		}
		m, err := model.New(c, 1, pool)
		if err != nil {
			return doc, err
		}
		if _, err := Apply(m, recipe.DefaultInit(), 0); err != nil {
			return doc, err
		}
		for _, t := range m.Specs {
			v := m.Params.Flat[t.Offset : t.Offset+t.Size()]
			tt := TableTensor{Name: template(t.Name), Class: t.Class, Init: startOf(v)}
			if t.IsMatrix() {
				ax := slices.Index(t.Shape, t.FanIn())
				if t.Shape[0] == t.Shape[1] || ax < 0 {
					return doc, fmt.Errorf("table: %s %v: d_in's axis is ambiguous", t.Name, t.Shape)
				}
				tt.DInAxis = &ax
				r := recipe.Init{Rule: recipe.RuleFixed, Std: 1, DepthScale: true}
				if r.StdFor(t, c.Layers) != 1 {
					depth[t.Class] = true
				}
			}
			if !seen[tt.Name] {
				seen[tt.Name] = true
				doc.Tensors = append(doc.Tensors, tt)
			}
		}
		cj, err := model.ConfigJSON(c, nil, "float32")
		if err != nil {
			return doc, err
		}
		for _, r := range tableRecipes() {
			rec, err := Apply(m, r, 0)
			if err != nil {
				return doc, err
			}
			doc.Examples = append(doc.Examples, TableExample{Config: json.RawMessage(cj), Recipe: r, Tensors: rec})
		}
	}
	for _, class := range recipe.ClassNames() {
		if depth[class] {
			doc.DepthScaled = append(doc.DepthScaled, class)
		}
	}
	return doc, nil
}

// startOf names how v starts: all ones, all zeros, or drawn.
func startOf(v []float32) string {
	ones, zeros := true, true
	for _, x := range v {
		ones = ones && x == 1
		zeros = zeros && x == 0
	}
	switch {
	case ones:
		return "ones"
	case zeros:
		return "zeros"
	}
	return "normal"
}

// TableJSON is the table as the committed file holds it (indented, non-finite values refused).
func TableJSON() ([]byte, error) {
	doc, err := Table()
	if err != nil {
		return nil, err
	}
	for _, e := range doc.Examples {
		for _, t := range e.Tensors {
			if math.IsNaN(t.Intended) || math.IsInf(t.Intended, 0) {
				return nil, fmt.Errorf("table: %s: intended std %v", t.Name, t.Intended)
			}
		}
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
