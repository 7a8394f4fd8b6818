package reproduce

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// The probe arm tests the second half of claim 1, that γ = 1's gains are largest on reasoning: γ = 0.5 and 1
// (both fixes, width 128) train on the corpus with eval's reasoning and memorisation probes mixed in, and are
// scored on held-out reasoning prompts (answerable only by doing the task) and on memorisation prompts seen in
// training (answerable only by recalling them).
const (
	// ProbeDataDir (in the output directory) holds the mixed training tokens, the tokenizer and the probe test
	// sets.
	ProbeDataDir = experiment.ProbeDataDir
	// probeEvalFile (in a probe run's directory) caches its probe scores.
	probeEvalFile = "probe_eval.json"
)

// scoreProbes scores the final model of a probe run on the mix's test sets, cached in the run directory.
func scoreProbes(runDir, probeDir string) (*eval.ProbeScores, error) {
	cache := filepath.Join(runDir, probeEvalFile)
	if b, err := os.ReadFile(cache); err == nil {
		// Scores from a build that put nothing before the prompts (no "prefix") are recomputed.
		var s eval.ProbeScores
		if err := json.Unmarshal(b, &s); err == nil && s.Prefix == eval.ProbePrefix {
			return &s, nil
		}
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, _, err := model.Load(filepath.Join(runDir, train.FinalDir), 8, pool)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(filepath.Join(probeDir, data.TokenizerFile))
	if err != nil {
		return nil, err
	}
	s, err := eval.ScoreProbes(context.Background(), m, tok, probeDir)
	if err != nil {
		return nil, fmt.Errorf("score probes of %s: %w", runDir, err)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := model.WriteFileAtomic(cache, append(b, '\n')); err != nil {
		return nil, err
	}
	return s, nil
}

// reasoningClaim compares γ = 1 with γ = 0.5 on the probes: the drop of the gold answers' loss per token on
// held-out reasoning prompts against the drop on recalled memorisation prompts, each a mean over seeds with
// its standard error. Supported when γ = 1 lowers the reasoning loss and lowers it by more than the
// memorisation loss (both beyond two standard errors); not supported when either goes clearly the other way.
func reasoningClaim(rows []row, probeDir string) Claim {
	c := Claim{N: 1, Text: "γ = 1's gains are largest on reasoning: probes mixed into training, held-out reasoning prompts against memorised answers", Verdict: Inconclusive}
	by := map[float64][]*eval.ProbeScores{}
	for _, r := range rows {
		if r.exp != ExpProbes {
			continue
		}
		s, err := scoreProbes(r.dir, probeDir)
		if err != nil {
			c.Evidence = err.Error()
			return c
		}
		by[r.num("init.gamma")] = append(by[r.num("init.gamma")], s)
	}
	if len(by[0.5]) == 0 || len(by[1]) == 0 {
		c.Evidence = "probe runs missing"
		return c
	}
	stat := func(gm float64, f func(*eval.ProbeScores) float64) (float64, float64) {
		xs := make([]float64, len(by[gm]))
		for i, s := range by[gm] {
			xs[i] = f(s)
		}
		return meanSE(xs)
	}
	rl := func(s *eval.ProbeScores) float64 { return s.ReasoningLoss }
	ml := func(s *eval.ProbeScores) float64 { return s.MemorisationLoss }
	ra := func(s *eval.ProbeScores) float64 { return s.ReasoningAcc }
	ma := func(s *eval.ProbeScores) float64 { return s.MemorisationAcc }
	r05, sr05 := stat(0.5, rl)
	r1, sr1 := stat(1, rl)
	m05, sm05 := stat(0.5, ml)
	m1, sm1 := stat(1, ml)
	a05, sa05 := stat(0.5, ra)
	a1, sa1 := stat(1, ra)
	b05, sb05 := stat(0.5, ma)
	b1, sb1 := stat(1, ma)
	dr, sdr := r05-r1, math.Hypot(sr05, sr1)
	dm, sdm := m05-m1, math.Hypot(sm05, sm1)
	dd, sdd := dr-dm, math.Hypot(sdr, sdm)
	c.Evidence = fmt.Sprintf("gold-answer loss per token, held-out reasoning prompts: γ=0.5 %.4f ± %.4f, γ=1 %.4f ± %.4f (γ=1 lower by %.4f ± %.4f); "+
		"recalled memorisation prompts: γ=0.5 %.4f ± %.4f, γ=1 %.4f ± %.4f (lower by %.4f ± %.4f); reasoning gain minus memorisation gain %.4f ± %.4f; "+
		"exact match, reasoning: γ=0.5 %.3f ± %.3f, γ=1 %.3f ± %.3f (chance %.3f, %d prompts); memorisation: γ=0.5 %.3f ± %.3f, γ=1 %.3f ± %.3f (%d prompts)",
		r05, sr05, r1, sr1, dr, sdr, m05, sm05, m1, sm1, dm, sdm, dd, sdd,
		a05, sa05, a1, sa1, by[1][0].ReasoningChance, by[1][0].ReasoningCount, b05, sb05, b1, sb1, by[1][0].MemorisationCount)
	switch {
	case verdict(dr, sdr) == Supported && verdict(dd, sdd) == Supported:
		c.Verdict = Supported
	case verdict(dr, sdr) == NotSupported || verdict(dd, sdd) == NotSupported:
		c.Verdict = NotSupported
	}
	return c
}
