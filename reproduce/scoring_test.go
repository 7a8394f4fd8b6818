package reproduce

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
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

// stopAfter is a context whose Err is nil for its first n calls and context.Canceled after: a SIGTERM that
// arrives at a chosen point of the work, here inside a file's windows.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n > 0 {
		c.n--
		return nil
	}
	return context.Canceled
}

// TestScoringStopsInsideTheWindows: a stop that arrives while a final model's validation files are scored
// (inside eval's windows, not between models; issue 48, 4) ends the scoring before the next forward pass with
// train.ErrInterrupted naming the run and how far it got; no score of the run is cached, and the next call
// scores it and caches the score.
func TestScoringStopsInsideTheWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: prepares the embedded corpus and trains a tiny run")
	}
	cd := t.TempDir()
	dataDir := filepath.Join(cd, "data")
	st, err := data.PrepareEmbedded(dataDir, 512, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := train.LoadSets("", []override.Set{{Key: "model.preset", Value: "tiny"}, {Key: recipe.KeyVocab, Value: int64(st.VocabSize)},
		{Key: recipe.KeySteps, Value: int64(2)}, {Key: recipe.KeyDataTrain, Value: filepath.Join(dataDir, data.TrainFile)},
		{Key: recipe.KeyDataVal, Value: filepath.Join(dataDir, data.ValFile)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cd, "run")
	if _, err := train.Start(context.Background(), c, dir, train.Options{}); err != nil {
		t.Fatal(err)
	}
	// The first check passes (scoreRun's, before the model is loaded), the next two the first two forward
	// passes of the first validation file; the third stops it.
	_, err = scoreRun(&stopAfter{Context: context.Background(), n: 3}, dir, dataDir, scoring{})
	if !errors.Is(err, train.ErrInterrupted) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "while scoring "+dir) ||
		!strings.Contains(err.Error(), "stopped after 32 of") {
		t.Fatalf("scoreRun stopped inside the windows: %v, want ErrInterrupted naming the run and 32 windows scored (2 batches of 16)", err)
	}
	run, err := train.OpenRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cached RunScore
	if run.ReadScore(train.VerdictScore, &cached) {
		t.Fatalf("a score was cached by the stopped call: %+v", cached)
	}
	// The next call scores the run (on 4 windows per file, to keep the test short) and caches the score.
	s, err := scoreRun(context.Background(), dir, dataDir, scoring{val: 4, ood: 2})
	if err != nil || s.HeldOut.Overall.Tokens == 0 {
		t.Fatalf("the next call: %v, %d tokens scored", err, s.HeldOut.Overall.Tokens)
	}
	if !run.ReadScore(train.VerdictScore, &cached) || cached.HeldOut.Overall.Tokens != s.HeldOut.Overall.Tokens {
		t.Errorf("the next call's score is not cached: %+v", cached)
	}
}
