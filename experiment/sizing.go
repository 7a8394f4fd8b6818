package experiment

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// SizingFile (in the output directory) records how a budget was sized, so that a plan run again (after an
// interrupt, or to add the demo's --probes) resumes the runs it named instead of sizing new ones from a fresh
// throughput probe, whose runs would have other step counts and so other directories. It records the engine,
// device and precision its probes were measured under (ProbeKey): under another it is refused, never reused.
const SizingFile = "sizing.json"

// Sizing is how a budget was sized: the steps per run its throughput probe gave. Files of builds before the
// plans (the demo's {"minutes", "steps"}) are read too.
type Sizing struct {
	Budget          string  `json:"budget,omitempty"`
	Minutes         float64 `json:"minutes,omitempty"`
	Seeds           int     `json:"seeds,omitempty"`
	Steps           int     `json:"steps"`
	ProbeTokensPerS float64 `json:"probe_tokens_per_s,omitempty"`
	// ProbeOverheadS is the overhead probe's fixed cost of one run in seconds (probeOverhead; 0: not measured,
	// a sizing written before it existed).
	ProbeOverheadS float64 `json:"probe_overhead_s,omitempty"`
	// ProbeScoreTokensPerS is the scoring probe's forward tokens/s (probeOverhead; 0: not measured, a sizing
	// written before it existed).
	ProbeScoreTokensPerS float64 `json:"probe_score_tokens_per_s,omitempty"`
	// ProbeKey is what the probes were measured under (empty in a sizing written before it was recorded).
	ProbeKey
}

// ProbeKey is what a sizing's probes hold for: the engine that trained them, the device it trained on
// (train.Engine's TrainsOn) and the precision of the base model's matmuls. Under another key the same budget
// is another number of steps (a GPU trains tens of times faster than this CPU, bf16 faster than f32), so a
// sizing is reused only under its own key (Sizing.check).
type ProbeKey struct {
	Engine    string `json:"engine,omitempty"`
	Device    string `json:"device,omitempty"`
	Precision string `json:"precision,omitempty"`
}

// probeKey is the key o's probes of p's base model are measured under. The precision does not depend on the
// corpus: before one is read (out.Stats nil) the plan's vocabulary stands in.
func (o *Options) probeKey(p *Plan, out *Outcome) (ProbeKey, error) {
	if out.Stats == nil {
		withVocab := *out
		withVocab.Stats = &data.Stats{VocabSize: p.Data.Vocab}
		out = &withVocab
	}
	base, err := train.LoadSets("", out.baseSets(p, nil, OverheadProbeSteps))
	if err != nil {
		return ProbeKey{}, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	e := o.engine()
	return ProbeKey{Engine: e.Name(), Device: e.TrainsOn(), Precision: cmp.Or(base.Train.Precision, kernel.F32.String())}, nil
}

// differs says how the key k differs from the sizing's ("" when it is the sizing's own). A sizing that records
// no key was written by a build before the key was recorded, when only the Go engine's probes sized a budget:
// it is the Go engine's on an unknown device at an unknown precision.
func (s Sizing) differs(k ProbeKey) string {
	r := s.ProbeKey
	if r == (ProbeKey{}) {
		if k.Engine == train.EngineGo {
			return ""
		}
		return fmt.Sprintf("it records no engine or device (a build before they were recorded, when only the Go engine's probe sized a budget); this one trains with engine %s on %s", k.Engine, k.Device)
	}
	var d []string
	for _, f := range []struct{ what, was, is string }{{"engine", r.Engine, k.Engine}, {"device", r.Device, k.Device}, {"precision", r.Precision, k.Precision}} {
		if f.was != f.is {
			d = append(d, fmt.Sprintf("%s %s, not %s", f.what, f.was, f.is))
		}
	}
	if len(d) == 0 {
		return ""
	}
	return "its probes were measured under " + strings.Join(d, "; ")
}

// check refuses the sizing s at path for the key k when it was measured under another (differs), naming what
// differs and the ways on: the recorded engine, device and precision resume its runs; --steps with its steps
// keeps them under this key; deleting it sizes the budget anew (and the runs sized by it are not resumed).
func (s Sizing) check(path string, k ProbeKey) error {
	why := s.differs(k)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%s: a sizing of %s (%d steps per run) that this study cannot reuse: %s. Run again with the recorded engine, --device and precision to resume its runs; give --steps %d to train its runs here; or delete %s to size the budget on this engine and device (the runs sized by it are then not resumed)",
		path, s.budget(), s.Steps, why, s.Steps, path)
}

