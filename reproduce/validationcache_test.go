package reproduce

import (
	"math"
	"testing"

	"github.com/smallinit/smallinit/summary"
)

// TestScoreFinite: a score with a non-finite number anywhere (a diverged model) is not cached, since JSON has
// no NaN; one with every number finite is.
func TestScoreFinite(t *testing.T) {
	ok := func() summary.Row {
		return summary.Row{ValLoss: 4.5, ValBPB: 2, LangLoss: map[string]float64{"en": 4, "zh": 5}, LangBPB: map[string]float64{"en": 1.5, "zh": 3}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(r *summary.Row)
		cache bool
	}{
		{"every number finite", func(*summary.Row) {}, true},
		{"overall loss NaN", func(r *summary.Row) { r.ValLoss = math.NaN() }, false},
		{"overall bpb +Inf", func(r *summary.Row) { r.ValBPB = math.Inf(1) }, false},
		{"one language's loss NaN", func(r *summary.Row) { r.LangLoss["en"] = math.NaN() }, false},
		{"one language's bpb −Inf", func(r *summary.Row) { r.LangBPB["zh"] = math.Inf(-1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.edit(&r)
			if got := scoreFinite(r); got != tc.cache {
				t.Errorf("scoreFinite = %v, want %v", got, tc.cache)
			}
		})
	}
}
