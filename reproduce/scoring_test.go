package reproduce

import (
	"testing"

	"github.com/smallinit/smallinit/experiment"
)

// TestScoringOfTier: a tier's score_windows and ood_windows set the scoring subsample; without them the whole
// validation split and DefaultOODWindows; Options.OODWindows (tests) wins, < 0 scoring each text whole. The
// estimate charges the subsample, not the whole split.
func TestScoringOfTier(t *testing.T) {
	short := tierKeys{ScoreWindows: 16, OODWindows: 8}
	for _, tc := range []struct {
		name string
		o    Options
		k    tierKeys
		want scoring
	}{
		{"no tier keys", Options{}, tierKeys{}, scoring{0, DefaultOODWindows}},
		{"30m tier", Options{}, short, scoring{16, 8}},
		{"test's ood windows", Options{OODWindows: 2}, short, scoring{16, 2}},
		{"whole texts", Options{OODWindows: -1}, tierKeys{}, scoring{0, 0}},
	} {
		if got := tc.o.scoring(tc.k); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	s := &study{o: &Options{}, design: design{tiers: map[string]tierKeys{"30m": short}}}
	p := &experiment.Plan{}
	if whole, sub := s.scoreTokens(p, nil), s.scoreTokens(p, &experiment.Tier{Name: "30m"}); sub != 2*16*128+3*8*128 || whole <= sub {
		t.Errorf("score tokens: whole %d, 30m tier %d", whole, sub)
	}
}
