package reproduce

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/probes"
	"github.com/smallinit/smallinit/probes/probescore"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// The probe arm tests the second half of claim 1, that γ = 1's gains are largest on reasoning: γ = 0.5 and 1
// (both fixes, width 128) train on the corpus with eval's reasoning and memorisation probes mixed in, and are
// scored on held-out reasoning prompts (answerable only by doing the task) and on memorisation prompts seen in
// training (answerable only by recalling them).
const (
	// probeEvalFile (in a probe run's directory) caches its probe scores.
	probeEvalFile = "probe_eval.json"
)

// scoreProbes scores the final model of a probe run on the mix's test sets, cached in the run directory.
func scoreProbes(runDir, probeDir string) (*probescore.Scores, error) {
	cache := filepath.Join(runDir, probeEvalFile)
	if b, err := inputfile.ReadFile(cache, inputfile.MaxConfig); err == nil {
		// Scores from a build that put nothing before the prompts (no "prefix") are recomputed.
		var s probescore.Scores
		if err := json.Unmarshal(b, &s); err == nil && s.Prefix == probes.Prefix {
			return &s, nil
		}
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	run, err := train.OpenRun(runDir)
	if err != nil {
		return nil, err
	}
	m, err := run.FinalModel(8, pool)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(filepath.Join(probeDir, data.TokenizerFile))
	if err != nil {
		return nil, err
	}
	s, err := probes.Score(context.Background(), m, tok, probeDir)
	if err != nil {
		return nil, fmt.Errorf("score probes of %s: %w", runDir, err)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := atomicfile.Write(cache, append(b, '\n')); err != nil {
		return nil, err
	}
	return s, nil
}

// probeEvidence scores the probe runs per seed. The pilot is the RolePilot group's γ = 0.5 run (a seed of its
// own, so the pilot that decides whether the probes are judged is not one of the compared runs); a plan
// without a pilot group falls back to the γ = 0.5 probe arm itself (its mean exact match over seeds, the
// chance and prompt count of its first seed).
func probeEvidence(recs []RunRecord, probeDir string) (*ProbeEvidence, error) {
	p := &ProbeEvidence{G05: map[int]*probescore.Scores{}, G1: map[int]*probescore.Scores{}}
	for _, r := range recs {
		if r.Role != RoleProbes && r.Role != RolePilot {
			continue
		}
		s, err := scoreProbes(r.Dir, probeDir)
		if err != nil {
			return nil, err
		}
		switch {
		case r.Role == RolePilot:
			p.Pilot = s
		case sameGamma(r.Gamma, 0.5):
			p.G05[r.Seed] = s
		case sameGamma(r.Gamma, 1):
			p.G1[r.Seed] = s
		}
	}
	if p.Pilot == nil && len(p.G05) > 0 {
		first := -1
		for sd := range p.G05 {
			if first < 0 || sd < first {
				first = sd
			}
		}
		pilot := *p.G05[first] // the first seed's figures, deterministically
		pilot.ReasoningAcc = 0
		for _, s := range p.G05 {
			pilot.ReasoningAcc += s.ReasoningAcc / float64(len(p.G05))
		}
		p.Pilot = &pilot
	}
	return p, nil
}

// PilotThreshold is the exact match a probe pilot must exceed for the probes to be judged: chance plus
// ProbeSEs binomial standard errors of chance over count prompts, p₀ + 5·√(p₀(1 − p₀)/count) (docs/definitions.md §7).
func PilotThreshold(chance float64, count int) float64 {
	return chance + ProbeSEs*math.Sqrt(chance*(1-chance)/float64(count))
}

// judgeProbes is claim 1's second half, that γ = 1's gains are largest on reasoning. First the pilot: unless a
// γ = 0.5 pilot's exact match on the held-out reasoning prompts clears PilotThreshold, the probes say nothing
// of reasoning at this budget and the verdict is Untestable, with the pilot's figures. Then, paired by seed,
// decisive: the drop of the gold answers' loss per token on held-out reasoning prompts, L(γ=0.5) − L(γ=1), and
// that drop minus the drop on recalled memorisation prompts (reasoning gains more than recall). Reported: the
// exact-match gain.
func judgeProbes(p *ProbeEvidence) Claim {
	text := "γ = 1's gains are largest on reasoning: probes mixed into training, held-out reasoning prompts against memorised answers"
	c := Claim{N: 1, Text: text, Verdict: Inconclusive}
	if p == nil || p.Pilot == nil {
		c.Reason, c.Evidence = "no probe pilot", "probe runs missing"
		return c
	}
	pl := p.Pilot
	thr := PilotThreshold(pl.ReasoningChance, max(pl.ReasoningCount, 1))
	pilot := fmt.Sprintf("γ=0.5 pilot on the held-out reasoning prompts: exact match %.3f against chance %.3f (%d prompts), threshold chance + %d binomial SE = %.3f; gold-answer loss per token %.4f (recalled memorisation prompts: exact match %.3f, loss %.4f, %d prompts)",
		pl.ReasoningAcc, pl.ReasoningChance, pl.ReasoningCount, ProbeSEs, thr, pl.ReasoningLoss, pl.MemorisationAcc, pl.MemorisationLoss, pl.MemorisationCount)
	if !(pl.ReasoningAcc > thr) || pl.ReasoningCount == 0 {
		c.Verdict, c.Reason, c.Evidence = Untestable, "the pilot did not learn the reasoning probes above chance + 5 binomial SE", pilot
		c.Detail = map[string]any{"pilot": pl, "threshold": thr}
		return c
	}
	get := func(m map[int]*probescore.Scores, f func(*probescore.Scores) float64) stats.BySeed {
		out := stats.BySeed{}
		for s, v := range m {
			out[s] = f(v)
		}
		return out
	}
	rl := func(s *probescore.Scores) float64 { return s.ReasoningLoss }
	ml := func(s *probescore.Scores) float64 { return s.MemorisationLoss }
	ra := func(s *probescore.Scores) float64 { return s.ReasoningAcc }
	var t claimTests
	dr := stats.Paired(get(p.G05, rl), get(p.G1, rl))
	dm := stats.Paired(get(p.G05, ml), get(p.G1, ml))
	t.add("reasoning gold-loss drop L(γ=0.5) − L(γ=1)", true, dr)
	t.add("reasoning drop minus memorisation drop", true, stats.Paired(bySeed(dr), bySeed(dm)))
	t.add("memorisation gold-loss drop", false, dm)
	t.add("reasoning exact match, γ=1 − γ=0.5", false, stats.Paired(get(p.G1, ra), get(p.G05, ra)))
	cl := claimOf(1, text, pilot, &t, "", map[string]any{"pilot": pl, "threshold": thr})
	return cl
}
