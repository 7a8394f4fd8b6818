package experiment

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/smallinit/smallinit/analyze"
	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/tune"
)

// TuneDir (in the output directory) holds the learning-rate sweep: one directory of trial runs per γ and width
// and its tune.Result as <γ and width>.json.
const TuneDir = "tune"

// Tuned is the sweep's outcome for one γ at one width.
type Tuned struct {
	Gamma  float64     `json:"gamma"`
	Width  int         `json:"width"`
	Result tune.Result `json:"result"`
	// Grid is the full-horizon grid (TuneFull): every rate on every tuning seed, the vetoes; Transfer the
	// transfer rule's check at this width (TuneFull at a width other than the tuned one).
	Grid     *tune.GridResult    `json:"grid,omitempty"`
	Transfer *tune.TransferCheck `json:"transfer,omitempty"`
	// Horizons are the full-horizon trials' cooldown branches at the plan's shorter horizons (horizon.go), each
	// scored on the LR-selection slice: every rate on every tuning seed at every horizon.
	Horizons []HorizonTrial `json:"horizons,omitempty"`
	// TokensPerParam is the horizon of a ladder grid at its own horizon (ladder.go); 0 for the sweep at the
	// primaries' horizon.
	TokensPerParam float64 `json:"tokens_per_param,omitempty"`
}

// HorizonTrial is one cooldown branch of a full-horizon LR trial, scored on the LR-selection slice.
type HorizonTrial struct {
	Horizon float64 `json:"horizon"` // tokens per non-embedding parameter
	LR      float64 `json:"lr"`
	Seed    uint64  `json:"seed"`
	Steps   int     `json:"steps"`
	Loss    float64 `json:"loss"` // +Inf (JSON null) when it diverged
	Dir     string  `json:"dir"`
}

// tuneKey names a sweep point (its directory and result file).
func tuneKey(gamma float64, width int) string { return fmt.Sprintf("gamma%g-d%d", gamma, width) }

// options are the sweep's options at steps per main run: trials of at most max(steps/StepsDiv, MinSteps)
// steps, three rungs of halving rate Eta (default 3).
func (t *TuneSpec) options(steps int) tune.Options {
	eta := t.Eta
	if eta == 0 {
		eta = tune.DefaultEta
	}
	hi := max(steps/t.StepsDiv, t.MinSteps)
	lo := max((hi+eta*eta-1)/(eta*eta), 1) // three rungs: lo, lo·eta, hi
	return tune.Options{Center: t.Center, Values: t.Values, Eta: eta, MinSteps: lo, MaxSteps: hi}
}

// trialSets is the recipe of one trial: the base at steps, the sweep's sets, γ, width, learning rate and seed,
// training on the documents outside the selection slice and monitoring on the slice (never the validation
// split).
func (out *Outcome) trialSets(p *Plan, gamma float64, width, steps int, lr float64, seed uint64) []override.Set {
	sets := append(out.baseSets(p, nil, steps), p.Tune.Sets...)
	sets = append(sets,
		override.Set{Key: recipe.KeyGamma, Value: gamma},
		override.Set{Key: arch.KeyHiddenSize, Value: int64(width)},
		override.Set{Key: recipe.KeyLR, Value: lr},
		override.Set{Key: recipe.KeySeed, Value: int64(seed)},
		override.Set{Key: recipe.KeyDataVal, Value: filepath.Join(out.DataDir, data.SelectFile)},
		override.Set{Key: recipe.KeyEvalInterval, Value: int64(0)},
		override.Set{Key: recipe.KeyDiagnosticsInterval, Value: int64(0)})
	if !p.Tune.full() {
		// A halving trial is short: checkpointed at its end only (an interrupted trial trains again from the
		// start). A full-horizon trial keeps the plan's checkpoints.
		sets = append(sets, override.Set{Key: recipe.KeyCheckpointInterval, Value: int64(steps)})
	}
	return sets
}

// trialSteps are the steps of a full-horizon trial at width: the main runs' steps scaled to the same tokens
// per non-embedding parameter (ladderSteps).
func (out *Outcome) trialSteps(p *Plan, gamma float64, width int) (int, error) {
	c, err := train.LoadSets("", out.trialSets(p, gamma, width, out.Steps, p.Tune.LRs[0], p.Tune.Seeds[0]))
	if err != nil {
		return 0, fmt.Errorf("LR sweep recipe at width %d: %w", width, err)
	}
	return out.ladderSteps(p, out.Steps, c)
}