// ReadSizing reads a sizing file, refusing one that cannot have been written by Run.
func ReadSizing(path string) (Sizing, error) {
	var s Sizing
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w (delete it to size the budget again)", path, err)
	}
	if s.Steps < 1 || s.Seeds < 0 || s.Seeds == 0 && s.Budget != "" || s.Steps > MaxSteps {
		return s, fmt.Errorf("%s: steps %d, seeds %d are not a sizing (delete it to size the budget again)", path, s.Steps, s.Seeds)
	}
	return s, nil
}

// matches reports whether the sizing was made for this budget and seed count.
func (s Sizing) matches(o *Options) bool {
	return s.forBudget(o) && (s.Seeds == 0 || s.Seeds == len(o.Seeds))
}

// forBudget reports whether the sizing was made for o's budget (at any seed count).
func (s Sizing) forBudget(o *Options) bool { return s.budget() == o.Budget.String() }

// budget is the budget the sizing was made for (a demo's file before the plans gives minutes).
func (s Sizing) budget() string {
	if s.Budget == "" && s.Minutes > 0 {
		return durationOfMinutes(s.Minutes).String()
	}
	return s.Budget
}

// sizingLock is the lock file under which one process sizes a budget for every process sharing OUT.
const sizingLock = "sizing.lock"

// size returns the steps per run: Options.Steps, the sizing file's for the same budget, or a throughput
// probe's on the base model, recorded in the sizing file. Processes sharing OUT (job-array tasks, concurrent
// studies) share one sizing: the first takes OUT/sizing.lock, probes and writes sizing.json; the others wait
// for the lock and then read what it wrote, so every run of the plan has the same steps.
//
// With auto (the user gave no seeds and the tier has min_seeds), the seed count is part of the sizing: a sizing
// on record gives it (Options.Seeds becomes that prefix of the tier's seeds), and the process that sizes chooses
// it under the lock (chooseSeeds), so concurrent processes never run different seeds in one OUT.
func size(ctx context.Context, p *Plan, out *Outcome, o *Options, auto bool) (int, error) {
	if o.Steps > 0 {
		return o.Steps, nil
	}
	path := filepath.Join(o.Out, SizingFile)
	key, err := o.probeKey(p, out)
	if err != nil {
		return 0, err
	}
	reuse := func() (int, bool, error) {
		s, err := ReadSizing(path)
		if err == nil && s.forBudget(o) {
			if err := s.check(path, key); err != nil {
				return 0, false, err
			}
		}
		if err == nil && auto && out.Tier != nil && s.Budget == o.Budget.String() && s.Seeds >= out.Tier.MinSeeds && s.Seeds <= len(out.Tier.Seeds) {
			o.Seeds = out.Tier.Seeds[:s.Seeds]
		}
		if err == nil && s.matches(o) {
			o.logf("reusing the sizing in %s: %d steps per run for %s\n", path, s.Steps, o.Budget)
			return s.Steps, true, nil
		}
		if err != nil && !os.IsNotExist(err) {
			return 0, false, err
		}
		return 0, false, nil
	}
	if n, ok, err := reuse(); ok || err != nil {
		return n, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return 0, err
	}
	l, err := runlock.Wait(ctx, filepath.Join(o.Out, sizingLock), runlock.DefaultStaleAfter, time.Second, nil,
		func() bool { _, ok, _ := reuse(); return ok },
		func(holder string) { o.logf("waiting for the sizing of %s (%s)\n", o.Out, holder) })
	if err != nil {
		return 0, fmt.Errorf("sizing %s: %w", o.Out, err)
	}
	if l != nil {
		defer l.Release()
	}
	if n, ok, err := reuse(); ok || err != nil {
		return n, err
	}
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
	if e.Steps > MaxSteps { // ReadSizing would refuse the file on the next call
		return 0, fmt.Errorf("a budget of %s gives %d steps per run, more than %d: give a smaller budget or --steps", o.Budget, e.Steps, MaxSteps)
	}
	b, _ := json.MarshalIndent(Sizing{Budget: o.Budget.String(), Seeds: len(o.Seeds), Steps: e.Steps, ProbeTokensPerS: e.TokensPerS,
		ProbeOverheadS: e.Overhead.Seconds(), ProbeScoreTokensPerS: e.ScoreTokensPerS, ProbeKey: key}, "", "  ")
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return 0, err
	}
	return e.Steps, nil
}

