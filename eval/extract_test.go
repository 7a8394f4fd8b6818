package eval

import "testing"

// TestEvalGSM8KExtraction checks strict-match and flexible-extract with the harness's cleanup on the cases that
// trip up simpler extractors: thousands separators, dollar signs, trailing periods, several numbers, several
// "####" lines and the harness's string (not numeric) comparison.
func TestEvalGSM8KExtraction(t *testing.T) {
	for _, tc := range []struct {
		name           string
		out, gold      string
		wantS, wantF   string // extracted before cleanup ("" = none)
		strictOK, flOK bool
	}{
		{name: "plain", out: "48/2 = 24\n#### 72", gold: "72", wantS: "72", wantF: "72", strictOK: true, flOK: true},
		{name: "thousands", out: "The total is 1,234 so\n#### 1,234", gold: "1234", wantS: "1,234", wantF: "1,234", strictOK: true, flOK: true},
		{name: "dollar and period", out: "She earns $1,234.", gold: "1234", wantF: "$1,234.", flOK: true},
		{name: "trailing period strict", out: "#### 18.", gold: "18", wantS: "18.", wantF: "18.", strictOK: true, flOK: true},
		{name: "several numbers: strict first, flexible last", out: "#### 5\nno wait\n#### 7", gold: "7", wantS: "5", wantF: "7", flOK: true},
		{name: "list commas", out: "First 5, then 10, finally 18", gold: "18", wantF: "18", flOK: true},
		{name: "negative", out: "It drops to -3 degrees", gold: "-3", wantF: "-3", flOK: true},
		{name: "string comparison", out: "It costs 12.50", gold: "12.5", wantF: "12.50"},
		{name: "single digit via the second group", out: "x 7 y", gold: "7", wantF: "7", flOK: true},
		{name: "dollar sign apart", out: "It costs $ 5", gold: "5", wantF: "5", flOK: true},
		{name: "no number", out: "I do not know.", gold: "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, okS := ExtractStrict(tc.out)
			f, okF := ExtractFlexible(tc.out)
			if s != tc.wantS || okS != (tc.wantS != "") {
				t.Errorf("strict extract %q, %v; want %q", s, okS, tc.wantS)
			}
			if f != tc.wantF || okF != (tc.wantF != "") {
				t.Errorf("flexible extract %q, %v; want %q", f, okF, tc.wantF)
			}
			gs, gf := gradeGSM8K(tc.out, tc.gold)
			if gs != tc.strictOK || gf != tc.flOK {
				t.Errorf("grade strict %v flexible %v, want %v %v", gs, gf, tc.strictOK, tc.flOK)
			}
		})
	}
	if g := CleanNumber("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 1,072"); g != "1072" {
		t.Errorf("gold from a GSM8K answer: %q, want 1072", g)
	}
}

// TestEvalMathBoxed checks the last-\boxed extraction with nested braces and the other forms hendrycks_math
// accepts.
func TestEvalMathBoxed(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`so the answer is $\boxed{\frac{1}{2}}$.`, `\frac{1}{2}`, true},
		{`$\boxed{\left(3, \frac{\pi}{2}\right)}$`, `\left(3, \frac{\pi}{2}\right)`, true},
		{`\boxed{1} first, then \boxed{2}`, "2", true},
		{`\boxed{\{1,2\}}`, `\{1,2\}`, true},
		{`the answer is $\boxed 5$.`, "5", true},
		{`\fbox{7}`, "7", true},
		{`\boxed{3`, "", false},
		{`no box here`, "", false},
	} {
		got, ok := LastBoxed(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LastBoxed(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct{ out, want string }{
		{`Thus $\boxed{10}$.`, "10"},
		{`The answer is $x=3$ indeed`, "x=3"},
		{`42`, "42"},
	} {
		if got := MathAnswer(tc.out); got != tc.want {
			t.Errorf("MathAnswer(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}

// TestEvalMathNormalize checks the strip_string normalisation on equivalent and different answers.
func TestEvalMathNormalize(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		equal bool
	}{
		{`\dfrac{9}{7}`, `\frac{9}{7}`, true},
		{`\frac97`, `\frac{9}{7}`, true},
		{`\tfrac1{2}`, `\frac{1}{2}`, true},
		{`0.5`, `\frac12`, true},
		{`1/2`, `\frac{1}{2}`, true},
		{`\$40`, `40`, true},
		{`x = 5`, `5`, true},
		{`5^\circ`, `5`, true},
		{`10\%`, `10`, true},
		{`50%`, `50`, false}, // strip_string removes only the escaped sign
		{`\sqrt3`, `\sqrt{3}`, true},
		{`\left( 1,2 \right)`, `(1,2)`, true},
		{`4,6,14,15`, `4, 6, 14, 15`, true},
		{`5 \text{ cm}`, `5`, true},
		{`.5`, `0.5`, true},
		{"-\\frac{1}{8}\n", `-\frac18`, true},
		{`3`, `4`, false},
		{`\frac{1}{3}`, `\frac{1}{2}`, false},
		{`x+1`, `x-1`, false},
	} {
		if got := MathEqual(tc.a, tc.b); got != tc.equal {
			t.Errorf("MathEqual(%q, %q) = %v (normalised %q, %q)", tc.a, tc.b, got, NormalizeMath(tc.a), NormalizeMath(tc.b))
		}
	}
}

// TestEvalNumericGrade checks MGSM/CMATH grading: strict is the first line, flexible the last number, compared
// by value.
func TestEvalNumericGrade(t *testing.T) {
	for _, tc := range []struct {
		out, gold    string
		strict, flex bool
	}{
		{" 18\n\nQuestion:", "18", true, true},
		{" 18.0", "18", true, true},
		{" 70,000", "70000", true, true},
		{" She has 3 eggs, so 18", "18", false, true},
		{" 17", "18", false, false},
		{"", "18", false, false},
	} {
		s, f := gradeNumeric(tc.out, tc.gold)
		if s != tc.strict || f != tc.flex {
			t.Errorf("gradeNumeric(%q, %q) = %v %v, want %v %v", tc.out, tc.gold, s, f, tc.strict, tc.flex)
		}
	}
}
