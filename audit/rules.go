package audit

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/recipe"
)

// Which initialisation rules explain the measured groups: the candidates (the rules of gammainit's table, and the
// γ and fixed rules at the parameters the groups imply), the test of a rule against a group, and the choice of
// the main rule and the per-class overrides.

// ruleZero is a matrix of zeros (as some recipes start o_proj or the head).
const ruleZero = "zero"

// rule is a candidate initialisation rule.
type rule struct {
	kind  string  // a rule of gammainit's table (recipe.Rules), or ruleZero
	param float64 // γ or σ
	depth bool    // × 1/sqrt(2L) on o and ffn_down
	// paramTol is the relative uncertainty the rule's σ inherits from an estimated parameter, per unit of
	// ln(d_in) for γ (so that the σ uncertainty at fan-in d is paramTol·ln d) and plain for a fixed σ.
	paramTol float64
}

func (r rule) String() string {
	if r.kind == ruleZero {
		return "zeros"
	}
	row, _ := recipe.LookupRule(r.kind)
	s := row.AuditName
	if row.Param != "" {
		s = fmt.Sprintf(row.AuditName, trim(r.param, 3))
	}
	if r.depth {
		s += " with 1/sqrt(2L) on o_proj/down_proj"
	}
	return s
}

// trim formats x with at most digits significant digits, without trailing zeros.
func trim(x float64, digits int) string {
	s := fmt.Sprintf("%.*g", digits, x)
	if strings.ContainsAny(s, "e") {
		return s
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// recipe is the rule as a gammainit recipe (not for ruleZero), which is what gives its σ: the audit writes no
// σ formula of its own.
func (r rule) recipe() recipe.Init {
	rec := recipe.Init{Rule: r.kind, DepthScale: r.depth}
	row, _ := recipe.LookupRule(r.kind)
	switch row.Param {
	case recipe.ParamGamma:
		rec.Gamma = r.param
	case recipe.ParamStd:
		rec.Std = r.param
	}
	return rec
}

// sigma is the σ the rule gives the group's tensors in a model of L layers: gammainit's StdFor.
func (r rule) sigma(g *Group, layers int) float64 { return r.recipe().StdFor(g.shape, layers) }

// divisor is what the rule's depth scaling divides a group's σ by (1 without depth scaling).
func (r rule) divisor(class string, layers int) float64 {
	if r.depth {
		return recipe.DepthDivisor(class, layers)
	}
	return 1
}

// matches reports whether every tensor of g, and g pooled, has the std the rule predicts.
func (r rule) matches(g *Group, layers int, z float64) bool {
	if r.kind == ruleZero {
		for _, t := range g.members {
			if t.Moments.MaxDev != 0 {
				return false
			}
		}
		return true
	}
	if !(g.Std > 0) {
		return false
	}
	want := r.sigma(g, layers)
	extra := r.paramTol
	if r.kind == recipe.RuleGamma {
		extra *= math.Log(float64(g.DIn))
	}
	if math.Abs(g.Std/want-1) > g.Tol+extra {
		return false
	}
	for _, t := range g.members {
		s := t.Moments.Std()
		if math.Abs(s/want-1) > tolerance(t.Moments.N, z, t.DType, s)+extra {
			return false
		}
	}
	return true
}

// namedRules are the rules of gammainit's table the audit tries as they stand: each rule without a parameter,
// and each rule with a parameter at the values its row asks the audit to try (fixed std 0.02).
func namedRules(depth bool) []rule {
	var rs []rule
	for _, row := range recipe.Rules() {
		if row.Param == "" {
			rs = append(rs, rule{kind: row.Name, depth: depth})
		}
		for _, p := range row.AuditTries {
			rs = append(rs, rule{kind: row.Name, param: p, depth: depth})
		}
	}
	return rs
}

// candidates are the rules worth trying on groups: the named ones, and the γ rule and the fixed rule with the
// parameter each group implies, with and without depth scaling.
func candidates(groups []Group, layers int) []rule {
	rs := []rule{{kind: ruleZero}}
	for _, depth := range []bool{false, true} {
		if depth && !hasDepthClass(groups) {
			break
		}
		rs = append(rs, namedRules(depth)...)
		for i := range groups {
			g := &groups[i]
			if g.Std <= 0 {
				continue
			}
			div := rule{depth: depth}.divisor(g.Class, layers)
			lnD := math.Log(float64(g.DIn))
			rs = append(rs, rule{kind: recipe.RuleGamma, param: gammainit.GammaEff(g.Std*div, g.DIn), depth: depth, paramTol: g.Tol / lnD},
				rule{kind: recipe.RuleFixed, param: g.Std * div, depth: depth, paramTol: g.Tol})
		}
	}
	return rs
}

func hasDepthClass(groups []Group) bool {
	for _, g := range groups {
		if recipe.DepthScaled(g.Class) {
			return true
		}
	}
	return false
}

// refine re-estimates a γ or fixed-σ rule's parameter from the groups it explains (inverse-variance weighted),
// which is more precise than the single group it came from.
func refine(r rule, groups []Group, explained []int, layers int) rule {
	if r.kind != recipe.RuleGamma && !(r.kind == recipe.RuleFixed && r.paramTol > 0) {
		return r
	}
	var sw, swx float64
	for _, i := range explained {
		g := &groups[i]
		div := r.divisor(g.Class, layers)
		var x, sd float64
		if r.kind == recipe.RuleGamma {
			x, sd = gammainit.GammaEff(g.Std*div, g.DIn), g.Tol/math.Log(float64(g.DIn))
		} else {
			x, sd = g.Std*div, g.Tol*g.Std*div
		}
		w := 1 / (sd * sd)
		sw += w
		swx += w * x
	}
	if sw == 0 {
		return r
	}
	out := r
	out.param = swx / sw
	if r.kind == recipe.RuleGamma {
		out.paramTol = 1 / math.Sqrt(sw)
	} else {
		out.paramTol = 1 / math.Sqrt(sw) / out.param
	}
	return out
}

// explained returns the indices of the groups rule r matches.
func explained(r rule, groups []Group, layers int, z float64) []int {
	var out []int
	for i := range groups {
		if r.matches(&groups[i], layers, z) {
			out = append(out, i)
		}
	}
	return out
}

// named reports whether r is a rule of its own (fixed 0.02, Xavier, Kaiming, zeros: a rule without a
// parameter or one of namedRules' values) rather than one whose parameter was estimated from the groups.
func (r rule) named() bool {
	return r.kind != recipe.RuleGamma && r.paramTol == 0
}

// ruleOrder ranks rules that explain the same groups: rules without a parameter first, then named parameter
// values (fixed 0.02), then the γ rule, then an estimated fixed σ.
func ruleOrder(r rule) int {
	row, _ := recipe.LookupRule(r.kind)
	switch {
	case r.kind == ruleZero, row.Param == "":
		return 0
	case r.kind == recipe.RuleGamma:
		return 2
	case r.paramTol == 0:
		return 1
	}
	return 3
}

// decideRules finds the rules that explain every group, the main rule (most groups explained) and the
// per-class overrides of the groups it leaves out.
func decideRules(rep *Report, groups []Group, layers int, z float64) {
	rep.Rules = []string{}
	if len(groups) == 0 {
		return
	}
	type fit struct {
		r   rule
		exp []int
	}
	var fits []fit
	seen := map[string]bool{}
	for _, r := range candidates(groups, layers) {
		exp := explained(r, groups, layers, z)
		if len(exp) == 0 {
			continue
		}
		if rr := refine(r, groups, exp, layers); rr != r {
			if e2 := explained(rr, groups, layers, z); len(e2) >= len(exp) {
				r, exp = rr, e2
			}
		}
		// A parameter estimated from one group always fits that group: such a rule means something only
		// when it explains a second group too (or the model has a single group).
		if !r.named() && len(exp) < min(2, len(groups)) {
			continue
		}
		// One rule per kind, depth scaling and set of groups explained (estimates from different groups
		// differ in the last digit).
		key := fmt.Sprint(r.kind, r.depth, exp)
		if r.named() {
			key = r.String()
		}
		if !seen[key] && !seen[r.String()] {
			seen[key], seen[r.String()] = true, true
			fits = append(fits, fit{r, exp})
		}
	}
	sort.SliceStable(fits, func(i, j int) bool {
		if len(fits[i].exp) != len(fits[j].exp) {
			return len(fits[i].exp) > len(fits[j].exp)
		}
		return ruleOrder(fits[i].r) < ruleOrder(fits[j].r)
	})
	for k, f := range fits {
		all := len(f.exp) == len(groups)
		if all {
			rep.Rules = append(rep.Rules, f.r.String())
		}
		if k == 0 || all || f.r.named() {
			for _, i := range f.exp {
				groups[i].addMatch(f.r)
				groups[i].mainFit = groups[i].mainFit || k == 0
			}
		}
	}
	if len(fits) == 0 {
		return
	}
	main := fits[0]
	rep.Main = main.r.String()
	if main.r.kind == recipe.RuleGamma {
		g := main.r.param
		rep.Gamma = &g
	}
	if hasDepthClass(groups) && main.r.kind != ruleZero {
		d := main.r.depth
		rep.DepthScaled = &d
		base := main.r
		base.depth = false
		for i := range groups {
			if g := &groups[i]; recipe.DepthScaled(g.Class) {
				ratio := g.Std / base.sigma(g, layers)
				g.DepthRatio = &ratio
			}
		}
	}
	// Overrides: a group the main rule leaves out may still match a named rule or a round γ (a multiple of
	// 0.05), as a per-class override of a recipe would give.
	in := map[int]bool{}
	for _, i := range main.exp {
		in[i] = true
	}
	for i := range groups {
		if in[i] {
			continue
		}
		g := &groups[i]
		if rep.Overrides == nil {
			rep.Overrides = map[string]string{}
		}
		rep.Overrides[g.Label] = ""
		for _, depth := range []bool{main.r.depth, !main.r.depth} {
			div := rule{depth: depth}.divisor(g.Class, layers)
			tries := append([]rule{{kind: ruleZero}}, namedRules(depth)...)
			if g.Std > 0 {
				tries = append(tries, rule{kind: recipe.RuleGamma, depth: depth,
					param: math.Round(20*gammainit.GammaEff(g.Std*div, g.DIn)) / 20})
			}
			for _, r := range tries {
				if r.matches(g, layers, z) {
					rep.Overrides[g.Label] = r.String()
					g.addMatch(r)
					break
				}
			}
			if rep.Overrides[g.Label] != "" {
				break
			}
		}
	}
}