// Estimate is how a budget is spent: the throughput probe, the steps per run, the training cost in steps of the
// base model and the expected wall time.
type Estimate struct {
	TokensPerS float64 // the throughput probe's forward+backward tokens/s on the base model
	StepTokens int     // tokens per step (batch × sequence)
	Steps      int     // per main run
	Runs       int     // main runs
	// RunCost is the main runs' cost per step in base-model steps (a run of a wider model costs more);
	// TuneSteps the LR sweep's worst-case trial steps (tune.Options.WorstCaseSteps) and TuneCost their cost in
	// base-model steps.
	RunCost   float64
	TuneSteps int
	TuneCost  float64
	// ExtraCost is a study design's extra training (Options.Extra) on the plan's seeds in base-model steps, one
	// entry per item, taken from the budget.
	ExtraCost []float64
	// ScoreTokens are the forward-only tokens of scoring: every final model (Options.ScoreTokens, and the
	// summary's validation split where the plan has one) and every LR trial (the LR-selection slice).
	ScoreTokens int64
	// ScoreTokensPerS is the scoring probe's forward tokens/s on the base model's final weights (probeOverhead).
	ScoreTokensPerS float64
	// Overhead is one run's fixed cost besides its steps (initialisation, step-0 and final weights,
	// evaluations, diagnostics, checkpoints), measured by the overhead probe (probeOverhead); Trials are the LR
	// sweep's worst-case trials, each a run that pays it too. Runs+Trials runs pay it.
	Overhead time.Duration
	Trials   int
	// Wall is expected: the sum of TrainTime, OverheadTime and ScoreTime.
	Wall time.Duration
	// HorizonParams is the non-embedding parameter count the steps were sized by (the primaries' horizon in
	// tokens per parameter); 0 when the budget sized them.
	HorizonParams int64
}

// TrainSteps is the training the estimate charges, in base-model steps: the main runs, the LR sweep at its
// worst case and the evaluator's extra training.
func (e *Estimate) TrainSteps() float64 {
	s := float64(e.Steps)*e.RunCost + e.TuneCost
	for _, x := range e.ExtraCost {
		s += x
	}
	return s
}

// TrainTime is TrainSteps at the throughput probe's tokens/s times the plan's efficiency.
func (e *Estimate) TrainTime(efficiency float64) time.Duration {
	return seconds(e.TrainSteps() * float64(e.StepTokens) / (e.TokensPerS * efficiency))
}

// OverheadTime is the fixed cost of every main run and worst-case trial, Overhead each.
func (e *Estimate) OverheadTime() time.Duration { return time.Duration(e.Runs+e.Trials) * e.Overhead }

