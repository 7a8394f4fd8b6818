package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// probeKey is the key o's probes of p's base model are measured under. The precision does not depend on the
// corpus: before one is read (out.Stats nil) the plan's vocabulary stands in.
func (o *Options) probeKey(p *Plan, out *Outcome) (budget.ProbeKey, error) {
	if out.Stats == nil {
		withVocab := *out
		withVocab.Stats = &data.Stats{VocabSize: p.Data.Vocab}
		out = &withVocab
	}
	base, err := train.LoadSets("", out.baseSets(p, nil, budget.OverheadProbeSteps))
	if err != nil {
		return budget.ProbeKey{}, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	return budget.KeyOf(o.engine(), base), nil
}

// size returns the steps per run: Options.Steps, the sizing file's for the same budget, or a throughput
// probe's on the base model, recorded in the sizing file (budget.SizingFile). Processes sharing OUT (job-array
// tasks, concurrent studies) share one sizing (budget.Shared).
//
// With auto (the user gave no seeds and the tier has min_seeds), the seed count is part of the sizing: a sizing
// on record gives it (Options.Seeds becomes that prefix of the tier's seeds), and the process that sizes chooses
// it under the lock (chooseSeeds), so concurrent processes never run different seeds in one OUT.
func size(ctx context.Context, p *Plan, out *Outcome, o *Options, auto bool) (int, error) {
	if o.Steps > 0 {
		return o.Steps, nil
	}
	path := filepath.Join(o.Out, budget.SizingFile)
	key, err := o.probeKey(p, out)
	if err != nil {
		return 0, err
	}
	reuse := func() (int, bool, error) {
		s, err := budget.ReadSizing(path)
		if err == nil && s.For(o.Budget) {
			if err := s.Check(path, key); err != nil {
				return 0, false, err
			}
		}
		if err == nil && auto && out.Tier != nil && s.Budget == o.Budget.String() && s.Seeds >= out.Tier.MinSeeds && s.Seeds <= len(out.Tier.Seeds) {
			o.Seeds = out.Tier.Seeds[:s.Seeds]
		}
		if err == nil && s.Matches(o.Budget, len(o.Seeds)) {
			o.logf("reusing the sizing in %s: %d steps per run for %s\n", path, s.Steps, o.Budget)
			return s.Steps, true, nil
		}
		if err != nil && !os.IsNotExist(err) {
			return 0, false, err
		}
		return 0, false, nil
	}
	return budget.Shared(ctx, o.Out, reuse, func() (int, error) { return sizeAnew(ctx, p, out, o, auto, path, key) }, o.logf)
}

// sizeAnew is size when no sizing is on record: it chooses the seeds (auto), runs the probes, and writes the
// sizing under key to path. It runs under OUT's sizing lock (budget.Shared).
func sizeAnew(ctx context.Context, p *Plan, out *Outcome, o *Options, auto bool, path string, key budget.ProbeKey) (int, error) {
	if auto {
		if o.Task {
			return 0, fmt.Errorf("the %s tier chooses its seeds within the budget, and no sizing of %s is on record in %s: run the plan once without a task index first, so that every task runs the same seeds", out.Tier.Name, o.Budget, o.Out)
		}
		if err := chooseSeeds(ctx, p, out, o, 0); err != nil {
			return 0, err
		}
	}
	e, err := estimate(ctx, p, out, o, out.probeTPS)
	if err != nil {
		return 0, err
	}
	o.logf("throughput probe (engine %s on %s, precision %s): %.0f tokens/s on the base model, so %d runs of %d steps of %d tokens (and an LR sweep of at most %d trial steps) fit %s\n",
		key.Engine, key.Device, key.Precision, e.TokensPerS, e.Runs, e.Steps, e.StepTokens, e.TuneSteps, o.Budget)
	if e.Steps < p.Budget.MinSteps {
		if p.Budget.RefuseBelowMin {
			return 0, fmt.Errorf("a budget of %s gives only %d steps per run for %d runs (fewer than %d): give a larger budget", o.Budget, e.Steps, e.Runs, p.Budget.MinSteps)
		}
		e.Steps = p.Budget.MinSteps
	}
	if e.Steps > budget.MaxSteps { // ReadSizing would refuse the file on the next call
		return 0, fmt.Errorf("a budget of %s gives %d steps per run, more than %d: give a smaller budget or --steps", o.Budget, e.Steps, budget.MaxSteps)
	}
	err = budget.WriteSizing(path, budget.Sizing{Budget: o.Budget.String(), Seeds: len(o.Seeds), Steps: e.Steps, ProbeTokensPerS: e.TokensPerS,
		ProbeOverheadS: e.Overhead.Seconds(), ProbeScoreTokensPerS: e.ScoreTokensPerS, ProbeKey: key})
	return e.Steps, err
}

// estimate prices p's runs, LR sweep and the design's extra work (Options.Extra) in base-model steps and sizes
// the budget at tokens/s tps (0: run the throughput probe): the horizon's steps, or the largest steps per run
// whose main runs and worst-case LR sweep fit the budget's training time (budget.Estimate.Fit). A cancelled
// ctx stops the probes (budget.Throughput, budget.OverheadProbe) with train.ErrInterrupted, before anything
// of the sizing is written.
func estimate(ctx context.Context, p *Plan, out *Outcome, o *Options, tps float64) (*budget.Estimate, error) {
	const probeSteps = 100
	base, err := train.LoadSets("", out.baseSets(p, nil, probeSteps))
	if err != nil {
		return nil, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	runs, err := expand(p, out, probeSteps, o)
	if err != nil {
		return nil, err
	}
	perStep := func(c recipe.Config) float64 {
		return c.Model.FLOPsPerToken() * float64(c.Train.BatchSize*c.Model.SeqLen)
	}
	e := &budget.Estimate{Runs: len(runs), StepTokens: base.Train.BatchSize * base.Model.SeqLen, TokensPerS: tps}
	for _, r := range runs {
		// A ladder run at another width trains steps scaled to its size (ladderSteps): its cost per main step.
		x := perStep(r.cfg) / perStep(base) * float64(r.cfg.TotalSteps()) / probeSteps
		if len(r.branches) > 0 {
			x *= 1 + p.horizonCost()
		}
		e.RunCost += x
	}
	for _, x := range o.Extra {
		e.ExtraCost = append(e.ExtraCost, x.FLOPsPerSeed*float64(len(o.Seeds))/perStep(base))
	}
	tuneAt := func(steps int) (int, float64, int, error) {
		if p.Tune == nil {
			return 0, 0, 0, nil
		}
		var n, trials int
		var cost float64
		for i, w := range p.tuneWidths(out.Tier) {
			for _, g := range p.Tune.Gammas {
				if p.Tune.full() {
					// Every rate (and extension, at the tuned width) on every seed at the width's full horizon.
					c, err := train.LoadSets("", out.trialSets(p, g, w, probeSteps, p.Tune.LRs[0], p.Tune.Seeds[0]))
					if err != nil {
						return 0, 0, 0, fmt.Errorf("plan %s: LR grid recipe: %w", p.Name, err)
					}
					ts, err := out.ladderSteps(p, steps, c)
					if err != nil {
						return 0, 0, 0, err
					}
					grid := p.Tune.gridOptions(p, i == 0, g).WorstCaseTrials()
					trials += grid
					// A horizon series adds each trial's cooldown branches.
					n += int(math.Ceil(float64(grid*ts) * (1 + p.horizonCost())))
					cost += float64(grid*ts) * (1 + p.horizonCost()) * perStep(c) / perStep(base)
					continue
				}
				c, err := train.LoadSets("", out.trialSets(p, g, w, probeSteps, p.Tune.Center, p.Tune.Seed))
				if err != nil {
					return 0, 0, 0, fmt.Errorf("plan %s: LR sweep recipe: %w", p.Name, err)
				}
				ws := p.Tune.options(steps).WorstCaseSteps()
				trials += p.Tune.options(steps).WorstCaseTrials()
				n += ws
				cost += float64(ws) * perStep(c) / perStep(base)
			}
		}
		ln, lc, err := out.ladderGridCost(p, steps, func(c recipe.Config) float64 { return perStep(c) / perStep(base) })
		return n + ln, cost + lc, trials, err
	}
	if e.TokensPerS == 0 {
		if e.TokensPerS, err = budget.Throughput(ctx, o.engine(), base); err != nil {
			return nil, fmt.Errorf("throughput probe: %w", err)
		}
	}
	if e.Overhead, e.ScoreTokensPerS = out.probeOverhead, out.probeScoreTPS; e.Overhead == 0 || e.ScoreTokensPerS == 0 {
		eng := budget.ProbeEngine(o.engine())
		probe := budget.OverheadProbe{Plan: p.Name, Sets: out.baseSets(p, nil, budget.OverheadProbeSteps), Engine: eng,
			TokensPerS: e.TokensPerS, Efficiency: p.Budget.Efficiency}
		if e.Overhead, e.ScoreTokensPerS, err = probe.Run(ctx); err != nil {
			return nil, err
		}
		o.logf("overhead probe (engine %s on %s): %.1f s a run besides its steps; scoring (Go, this CPU) at %.0f tokens/s\n",
			eng.Name(), eng.TrainsOn(), e.Overhead.Seconds(), e.ScoreTokensPerS)
		out.probeOverhead, out.probeScoreTPS = e.Overhead, e.ScoreTokensPerS
	}
	h, hn, err := p.horizonSteps(out)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Steps > 0:
		e.Steps = o.Steps
	case h > 0: // horizon before breadth: the steps are the horizon's; the budget decides what else fits
		e.Steps, e.HorizonParams = h, hn
	default:
		if e.Steps, err = e.Fit(o.Budget, p.Budget.Efficiency, tuneAt); err != nil {
			return nil, err
		}
	}
	if e.TuneSteps, e.TuneCost, e.Trials, err = tuneAt(max(e.Steps, 1)); err != nil {
		return nil, err
	}
	e.ScoreTokens = int64(e.Runs) * o.ScoreTokens
	if p.Summary {
		e.ScoreTokens += int64(e.Runs) * budget.SummaryTokens(out.Stats, o.Windows, base.Model.SeqLen)
	}
	if p.Tune != nil {
		e.ScoreTokens += int64(e.Trials) * budget.SelectionTokens(out.DataDir, out.Stats)
	}
	e.Wall = e.WallTime(p.Budget.Efficiency)
	return e, nil
}

// chooseSeeds sets o.Seeds for a tier with MinSeeds (Tier.MinSeeds) when the user gave none: the seeds a sizing
// of the same budget on record ran (so that job-array tasks and resumed studies agree), else the longest prefix
// of the tier's seeds, at least MinSeeds long, whose expected wall time at the horizon fits the budget, from one
// throughput probe (tps > 0 skips it). Horizon first, then seeds: the steps are not shortened to buy seeds.
func chooseSeeds(ctx context.Context, p *Plan, out *Outcome, o *Options, tps float64) error {
	t := out.Tier
	if t == nil || t.MinSeeds == 0 || o.Steps > 0 {
		return nil
	}
	if s, err := budget.ReadSizing(filepath.Join(o.Out, budget.SizingFile)); err == nil && s.Budget == o.Budget.String() && s.Seeds >= t.MinSeeds && s.Seeds <= len(t.Seeds) {
		o.Seeds = t.Seeds[:s.Seeds]
		return nil
	}
	for n := len(t.Seeds); n >= t.MinSeeds; n-- {
		try := *o
		try.Seeds = t.Seeds[:n]
		e, err := estimate(ctx, p, out, &try, tps)
		if err != nil {
			return err
		}
		tps = e.TokensPerS
		out.probeTPS = tps
		if e.Wall <= o.Budget || n == t.MinSeeds {
			o.Seeds = try.Seeds
			fit := "fits"
			if e.Wall > o.Budget {
				fit = "does NOT fit (the tier's fewest)"
			}
			o.logf("seeds within the budget: %d of the tier's %d (at least %d): expected wall time %s %s the budget %s at %.0f tokens/s\n",
				n, len(t.Seeds), t.MinSeeds, e.Wall.Round(time.Minute), fit, o.Budget, tps)
			return nil
		}
	}
	return nil
}
