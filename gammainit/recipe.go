package gammainit

import (
	"github.com/smallinit/smallinit/recipe"
)

// Recipe is an initialisation: a rule for every matrix and per-class overrides (recipe.Init, the [init] section
// of a run's typed recipe, which owns the rules table and σ; this package draws what it says).
type Recipe = recipe.Init

// Override changes the rule of one tensor class (recipe.InitOverride).
type Override = recipe.InitOverride

// Rule is one row of the rules table (recipe.Rule).
type Rule = recipe.Rule

// The rules and their parameters, by name (recipe's table).
const (
	RuleGamma   = recipe.RuleGamma
	RuleFixed   = recipe.RuleFixed
	RuleXavier  = recipe.RuleXavier
	RuleKaiming = recipe.RuleKaiming
	ParamGamma  = recipe.ParamGamma
	ParamStd    = recipe.ParamStd
)

// Default is the study's small init, the γ rule with γ = 1 (recipe.DefaultInit).
func Default() Recipe { return recipe.DefaultInit() }

// Rules is recipe.Rules.
func Rules() []Rule { return recipe.Rules() }

// RuleNames is recipe.RuleNames.
func RuleNames() []string { return recipe.RuleNames() }

// LookupRule is recipe.LookupRule.
func LookupRule(name string) (Rule, bool) { return recipe.LookupRule(name) }

// RuleForParam is recipe.RuleForParam.
func RuleForParam(param string) string { return recipe.RuleForParam(param) }

// Sigma is recipe.Sigma: σ of a rule for a matrix of fan-in dIn and fan-out dOut before depth scaling.
func Sigma(rule string, gamma, std float64, dIn, dOut int) float64 {
	return recipe.Sigma(rule, gamma, std, dIn, dOut)
}

// ClassNames is recipe.ClassNames: the tensor classes a recipe may override, sorted.
func ClassNames() []string { return recipe.ClassNames() }

// DepthScaled is recipe.DepthScaled.
func DepthScaled(class string) bool { return recipe.DepthScaled(class) }

// DepthDivisor is recipe.DepthDivisor.
func DepthDivisor(class string, layers int) float64 { return recipe.DepthDivisor(class, layers) }
