package recipe

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/smallinit/smallinit/arch"
)

// InitOverride changes the rule of one tensor class. Zero fields inherit the recipe's.
type InitOverride struct {
	Rule  string   `toml:"rule,omitempty" json:"rule,omitempty"`
	Gamma *float64 `toml:"gamma" json:"gamma,omitempty"`
	Std   *float64 `toml:"std" json:"std,omitempty"`
}

// Init is an initialisation: a default rule for every matrix and optional per-class overrides (keys are
// arch.Class* names: embed, q, k, v, gate, o, ffn_gate, ffn_up, ffn_down, head, router, shared_gate). Norm gains start at 1 and
// biases at 0 whatever the recipe.
type Init struct {
	Rule       string                  `toml:"rule" json:"rule"`
	Gamma      float64                 `toml:"gamma" json:"gamma"`
	Std        float64                 `toml:"std" json:"std,omitempty"`
	DepthScale bool                    `toml:"depth_scale" json:"depth_scale,omitempty"` // × 1/sqrt(2L) on o and ffn_down
	Classes    map[string]InitOverride `toml:"classes" json:"classes,omitempty"`
}

// DefaultInit is the study's small init: the γ rule with γ = 1.
func DefaultInit() Init { return Init{Rule: RuleGamma, Gamma: 1} }

// Validate reports a bad rule, γ, std or class name: a rule not in the rules table, or a parameter outside its
// row's range.
func (r Init) Validate() error {
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
func (r Init) resolve(class string) (rule string, gamma, std float64) {
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
func (r Init) StdFor(t arch.TensorSpec, layers int) float64 {
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

// matrixClasses are the classes drawn by a rule, the ones a recipe may override.
var matrixClasses = []string{arch.ClassEmbed, arch.ClassQ, arch.ClassK, arch.ClassV, arch.ClassGate,
	arch.ClassO, arch.ClassFFNGate, arch.ClassFFNUp, arch.ClassFFNDown, arch.ClassHead, arch.ClassRouter,
	arch.ClassShGate}

// MatrixClasses lists the tensor classes drawn by a rule, the ones a recipe may override, in the model's order.
func MatrixClasses() []string { return append([]string(nil), matrixClasses...) }

// ClassNames lists the tensor classes a recipe may override, sorted.
func ClassNames() []string {
	c := append([]string(nil), matrixClasses...)
	sort.Strings(c)
	return c
}

// DepthScaled reports whether depth scaling (Init.DepthScale) applies to class: o and ffn_down, the two
// matrices that write into the residual stream (GPT-2's 1/sqrt(2L)).
func DepthScaled(class string) bool { return class == arch.ClassO || class == arch.ClassFFNDown }

// DepthDivisor is what depth scaling divides the σ of class by in a model of L layers: sqrt(2L) for the
// DepthScaled classes, 1 for the others.
func DepthDivisor(class string, layers int) float64 {
	if DepthScaled(class) {
		return math.Sqrt(2 * float64(layers))
	}
	return 1
}
