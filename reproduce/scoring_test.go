package reproduce

import (
	"testing"

	"github.com/smallinit/smallinit/experiment"
)

// TestScoringOfTier: a tier's score_windows and ood_windows set the scoring subsample; without them the whole
// validation split and DefaultOODWindows; Options.OODWindows (tests) wins, < 0 scoring each text whole. The
// estimate charges the subsample, not the whole split.
func TestScoringOfTier(t *testing.T) {
	short := &experiment.Tier{ScoreWindows: 16, OODWindows: 8}
	for _, tc := range []struct {
		name string
		o    Options
		t    *experiment.Tier
		want scoring
	}{
		{"no tier", Options{}, nil, scoring{0, DefaultOODWindows}},
		{"long tier", Options{}, &experiment.Tier{}, scoring{0, DefaultOODWindows}},
		{"30m tier", Options{}, short, scoring{16, 8}},
		{"test's ood windows", Options{OODWindows: 2}, short, scoring{16, 2}},
		{"whole texts", Options{OODWindows: -1}, nil, scoring{0, 0}},
	} {
		if got := tc.o.scoring(tc.t); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	e := &evaluator{o: &Options{}}
	p := &experiment.Plan{}
	if whole, sub := e.ScoreTokens(p, nil), e.ScoreTokens(p, short); sub != 2*16*128+3*8*128 || whole <= sub {
		t.Errorf("score tokens: whole %d, 30m tier %d", whole, sub)
	}
}
