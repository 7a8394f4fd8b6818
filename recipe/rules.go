package recipe

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The rules of the table below, by name (the value of a recipe's init.rule).
const (
	RuleGamma   = "gamma"
	RuleFixed   = "fixed"
	RuleXavier  = "xavier"
	RuleKaiming = "kaiming"
)

// The parameters a rule may take: the recipe field (and TOML/JSON key) that holds it.
const (
	ParamGamma = "gamma"
	ParamStd   = "std"
)

// Rule is one initialisation rule (docs/definitions.md §2): one row of the table every list of rules is derived
// from (Validate, Sigma, the command line's choices, the audit's candidates and the table python/ reads). A new
// rule is a new row here, its closed form in rules_test.go's closedForm (the test fails for a row without one),
// and the regenerated table file.
type Rule struct {
	Name string // the recipe's rule value
	// Param is the recipe field the rule reads (ParamGamma, ParamStd), or "" for a rule without one; Validate
	// requires it in [Min, Max] (in (Min, Max] when MinOpen).
	Param    string
	Min, Max float64
	MinOpen  bool
	// Sigma is σ as an expression of d_in, d_out, gamma and std, with + − * /, ** (power), sqrt() and
	// parentheses. It is the formula's one statement: Sigma evaluates it, and the PyTorch package evaluates the
	// same text from the table file.
	Sigma string
	Doc   string // what the rule is, for help texts
	// AuditName is how the audit names a match: the rule name, with %s for the parameter's value. AuditTries are
	// the parameter values the audit tries as named rules (beyond those it estimates from the weights).
	AuditName  string
	AuditTries []float64
}

// rules is the table (docs/definitions.md §2). Order is the order help texts and the table file list them in.
var rules = []Rule{
	{Name: RuleGamma, Param: ParamGamma, Min: 0, Max: 4, Sigma: "d_in ** -gamma", Doc: "σ = d_in^(−γ), the study's rule",
		AuditName: "γ-rule γ=%s"},
	{Name: RuleFixed, Param: ParamStd, Min: 0, Max: 10, MinOpen: true, Sigma: "std", Doc: "σ = std (GPT-2/Megatron style 0.02)",
		AuditName: "fixed std %s", AuditTries: []float64{0.02}},
	{Name: RuleXavier, Sigma: "sqrt(2 / (d_in + d_out))", Doc: "Glorot normal", AuditName: "xavier"},
	{Name: RuleKaiming, Sigma: "sqrt(2 / d_in)", Doc: "He normal, PyTorch's kaiming_normal_ default gain", AuditName: "kaiming"},
}

// sigmaOf holds each rule's parsed Sigma, by name; built once from the table and never changed.
var sigmaOf = func() map[string]expr {
	m := make(map[string]expr, len(rules))
	for _, r := range rules {
		e, err := parseExpr(r.Sigma)
		if err != nil {
			panic(fmt.Sprintf("recipe: rule %s: sigma %q: %v", r.Name, r.Sigma, err))
		}
		m[r.Name] = e
	}
	return m
}()

// Rules returns the table of rules, in order (a copy).
func Rules() []Rule {
	out := make([]Rule, len(rules))
	for i, r := range rules {
		r.AuditTries = slices.Clone(r.AuditTries)
		out[i] = r
	}
	return out
}

// RuleNames lists the rules' names in table order.
func RuleNames() []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.Name
	}
	return out
}

// LookupRule returns the table row of the rule called name.
func LookupRule(name string) (Rule, bool) {
	for _, r := range rules {
		if r.Name == name {
			return r, true
		}
	}
	return Rule{}, false
}

// RuleForParam returns the rule that reads param (the one an override setting only that parameter implies).
func RuleForParam(param string) string {
	for _, r := range rules {
		if r.Param == param {
			return r.Name
		}
	}
	return ""
}

