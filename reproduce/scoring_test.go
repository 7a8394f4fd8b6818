package reproduce

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/train"
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

// TestScoringStops: scoring a final model after a stop (SIGTERM) returns train.ErrInterrupted before it reads
// anything, so that a reproduction stops between models and the next call scores the rest (the scores so far
// are cached in each run).
func TestScoringStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "no-run")
	if _, err := scoreRun(ctx, dir, dir, scoring{}); !errors.Is(err, train.ErrInterrupted) || !strings.Contains(err.Error(), dir) {
		t.Errorf("scoreRun after a stop: %v, want ErrInterrupted naming the run", err)
	}
	out := &experiment.Outcome{RunList: []experiment.RunInfo{{Dir: dir}}}
	if _, err := scoreRuns(ctx, out, scoring{}); !errors.Is(err, train.ErrInterrupted) {
		t.Errorf("scoreRuns after a stop: %v, want ErrInterrupted", err)
	}
}