// runTuning runs (or resumes, or reads back) the learning-rate sweep of every γ at every width of the tier and
// returns the results by tuneKey.
func runTuning(ctx context.Context, p *Plan, out *Outcome, o *Options) (map[string]Tuned, error) {
	if p.Tune == nil {
		return nil, nil
	}
	if err := selectionPrepared(out, o); err != nil {
		return nil, err
	}
	if p.Tune.full() {
		return runGrid(ctx, p, out, o)
	}
	res := map[string]Tuned{}
	topts := p.Tune.options(out.Steps)
	for _, w := range p.tuneWidths(out.Tier) {
		for _, g := range p.Tune.Gammas {
			key := tuneKey(g, w)
			path := filepath.Join(o.Out, TuneDir, key+".json")
			if t, ok := readTuned(path, o, false); ok {
				res[key] = t
				continue
			}
			if o.Task {
				return nil, fmt.Errorf("learning-rate sweep %s has not run: run the plan once without a task index first (the tasks of a job array read its results)", key)
			}
			o.logf("\n== learning-rate sweep γ = %g, width %d: %d-value factor-2 grid around %g, trials of %v steps (at most %d steps)\n",
				g, w, topts.Values, topts.Center, topts.Rungs(), topts.WorstCaseSteps())
			r, err := tune.Select(topts, func(lr float64, steps int) (float64, error) {
				loss, spike, err := out.trial(ctx, p, g, w, steps, lr, p.Tune.Seed, o, nil)
				if err == nil && vetoed(p, spike) {
					// docs/definitions.md §7, "Learning rates": a rate whose loss spikes is refused, not ranked.
					o.logf("trial lr %g, %d steps: training loss spiked %.3f over its running minimum (threshold %g): vetoed\n", lr, steps, spike, p.Horizon.SpikeThreshold)
					return math.Inf(1), nil
				}
				return loss, err
			})
			if err != nil {
				return nil, fmt.Errorf("learning-rate sweep %s: %w", key, err)
			}
			o.logf("γ = %g, width %d: learning rate %g (selection loss %.4f, bracketed %v, %d trial steps)\n", g, w, r.LR, r.Loss, r.Bracketed, r.Steps)
			t := Tuned{Gamma: g, Width: w, Result: r}
			b, _ := json.MarshalIndent(t, "", "  ")
			if err := atomicfile.Write(path, append(b, '\n')); err != nil {
				return nil, err
			}
			res[key] = t
		}
	}
	return res, nil
}

// trialDir is a trial's run directory: by its grid's key (γ and width, and a ladder grid's horizon), rate,
// steps and (full-horizon trials) seed.
func trialDir(o *Options, p *Plan, key string, steps int, lr float64, seed uint64) string {
	name := fmt.Sprintf("lr%g-%dsteps", lr, steps)
	if p.Tune.full() {
		name += fmt.Sprintf("-seed%d", seed)
	}
	return filepath.Join(o.Out, TuneDir, key, name)
}

// trial trains one sweep trial (resuming it if interrupted) and returns its loss on the selection slice (+Inf
// when it diverged) and its spike statistic (stats.Spike of its logged training loss; 0 without a plan
// spike_threshold).
//
// Under a horizon series (full-horizon trials only) the trial is a WSD trunk, and each of its cooldown branches
// is trained after it and scored on the slice too, appended to hz.
func (out *Outcome) trial(ctx context.Context, p *Plan, gamma float64, width, steps int, lr float64, seed uint64, o *Options, hz *horizonTrials) (loss, spike float64, err error) {
	return out.trialAt(ctx, p, tuneKey(gamma, width), gamma, width, steps, lr, seed, 0, o, hz)
}

// horizonTrials collects a grid's cooldown branches as its trials end, from concurrent trials.
type horizonTrials struct {
	mu   sync.Mutex
	list []HorizonTrial
}

func (h *horizonTrials) add(t HorizonTrial) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list = append(h.list, t)
}

