package eval

import (
	"fmt"
	"strings"
	"testing"
)

// kindRowProblems lists what is wrong with the grading of one kind's row: a grader that does not add records
// one way (choices or check) or lists no metrics, generation settings on a kind that does not generate, or a
// generative kind without stop strings. lm's row has no grader: RunTask scores plain text itself.
func kindRowProblems(k Kind, ks kindSpec) []string {
	if k == KindLM {
		return nil
	}
	var bad []string
	g := ks.grader
	if g.metrics == nil {
		bad = append(bad, fmt.Sprintf("kind %s: its grader lists no metrics", k))
	}
	if (g.choices == nil) == (g.check == nil) {
		bad = append(bad, fmt.Sprintf("kind %s: its grader must either score choices or check completions (choices set %v, check set %v)",
			k, g.choices != nil, g.check != nil))
	}
	if g.generative() && len(ks.stop) == 0 {
		bad = append(bad, fmt.Sprintf("kind %s: generative without stop strings", k))
	}
	if !g.generative() && (ks.stop != nil || ks.budget != nil) {
		bad = append(bad, fmt.Sprintf("kind %s: stop strings or a token budget, but its grader scores choices", k))
	}
	return bad
}

// TestEveryKindRowGrades: every kind that has a name has a row, every row's grader is whole and consistent
// with its generation settings, and a kind's metrics follow from its grader alone (a generative kind never
// reports the multiple-choice metrics). The planted rows prove the check catches a kind added without grading.
func TestEveryKindRowGrades(t *testing.T) {
	for name, k := range kindAliases {
		if _, ok := kindSpecs[k]; !ok {
			t.Errorf("task name %s: kind %s has no row in kindSpecs", name, k)
		}
	}
	for k, ks := range kindSpecs {
		for _, b := range kindRowProblems(k, ks) {
			t.Error(b)
		}
		if k == KindLM || ks.grader.metrics == nil {
			continue
		}
		if _, mc := newAggregate(k).metrics().Get("acc_norm_bytes"); mc && ks.grader.generative() {
			t.Errorf("kind %s: generative, but reports the multiple-choice metrics", k)
		}
	}
	for _, tc := range []struct {
		name string
		row  kindSpec
		want string
	}{
		{"a generative kind without a grader", kindSpec{parse: parseGSM8K, stop: []string{"Question:"}, shotSep: "\n\n", grading: genGrading},
			"its grader lists no metrics"},
		{"a grader that adds no record", kindSpec{parse: parseMC, grader: grader{metrics: mcMetrics}}, "must either score choices or check"},
		{"a grader that does both", kindSpec{parse: parseMC, grader: grader{choices: addMC, check: checkMATH, metrics: mcMetrics}, stop: []string{"x"}},
			"must either score choices or check"},
		{"a generative kind without stop strings", kindSpec{parse: parseMATH, grader: mathGrader}, "generative without stop strings"},
		{"a choice kind with a budget", kindSpec{parse: parseMC, grader: mcGrader, budget: func(*doc) int { return 1 }}, "but its grader scores choices"},
	} {
		t.Run("planted "+tc.name, func(t *testing.T) {
			got := kindRowProblems("planted", tc.row)
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("problems %q, want one containing %q", got, tc.want)
			}
		})
	}
}
