package audit

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/recipe"
)

// checkDeclared compares the groups with the recipe recorded in config.json, if any.
func checkDeclared(rep *Report, groups []Group, layers int, z float64, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	rec, err := gammainit.ParseRecord(raw)
	if err != nil {
		return // a record without a valid recipe declares nothing to check
	}
	d := &Declared{Recipe: rec.Recipe, Seed: rec.Seed, Matches: true}
	for i := range groups {
		g := &groups[i]
		want := rec.Recipe.StdFor(g.shape, layers)
		ok := rule{kind: recipe.RuleFixed, param: want}.matches(g, layers, z)
		g.DeclaredStd, g.DeclaredOK = &want, &ok
		d.Matches = d.Matches && ok
	}
	rep.Declared = d
}

// verdict decides trained versus untrained and says it in one line. A model is untrained when its matrices are
// explained (by one rule, or by a main rule and per-class overrides) and its norm gains are still 1 and its
// biases 0; moved norms make it trained even when the matrices still fit a rule.
func verdict(rep *Report, groups []Group) string {
	explained := rep.Main != "" && len(groups) > 0
	for _, o := range rep.Overrides {
		if o == "" {
			explained = false
		}
	}
	fresh := rep.Norms.Ones && rep.Norms.Zeros
	var desc strings.Builder
	if explained {
		if len(rep.Rules) > 0 {
			desc.WriteString(strings.Join(rep.Rules, " ≡ "))
		} else {
			desc.WriteString(rep.Main)
			var labels []string
			for l := range rep.Overrides {
				labels = append(labels, l)
			}
			sort.Strings(labels)
			for i, l := range labels {
				sep := ", "
				if i == 0 {
					sep = "; overrides: "
				}
				desc.WriteString(sep + l + " " + rep.Overrides[l])
			}
		}
	}
	var b strings.Builder
	switch {
	case explained && fresh:
		b.WriteString("untrained: " + desc.String())
	case explained:
		rep.Trained = true
		fmt.Fprintf(&b, "trained: the norm gains have moved (max |g−1| = %.3g", rep.Norms.MaxGainDev)
		if rep.Norms.Biases > 0 {
			fmt.Fprintf(&b, ", max |bias| = %.3g", rep.Norms.MaxBias)
		}
		b.WriteString("), though the matrices still fit " + desc.String())
	default:
		rep.Trained = true
		b.WriteString("trained: no rule applies")
		if rep.Main != "" {
			var fit []string
			for _, g := range groups {
				if g.mainFit {
					fit = append(fit, g.Label)
				}
			}
			fmt.Fprintf(&b, " (%s still fits %s)", rep.Main, strings.Join(fit, ", "))
		}
		rep.Gamma, rep.DepthScaled = nil, nil
		for i := range groups {
			groups[i].DepthRatio = nil
		}
	}
	if rep.Declared != nil {
		if rep.Declared.Matches {
			b.WriteString(" (as smallinit_init records)")
		} else {
			b.WriteString(" (smallinit_init records " + recipeString(rep.Declared.Recipe) + ", which the weights no longer match)")
		}
	}
	return b.String()
}

// recipeString names a recorded recipe in the audit's words.
func recipeString(r recipe.Init) string {
	rr := rule{kind: r.Rule, depth: r.DepthScale}
	switch r.Rule {
	case recipe.RuleGamma:
		rr.param = r.Gamma
	case recipe.RuleFixed:
		rr.param = r.Std
	}
	s := rr.String()
	if len(r.Classes) > 0 {
		s += " with per-class overrides"
	}
	return s
}