// ScoreTime is ScoreTokens at the scoring probe's measured tokens/s (not a multiple of the training speed).
func (e *Estimate) ScoreTime() time.Duration {
	if e.ScoreTokens == 0 {
		return 0
	}
	return seconds(float64(e.ScoreTokens) / e.ScoreTokensPerS)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// estimate sizes the budget at tokens/s tps (0: run the throughput probe): the largest steps per run whose
// main runs and worst-case LR sweep fit the budget's training time. A cancelled ctx stops the probes
// (probeOverhead) with train.ErrInterrupted, before anything of the sizing is written.
func estimate(ctx context.Context, p *Plan, out *Outcome, o *Options, tps float64) (*Estimate, error) {
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
	e := &Estimate{Runs: len(runs), StepTokens: base.Train.BatchSize * base.Model.SeqLen, TokensPerS: tps}
	for _, r := range runs {
		// A ladder run at another width trains steps scaled to its size (ladderSteps): its cost per main step.
		x := perStep(r.cfg) / perStep(base) * float64(r.cfg.TotalSteps()) / probeSteps
		if len(r.branches) > 0 {
			x *= 1 + p.horizonCost()
		}
		e.RunCost += x
	}
	extra := 0.0
	for _, x := range o.Extra {
		c := x.FLOPsPerSeed * float64(len(o.Seeds)) / perStep(base)
		e.ExtraCost = append(e.ExtraCost, c)
		extra += c
	}
	tuneAt := func(steps int) (int, float64, error) {
		if p.Tune == nil {
			return 0, 0, nil
		}
		e.Trials = 0
		var n int
		var cost float64
		for i, w := range p.tuneWidths(out.Tier) {
			for _, g := range p.Tune.Gammas {
				if p.Tune.full() {
					// Every rate (and extension, at the tuned width) on every seed at the width's full horizon.
					c, err := train.LoadSets("", out.trialSets(p, g, w, probeSteps, p.Tune.LRs[0], p.Tune.Seeds[0]))
					if err != nil {
						return 0, 0, fmt.Errorf("plan %s: LR grid recipe: %w", p.Name, err)
					}
					ts, err := out.ladderSteps(p, steps, c)
					if err != nil {
						return 0, 0, err
					}
					trials := p.Tune.gridOptions(p, i == 0, g).WorstCaseTrials()
					e.Trials += trials
					// A horizon series adds each trial's cooldown branches.
					n += int(math.Ceil(float64(trials*ts) * (1 + p.horizonCost())))
					cost += float64(trials*ts) * (1 + p.horizonCost()) * perStep(c) / perStep(base)
					continue
				}
				c, err := train.LoadSets("", out.trialSets(p, g, w, probeSteps, p.Tune.Center, p.Tune.Seed))
				if err != nil {
					return 0, 0, fmt.Errorf("plan %s: LR sweep recipe: %w", p.Name, err)
				}
				ws := p.Tune.options(steps).WorstCaseSteps()
				e.Trials += p.Tune.options(steps).WorstCaseTrials()
				n += ws
				cost += float64(ws) * perStep(c) / perStep(base)
			}
		}
		ln, lc, err := out.ladderGridCost(p, steps, func(c recipe.Config) float64 { return perStep(c) / perStep(base) })
		return n + ln, cost + lc, err
	}
	if e.TokensPerS == 0 {
		if e.TokensPerS, err = o.throughput(ctx, base); err != nil {
			return nil, fmt.Errorf("throughput probe: %w", err)
		}
	}
	if e.Overhead, e.ScoreTokensPerS = out.probeOverhead, out.probeScoreTPS; e.Overhead == 0 || e.ScoreTokensPerS == 0 {
		eng := o.probeEngine()
		if e.Overhead, e.ScoreTokensPerS, err = probeOverhead(ctx, p, out, eng, e.TokensPerS); err != nil {
			return nil, err
		}
		o.logf("overhead probe (engine %s on %s): %.1f s a run besides its steps; scoring (Go, this CPU) at %.0f tokens/s\n",
			eng.Name(), eng.TrainsOn(), e.Overhead.Seconds(), e.ScoreTokensPerS)
		out.probeOverhead, out.probeScoreTPS = e.Overhead, e.ScoreTokensPerS
	}
	budgetSteps := o.Budget.Seconds()*e.TokensPerS*p.Budget.Efficiency/float64(e.StepTokens) - extra
	// A run's fixed cost in base-model steps: the budget pays it once per run and per trial.
	overheadSteps := e.Overhead.Seconds() * e.TokensPerS * p.Budget.Efficiency / float64(e.StepTokens)
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
		// The largest steps whose main runs and worst-case sweep fit (binary search; the sweep's cost grows
		// with the steps).
		lo, hi := 0, int(max(budgetSteps-float64(e.Runs)*overheadSteps, 0)/e.RunCost)+1
		for lo < hi {
			mid := (lo + hi + 1) / 2
			_, tc, err := tuneAt(mid)
			if err != nil {
				return nil, err
			}
			if float64(mid)*e.RunCost+tc+float64(e.Runs+e.Trials)*overheadSteps <= budgetSteps {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		e.Steps = lo
	}
	if e.TuneSteps, e.TuneCost, err = tuneAt(max(e.Steps, 1)); err != nil {
		return nil, err
	}
	e.ScoreTokens = int64(e.Runs)*(o.ScoreTokens+summaryTokens(p, out, o, base.Model.SeqLen)) + int64(e.Trials)*selectionTokens(p, out)
	e.Wall = e.TrainTime(p.Budget.Efficiency) + e.OverheadTime() + e.ScoreTime()
	return e, nil
}

// Token counts of the embedded corpus at the plans' vocabulary (4096; smallinit data prepare, 2026-12-07), for an
// estimate made before the corpus is prepared (print-plan).
const (
	embeddedTrainTokens = 1_839_518
	embeddedValTokens   = 107_964
)

// summaryTokens are the forward tokens of scoring one run for the summary (Plan.Summary: the validation split,
// whole or its first Options.Windows windows per file); 0 for a plan without a summary.
func summaryTokens(p *Plan, out *Outcome, o *Options, seq int) int64 {
	if !p.Summary {
		return 0
	}
	val, files := out.Stats.Val.Tokens, int64(max(len(out.Stats.ValByLang), 1))
	if val == 0 {
		val, files = embeddedValTokens, 2
	}
	if o.Windows > 0 {
		val = min(val, files*int64(o.Windows*seq))
	}
	return val
}

// selectionTokens are the forward tokens of scoring one LR trial on the LR-selection slice (eval.ScoreSelection):
// the slice as prepared, else its share of the training tokens; 0 for a plan without an LR sweep.
func selectionTokens(p *Plan, out *Outcome) int64 {
	if p.Tune == nil {
		return 0
	}
	if st, err := data.ReadSelectionStats(out.DataDir); err == nil {
		return st.Select.Tokens
	}
	train := out.Stats.Train.Tokens
	if train == 0 {
		train = embeddedTrainTokens
	}
	return int64(data.DefaultSelectShare * float64(train))
}

func durationOfMinutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

// chooseSeeds sets o.Seeds for a tier with MinSeeds (Tier.MinSeeds) when the user gave none: the seeds a sizing
// of the same budget on record ran (so that job-array tasks and resumed studies agree), else the longest prefix
// of the tier's seeds, at least MinSeeds long, whose expected wall time at the horizon fits the budget, from one
// throughput probe (tps > 0 skips it). Horizon first, then seeds: the steps are not shortened to buy seeds.
func chooseSeeds(ctx context.Context, p *Plan, out *Outcome, o *Options, tps float64) error {
	t := out.Tier
	if t == nil || t.MinSeeds == 0 || o.Steps > 0 {
		return nil
	}
	if s, err := ReadSizing(filepath.Join(o.Out, SizingFile)); err == nil && s.Budget == o.Budget.String() && s.Seeds >= t.MinSeeds && s.Seeds <= len(t.Seeds) {
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