// sorted are the branches by horizon, rate and seed: the order does not depend on which trial ended first.
func (h *horizonTrials) sorted() []HorizonTrial {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := slices.Clone(h.list)
	slices.SortStableFunc(s, func(a, b HorizonTrial) int {
		return cmp.Or(cmp.Compare(a.Horizon, b.Horizon), cmp.Compare(a.LR, b.LR), cmp.Compare(a.Seed, b.Seed))
	})
	return s
}

// selectGrid runs the full-horizon grid gopts of γ at width in the grid named key (tune.SelectGrid), its trials
// packed as a group's runs are (Options.pack: Options.Jobs at once, cores/jobs threads each; the kernels' results
// do not depend on the thread count, so neither does the grid's). The first trial that fails stops the others
// (each keeps its checkpoints: the next call resumes them). hz (nil: none) collects the cooldown branches.
func (out *Outcome) selectGrid(ctx context.Context, p *Plan, key string, gamma float64, width, steps int, gopts tune.GridOptions, o *Options, hz *horizonTrials) (tune.GridResult, error) {
	cfg, err := train.LoadSets("", out.trialSets(p, gamma, width, steps, gopts.LRs[0], gopts.Seeds[0]))
	if err != nil {
		return tune.GridResult{}, fmt.Errorf("trial recipe: %w", err)
	}
	jobs, threads, o, err := o.pack(cfg, len(gopts.LRs)*len(gopts.Seeds))
	if err != nil {
		return tune.GridResult{}, err
	}
	if jobs > 1 {
		o.logf("%d trials at a time with %d threads each\n", jobs, threads)
	}
	gopts.Jobs = jobs
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r, err := tune.SelectGrid(gopts, func(lr float64, seed uint64) (float64, float64, error) {
		loss, spike, err := out.trialAt(ctx, p, key, gamma, width, steps, lr, seed, threads, o, hz)
		if err != nil {
			cancel(err)
		}
		return loss, spike, err
	})
	return r, err
}

// trialAt is trial in the grid named key; a ladder grid's key (ladderTuneKey) makes the trial a single-horizon
// run at the ladder's horizon (Plan.singleHorizon). threads > 0 sets train.threads (unless the recipe sets it).
func (out *Outcome) trialAt(ctx context.Context, p *Plan, key string, gamma float64, width, steps int, lr float64, seed uint64, threads int, o *Options, hz *horizonTrials) (loss, spike float64, err error) {
	dir := trialDir(o, p, key, steps, lr, seed)
	cfg, err := train.LoadSets("", out.trialSets(p, gamma, width, steps, lr, seed))
	if err != nil {
		return 0, 0, fmt.Errorf("trial recipe: %w", err)
	}
	if threads > 0 && cfg.Train.Threads == 0 {
		cfg.Train.Threads = threads
	}
	var branches []branchRun
	if key != tuneKey(gamma, width) {
		if cfg, err = p.singleHorizon(cfg); err != nil {
			return 0, 0, fmt.Errorf("trial recipe: %w", err)
		}
	} else if hz != nil {
		if cfg, branches, err = p.horizonRecipe(cfg, func(_ float64, n int) string { return trialBranchDir(dir, n) }); err != nil {
			return 0, 0, fmt.Errorf("trial recipe: %w", err)
		}
	}
	// The trial's run first (a finished one is only read back), so that its config is checked before a cached
	// score is trusted: an edited directory is refused, not reused.
	loss, err = out.scoreTrial(ctx, dir, steps, lr, seed, o, func() error { return trainTrial(ctx, cfg, dir, o) })
	if err != nil {
		return 0, 0, err
	}
	if !math.IsInf(loss, 1) {
		if spike, err = out.spikeOf(p, dir); err != nil {
			return 0, 0, err
		}
	}
	for _, b := range branches {
		bc := b.cfg
		bc.Train.Threads = cfg.Train.Threads
		bl, err := out.scoreTrial(ctx, b.dir, bc.TotalSteps(), lr, seed, o, func() error {
			return waitBusy(ctx, o, b.dir, func() error {
				_, err := train.StartOrResumeBranch(ctx, bc, b.dir, dir, train.Options{})
				return err
			})
		})
		if err != nil {
			return 0, 0, err
		}
		hz.add(HorizonTrial{Horizon: b.horizon, LR: lr, Seed: seed, Steps: bc.TotalSteps(), Loss: bl, Dir: b.dir})
	}
	return loss, spike, nil
}

