package recipe

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// closedForm is σ of each rule as docs/definitions.md §2 states it (σ = d_in^(−γ) for the γ rule, the baselines
// beside it), written once here in Go and apart from the table's Sigma text. Every row of the table must have
// one: a new rule fails TestSigmaIsEachRulesClosedForm until its formula is written here.
var closedForm = map[string]func(dIn, dOut, gamma, std float64) float64{
	RuleGamma:   func(dIn, _, gamma, _ float64) float64 { return math.Pow(dIn, -gamma) },
	RuleFixed:   func(_, _, _, std float64) float64 { return std },
	RuleXavier:  func(dIn, dOut, _, _ float64) float64 { return math.Sqrt(2 / (dIn + dOut)) },
	RuleKaiming: func(dIn, _, _, _ float64) float64 { return math.Sqrt(2 / dIn) },
}

// sigmaMismatches evaluates σ of each row with sigma over shapes from 1×1 to 4096 wide and, for a row with a
// parameter, over its range (its ends, the open one excluded, its middle and the values the study uses), the
// other variable set to a value no rule should read, and returns one line per row without a closed form or
// whose σ differs from it in any bit.
func sigmaMismatches(rows []Rule, sigma func(r Rule, v sigmaVars) float64) []string {
	var bad []string
	for _, r := range rows {
		want, ok := closedForm[r.Name]
		if !ok {
			bad = append(bad, fmt.Sprintf("rule %s: no closed form in rules_test.go's closedForm", r.Name))
			continue
		}
		params := []float64{0.37} // no parameter: a γ and a std the rule must ignore
		if r.Param != "" {
			params = []float64{r.Max, (r.Min + r.Max) / 2, 0.02, 0.5, 0.75, 1, 2.3}
			if !r.MinOpen {
				params = append(params, r.Min)
			}
		}
	rowLoop:
		for _, d := range [][2]float64{{64, 24}, {768, 3072}, {4096, 4096}, {1, 1}, {3, 1000}} {
			for _, p := range params {
				v := sigmaVars{dIn: d[0], dOut: d[1], gamma: 0.37, std: 0.37}
				if r.Param == ParamGamma {
					v.gamma = p
				} else if r.Param == ParamStd {
					v.std = p
				}
				if got, w := sigma(r, v), want(v.dIn, v.dOut, v.gamma, v.std); math.Float64bits(got) != math.Float64bits(w) {
					bad = append(bad, fmt.Sprintf("rule %s (σ = %s) at d_in %g, d_out %g, γ %g, std %g: %v, want %v",
						r.Name, r.Sigma, v.dIn, v.dOut, v.gamma, v.std, got, w))
					break rowLoop
				}
			}
		}
	}
	return bad
}

// TestSigmaIsEachRulesClosedForm checks, bit for bit, that Sigma of every row of the table evaluates to the
// row's closed form (so that reading σ from the table changed no draw, and a new row is checked without a new
// line here beyond its formula), and that the check catches a planted wrong σ and a row without a formula.
func TestSigmaIsEachRulesClosedForm(t *testing.T) {
	bySigma := func(r Rule, v sigmaVars) float64 { return Sigma(r.Name, v.gamma, v.std, int(v.dIn), int(v.dOut)) }
	for _, b := range sigmaMismatches(Rules(), bySigma) {
		t.Error(b)
	}
	if !math.IsNaN(Sigma("nope", 1, 1, 2, 2)) {
		t.Error("unknown rule: σ not NaN")
	}

	byText := func(r Rule, v sigmaVars) float64 {
		e, err := parseExpr(r.Sigma)
		if err != nil {
			t.Fatalf("rule %s: %v", r.Name, err)
		}
		return e(v)
	}
	set := func(name, sigma string) func([]Rule) []Rule {
		return func(rows []Rule) []Rule {
			for i := range rows {
				if rows[i].Name == name {
					rows[i].Sigma = sigma
				}
			}
			return rows
		}
	}
	for _, tc := range []struct {
		name  string
		plant func(rows []Rule) []Rule
		want  string
	}{
		{"γ's sign", set(RuleGamma, "d_in ** gamma"), "rule gamma (σ = d_in ** gamma)"},
		{"kaiming's gain", set(RuleKaiming, "sqrt(1 / d_in)"), "rule kaiming"},
		{"xavier reads γ", set(RuleXavier, "sqrt(2 / (d_in + d_out)) ** gamma"), "rule xavier"},
		{"fixed ignores std", set(RuleFixed, "0.02"), "rule fixed"},
		{"a new row", func(rows []Rule) []Rule { return append(rows, Rule{Name: "lecun", Sigma: "sqrt(1 / d_in)"}) }, "rule lecun: no closed form"},
	} {
		t.Run("planted "+tc.name, func(t *testing.T) {
			rows := tc.plant(Rules())
			if got := sigmaMismatches(rows, byText); len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("mismatches %q, want one starting %q", got, tc.want)
			}
		})
	}
	if got := sigmaMismatches(Rules(), byText); len(got) != 0 {
		t.Errorf("the table's own text: %q", got)
	}
}

