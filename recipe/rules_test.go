package recipe

import (
	"math"
	"strings"
	"testing"
)

// TestSigmaIsEachRulesClosedForm checks, bit for bit, that each row's Sigma expression evaluates to the formula
// it states (so that reading σ from the table changed no draw).
func TestSigmaIsEachRulesClosedForm(t *testing.T) {
	for _, d := range [][2]int{{64, 24}, {768, 3072}, {4096, 4096}, {1, 1}} {
		din, dout := float64(d[0]), float64(d[1])
		for _, g := range []float64{0, 0.5, 0.75, 1, 2.3} {
			if got, want := Sigma(RuleGamma, g, 0, d[0], d[1]), math.Pow(din, -g); got != want {
				t.Errorf("gamma %g d_in %d: %v, want %v", g, d[0], got, want)
			}
		}
		if got := Sigma(RuleFixed, 1, 0.02, d[0], d[1]); got != 0.02 {
			t.Errorf("fixed: %v", got)
		}
		if got, want := Sigma(RuleXavier, 1, 0, d[0], d[1]), math.Sqrt(2/(din+dout)); got != want {
			t.Errorf("xavier %v: %v, want %v", d, got, want)
		}
		if got, want := Sigma(RuleKaiming, 1, 0, d[0], d[1]), math.Sqrt(2/din); got != want {
			t.Errorf("kaiming %v: %v, want %v", d, got, want)
		}
	}
	if !math.IsNaN(Sigma("nope", 1, 1, 2, 2)) {
		t.Error("unknown rule: σ not NaN")
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