// check reports a parameter outside the rule's range; where prefixes the key (e.g. "init.").
func (r Rule) check(where string, v float64) error {
	if r.Param == "" {
		return nil
	}
	ok := !math.IsNaN(v) && v <= r.Max && (v > r.Min || (!r.MinOpen && v == r.Min))
	if !ok {
		open := "["
		if r.MinOpen {
			open = "("
		}
		return fmt.Errorf("%s%s = %g: must be in %s%g, %g]", where, r.Param, v, open, r.Min, r.Max)
	}
	return nil
}

// sigmaVars are the variables a rule's Sigma may read.
type sigmaVars struct{ dIn, dOut, gamma, std float64 }

// expr is a parsed Sigma expression.
type expr func(sigmaVars) float64

// parseExpr parses a Sigma expression:
//
//	sum   = prod {("+" | "-") prod}
//	prod  = unary {("*" | "/") unary}
//	unary = "-" unary | pow
//	pow   = atom ["**" unary]
//	atom  = number | d_in | d_out | gamma | std | "sqrt(" sum ")" | "(" sum ")"
//
// which is also the precedence of the same text read as Python.
func parseExpr(s string) (expr, error) {
	p := &exprParser{toks: tokenize(s)}
	e, err := p.sum()
	if err == nil && p.i < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	return e, err
}

func tokenize(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c == '*' && i+1 < len(s) && s[i+1] == '*':
			toks = append(toks, "**")
			i += 2
		case strings.IndexByte("+-*/()", c) >= 0:
			toks = append(toks, string(c))
			i++
		default:
			j := i
			number := c >= '0' && c <= '9' || c == '.'
			for j < len(s) && (strings.IndexByte(" +-*/()", s[j]) < 0 ||
				number && j > i && (s[j-1] == 'e' || s[j-1] == 'E') && (s[j] == '+' || s[j] == '-')) { // 1e-2
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

type exprParser struct {
	toks []string
	i    int
}

func (p *exprParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *exprParser) sum() (expr, error) {
	a, err := p.prod()
	for err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.toks[p.i]
		p.i++
		var b expr
		if b, err = p.prod(); err == nil {
			x, y := a, b
			if op == "+" {
				a = func(v sigmaVars) float64 { return x(v) + y(v) }
			} else {
				a = func(v sigmaVars) float64 { return x(v) - y(v) }
			}
		}
	}
	return a, err
}

func (p *exprParser) prod() (expr, error) {
	a, err := p.unary()
	for err == nil && (p.peek() == "*" || p.peek() == "/") {
		op := p.toks[p.i]
		p.i++
		var b expr
		if b, err = p.unary(); err == nil {
			x, y := a, b
			if op == "*" {
				a = func(v sigmaVars) float64 { return x(v) * y(v) }
			} else {
				a = func(v sigmaVars) float64 { return x(v) / y(v) }
			}
		}
	}
	return a, err
}

func (p *exprParser) unary() (expr, error) {
	if p.peek() == "-" {
		p.i++
		a, err := p.unary()
		return func(v sigmaVars) float64 { return -a(v) }, err
	}
	a, err := p.atom()
	if err == nil && p.peek() == "**" {
		p.i++
		var b expr
		if b, err = p.unary(); err == nil {
			x := a
			a = func(v sigmaVars) float64 { return math.Pow(x(v), b(v)) }
		}
	}
	return a, err
}

func (p *exprParser) atom() (expr, error) {
	t := p.peek()
	p.i++
	switch t {
	case "":
		return nil, fmt.Errorf("unexpected end")
	case "d_in":
		return func(v sigmaVars) float64 { return v.dIn }, nil
	case "d_out":
		return func(v sigmaVars) float64 { return v.dOut }, nil
	case "gamma":
		return func(v sigmaVars) float64 { return v.gamma }, nil
	case "std":
		return func(v sigmaVars) float64 { return v.std }, nil
	case "sqrt", "(":
		if t == "sqrt" {
			if p.peek() != "(" {
				return nil, fmt.Errorf("sqrt without (")
			}
			p.i++
		}
		a, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.i++
		if t == "sqrt" {
			return func(v sigmaVars) float64 { return math.Sqrt(a(v)) }, nil
		}
		return a, nil
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return nil, fmt.Errorf("unknown name %q", t)
	}
	return func(sigmaVars) float64 { return x }, nil
}