// TestParseExprPrecedence checks the grammar against Python's precedence on the same text.
func TestParseExprPrecedence(t *testing.T) {
	v := sigmaVars{dIn: 4, dOut: 12, gamma: 0.5, std: 3}
	for _, c := range []struct {
		src  string
		want float64
	}{
		{"d_in ** -gamma", 0.5},
		{"-d_in ** 2", -16},     // Python: -(d_in ** 2)
		{"2 ** 3 ** 2", 512},    // right-associative
		{"d_out / d_in * 2", 6}, // left to right
		{"1 + 2 * std - 4", 3},
		{"sqrt(2 / (d_in + d_out))", math.Sqrt(2.0 / 16)},
		{"std * 1e-2", 0.03},
	} {
		e, err := parseExpr(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := e(v); math.Abs(got-c.want) > 1e-15*math.Abs(c.want) {
			t.Errorf("%s = %v, want %v", c.src, got, c.want)
		}
	}
}

// TestParseExprRefusesBadInput checks that a typo in a row's Sigma is an error, not a silent NaN.
func TestParseExprRefusesBadInput(t *testing.T) {
	for _, src := range []string{"", "d_inn", "sqrt 2", "(1 + 2", "1 +", "2 3", "exp(1)", "d_in)"} {
		if _, err := parseExpr(src); err == nil {
			t.Errorf("%q: no error", src)
		}
	}
}

// TestRulesTableRows checks each row is usable by every reader: a unique name, a parameter the recipe has with
// a non-empty range, an audit name with a slot for the parameter exactly when there is one, and a Validate that
// accepts the range's ends (the open one excluded) and refuses outside it.
func TestRulesTableRows(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.Name] || r.Name == "" {
			t.Errorf("rule %q: empty or repeated name", r.Name)
		}
		seen[r.Name] = true
		if strings.Contains(r.AuditName, "%s") != (r.Param != "") {
			t.Errorf("rule %s: audit name %q and param %q disagree", r.Name, r.AuditName, r.Param)
		}
		if r.Param == "" {
			if err := (Init{Rule: r.Name}).Validate(); err != nil {
				t.Errorf("rule %s: %v", r.Name, err)
			}
			continue
		}
		if r.Param != ParamGamma && r.Param != ParamStd {
			t.Errorf("rule %s: param %q is no recipe field", r.Name, r.Param)
		}
		if !(r.Min < r.Max) {
			t.Errorf("rule %s: range [%g, %g]", r.Name, r.Min, r.Max)
		}
		with := func(v float64) Init {
			rec := Init{Rule: r.Name}
			if r.Param == ParamGamma {
				rec.Gamma = v
			} else {
				rec.Std = v
			}
			return rec
		}
		for v, ok := range map[float64]bool{r.Max: true, (r.Min + r.Max) / 2: true, r.Min: !r.MinOpen,
			r.Max * 1.001: false, r.Min - 1: false, math.NaN(): false} {
			if err := with(v).Validate(); (err == nil) != ok {
				t.Errorf("rule %s, %s = %g: Validate %v, want ok %v", r.Name, r.Param, v, err, ok)
			}
		}
		if RuleForParam(r.Param) != r.Name {
			t.Errorf("param %s: implies rule %s, want %s", r.Param, RuleForParam(r.Param), r.Name)
		}
	}
}
