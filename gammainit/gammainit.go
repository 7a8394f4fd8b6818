// Package gammainit initialises a model's weights by the γ rule of docs/definitions.md §2, W_ij ~ N(0, σ²) with
// σ = d_in^(−γ), and by the baselines beside it (fixed std, Xavier, Kaiming). Every tensor draws from its own
// random stream derived from the seed and the tensor's name, so adding a tensor or a layer leaves the draws of
// all the others unchanged.
//
// It is the one owner of the init rule: the rules table (Rules: each rule's name, parameter range and σ
// expression, from which Validate, Sigma, the command line's choices, the audit's candidates and the Python
// table derive), the σ formulas (Sigma, Recipe.StdFor with per-class overrides and depth scaling), how each
// tensor class starts (StartOf) and the random streams (Stream, Normal). Apply
// initialises a model in memory; scale.Init streams checkpoints through the same Stream and StdFor, and the
// audit asks StdFor for the σ of each rule it tries. Classes and Table describe the class table to other
// implementations as JSON (Table, committed as python/smallinit_torch/gammainit_table.json, is the
// table for python/ to read instead of keeping its own copy). Record is the init record (a run's init.json, a
// model's smallinit_init) that training, scale.Init, the audit and python/ write and read.
package gammainit

import (
	"fmt"
	"math"
	"strings"

	"github.com/smallinit/smallinit/model"
)

// Override changes the rule of one tensor class. Zero fields inherit the recipe's.
type Override struct {
	Rule  string   `toml:"rule,omitempty" json:"rule,omitempty"`
	Gamma *float64 `toml:"gamma" json:"gamma,omitempty"`
	Std   *float64 `toml:"std" json:"std,omitempty"`
}

// Recipe is an initialisation: a default rule for every matrix and optional per-class overrides (keys are
// model.Class* names: embed, q, k, v, gate, o, ffn_gate, ffn_up, ffn_down, head, router, shared_gate). Norm gains start at 1 and
// biases at 0 whatever the recipe.
type Recipe struct {
	Rule       string              `toml:"rule" json:"rule"`
	Gamma      float64             `toml:"gamma" json:"gamma"`
	Std        float64             `toml:"std" json:"std,omitempty"`
	DepthScale bool                `toml:"depth_scale" json:"depth_scale,omitempty"` // × 1/sqrt(2L) on o and ffn_down
	Classes    map[string]Override `toml:"classes" json:"classes,omitempty"`
}

// Default is the study's small init: the γ rule with γ = 1.
func Default() Recipe { return Recipe{Rule: RuleGamma, Gamma: 1} }

// Validate reports a bad rule, γ, std or class name: a rule not in the rules table, or a parameter outside its
// row's range.
func (r Recipe) Validate() error {
	check := func(where, rule string, gamma, std float64) error {
		row, ok := LookupRule(rule)
		if !ok {
			names := RuleNames()
			return fmt.Errorf("%srule = %q: want %s or %s", where, rule, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		}
		return row.check(where, map[string]float64{ParamGamma: gamma, ParamStd: std}[row.Param])
	}
	if err := check("init.", r.Rule, r.Gamma, r.Std); err != nil {
		return err
	}
	for class := range r.Classes {
		if !contains(matrixClasses, class) {
			return fmt.Errorf("init.classes.%s: unknown tensor class (have %s)", class, strings.Join(matrixClasses, ", "))
		}
		rule, gamma, std := r.resolve(class)
		if err := check("init.classes."+class+".", rule, gamma, std); err != nil {
			return err
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// resolve returns the rule, γ and std in force for a class. An override that only sets std implies the fixed
// rule; one that only sets gamma implies the γ rule.
func (r Recipe) resolve(class string) (rule string, gamma, std float64) {
	rule, gamma, std = r.Rule, r.Gamma, r.Std
	o, ok := r.Classes[class]
	if !ok {
		return
	}
	switch {
	case o.Rule != "":
		rule = o.Rule
	case o.Std != nil:
		rule = RuleForParam(ParamStd)
	case o.Gamma != nil:
		rule = RuleForParam(ParamGamma)
	}
	if o.Gamma != nil {
		gamma = *o.Gamma
	}
	if o.Std != nil {
		std = *o.Std
	}
	return
}

// StdFor returns the σ the recipe gives tensor t of a model with L layers: the σ of the rule in force for its
// class (Sigma, at d_in = t.FanIn() and d_out = t.Shape[0]) divided by DepthDivisor when the recipe scales by
// depth.
func (r Recipe) StdFor(t model.TensorSpec, layers int) float64 {
	rule, gamma, std := r.resolve(t.Class)
	s := Sigma(rule, gamma, std, t.FanIn(), t.Shape[0])
	if r.DepthScale {
		s /= DepthDivisor(t.Class, layers)
	}
	return s
}

// Sigma is the σ of a rule for a matrix of fan-in dIn and fan-out dOut before any depth scaling: its row's Sigma
// expression of the rules table (d_in^(−γ) for the γ rule, std for the fixed rule, sqrt(2/(d_in+d_out)) for
// Xavier and sqrt(2/d_in) for Kaiming); NaN for an unknown rule. Apply, scale.Init and the audit's candidate
// rules all take σ from here.
func Sigma(rule string, gamma, std float64, dIn, dOut int) float64 {
	e, ok := sigmaOf[rule]
	if !ok {
		return math.NaN()
	}
	return e(sigmaVars{dIn: float64(dIn), dOut: float64(dOut), gamma: gamma, std: std})
}

// GammaEff is the γ a fixed std implies at fan-in d_in: ln(1/std)/ln(d_in) (docs/definitions.md §2).
func GammaEff(std float64, dIn int) float64 { return math.Log(1/std) / math.Log(float64(dIn)) }

// TensorStd is the initialisation record of one tensor: the σ the recipe asked for and the std of the draw.
type TensorStd struct {
	Name     string  `json:"name"`
	Class    string  `json:"class"`
	FanIn    int     `json:"d_in"`
	Intended float64 `json:"intended_std"`
	Drawn    float64 `json:"drawn_std"`
	GammaEff float64 `json:"gamma_eff"` // ln(1/intended)/ln(d_in)
}

// Apply initialises every parameter of m (norm gains 1, norm and q/k/v biases 0, matrices by the recipe) and
// returns, per matrix, the intended and drawn std in buffer order. Under grouped-query attention k_proj and
// v_proj have fewer rows but the same d_in = d, so their σ = d^(−γ) per element is unchanged.
func Apply(m *model.Model, r Recipe, seed uint64) ([]TensorStd, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var out []TensorStd
	for _, t := range m.Specs {
		v := m.Params.Flat[t.Offset : t.Offset+t.Size()]
		switch StartOf(t.Class) {
		case StartOnes:
			for i := range v {
				v[i] = 1
			}
			continue
		case StartZeros:
			clear(v)
			continue
		}
		std := r.StdFor(t, m.Config.Layers)
		var ss float64
		Stream(seed, t.Name).Fill(v, std, &ss)
		out = append(out, TensorStd{Name: t.Name, Class: t.Class, FanIn: t.FanIn(), Intended: std,
			Drawn: math.Sqrt(ss / float64(len(v))), GammaEff: GammaEff(std, t.FanIn())})
	}
	return out, nil
}