// scoreTrial trains a trial's run in dir with run (or resumes it, or reads it back) and returns its loss on the
// selection slice (analyze.SelectionScore, recorded in the run directory); +Inf when it diverged (or, for a
// branch, when its trunk diverged before the branch point).
func (out *Outcome) scoreTrial(ctx context.Context, dir string, steps int, lr float64, seed uint64, o *Options, run func() error) (float64, error) {
	if err := run(); errors.Is(err, train.ErrConfigDiffers) || errors.Is(err, train.ErrAbandoned) {
		return 0, fmt.Errorf("LR sweep trial: %w", err)
	} else if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		// A diverged trial (non-finite loss) is the worst trial, not the end of the sweep.
		o.logf("trial lr %g, %d steps, seed %d: %v (counted as diverged)\n", lr, steps, seed, err)
		return math.Inf(1), nil
	}
	s, fresh, err := analyze.SelectionScore(ctx, dir, out.DataDir)
	if err != nil {
		return 0, err
	}
	if fresh {
		o.logf("  trial lr %g, %d steps, seed %d: selection loss %.4f\n", lr, steps, seed, s.Loss)
	}
	if math.IsNaN(s.Loss) || math.IsInf(s.Loss, 0) {
		return math.Inf(1), nil
	}
	return s.Loss, nil
}

// trialPoll is how often a trial that another process trains (a concurrent study on the same OUT) is tried again.
const trialPoll = 2 * time.Second

// trainTrial trains (or resumes, or reads back) one trial. A trial another live process holds is waited for,
// never counted as diverged: the holder finishes it, and this process then reads it back, so the selected
// learning rate does not depend on which process got there first.
func trainTrial(ctx context.Context, cfg recipe.Config, dir string, o *Options) error {
	return waitBusy(ctx, o, dir, func() error {
		_, err := o.engine().StartOrResume(ctx, cfg, dir, train.Options{})
		return err
	})
}

// waitBusy calls run until it does not fail with train.ErrBusy (another live process trains dir), waiting
// trialPoll between tries.
func waitBusy(ctx context.Context, o *Options, dir string, run func() error) error {
	told := false
	for {
		err := run()
		if !errors.Is(err, train.ErrBusy) {
			return err
		}
		if !told {
			o.logf("  trial %s is trained by another process; waiting for it\n", dir)
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(trialPoll):
		}
	}
}

// vetoed reports whether a trial's spike statistic exceeds the plan's primaries.spike_threshold (never without
// one): docs/definitions.md §7, "Learning rates".
func vetoed(p *Plan, spike float64) bool {
	return p.Horizon != nil && p.Horizon.SpikeThreshold > 0 && spike > p.Horizon.SpikeThreshold
}

// spikeOf is a finished trial's spike statistic (stats.Spike over its logged training losses; 0 when the plan
// has no primaries.spike_threshold, which vetoes nothing).
func (out *Outcome) spikeOf(p *Plan, dir string) (float64, error) {
	if p.Horizon == nil || !(p.Horizon.SpikeThreshold > 0) {
		return 0, nil
	}
	run, err := train.OpenRun(dir)
	if err != nil {
		return 0, err
	}
	ms, err := run.Metrics()
	if err != nil {
		return 0, err
	}
	var losses []float64
	for _, m := range ms {
		if m.Loss != 0 {
			losses = append(losses, m.Loss)
		}
	}
	return stats.Spike(losses), nil
}

// TunedKey names the sweep's result of γ at width (Outcome.Tuned's key; its file in TuneDir is TunedKey.json).
func TunedKey(gamma float64, width int) string { return tuneKey(gamma, width) }

// readTuned reads a sweep result written by an earlier execution (a full-horizon grid's when grid is set). A
// result that is missing is not an error; one that cannot be read or is not a finished result is said, and the
// sweep of that point runs again (its trials are read back from their run directories).
func readTuned(path string, o *Options, grid bool) (Tuned, bool) {
	var t Tuned
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return t, false
	}
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err == nil && (!(t.Result.LR > 0) || grid && t.Grid == nil) {
		err = fmt.Errorf("not a finished result")
	}
	if err != nil {
		o.logf("%s: %v: sweeping that point again\n", path, err)
		return t, false
	}
	return t, true
}
