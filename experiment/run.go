package experiment

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/smallinit/smallinit/analyze"
	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/internal/workers"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/probes"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/train"
)

// PlanFile (in the output directory) is the plan as Run printed it before anything trained (Options.Describe):
// written once, by the first execution, and never rewritten, so that a record can quote the plan exactly as it
// was registered.
const PlanFile = "plan.txt"

// Directories of a plan's output directory OUT besides its groups'.
const (
	DataDir      = "data"        // the prepared corpus
	ProbeDataDir = "probes-data" // the corpus with probes mixed in (plans with data.probes, or Options.Probes)
)

// Options control one execution of a plan.
type Options struct {
	Out    string
	Budget time.Duration // the wall-clock budget for all runs (0: the plan's)
	Steps  int           // > 0: steps per run instead of sizing the budget
	Seeds  []uint64      // nil: the plan's (SeedsFor the budget)
	// Probes trains every group on the probe mix and scores the probes in the summary; the groups, summary and
	// report get the suffix "-probes", so the plain runs stay beside them (the demo's --probes).
	Probes    bool
	ProbeTest int // held-out (and recalled) probes per kind of the mix (0: 100)
	Windows   int // validation windows per file the summary scores (0: all)
	Jobs      int // runs of a group trained at once, arms or sweep, and trials of a full-horizon grid (≤ 1 but sweep.AutoJobs: one at a time; AutoJobs: measured)
	// Engine trains each run: nil is the Go engine; train.TorchEngine the PyTorch trainer (see engine.go).
	Engine train.Engine
	// EngineInfo, when set, is recorded in summary.json (the PyTorch engine's interpreter, torch and device).
	EngineInfo *summary.Engine
	// Task runs only the run numbered Index of the whole plan (groups in order, then as the group lists its
	// runs): one task of a scheduler's job array. It writes no summary and no report.
	Task  bool
	Index int
	Log   io.Writer // progress lines (nil: silent)
	// Describe prints the plan (Description.Write: arms, seeds, steps, tokens, expected wall time) to Log
	// after sizing, before anything trains.
	Describe bool
	// Force starts a plan whose expected wall time (Estimate.Wall) is over the budget it was sized for; without
	// it such a plan is refused before anything trains (a resume, once plan.txt is written, is never refused).
	Force    bool
	Progress bool // progress bars for the arms' training (terminals)
	// Extra is the training a study design does besides the plan's groups, per seed the plan runs (package
	// reproduce's anchor grid): priced from the budget before the runs are sized, and listed with the plan.
	Extra []ExtraWork
	// ScoreTokens are the forward-only tokens a study design scores each final model on (the validation split
	// and whatever else its verdicts read): the wall-time estimate charges them.
	ScoreTokens int64
	// Data is a corpus directory prepared by `smallinit data prepare` that replaces the plan's corpus (the
	// embedded one, or data.dir): copied once into OUT/data (importData).
	Data string

	precisionNote string // why the arms' matmul precision is what it is (resolvePrecision; printed with the plan)
}

// ExtraWork is training outside the plan's groups, once per seed the plan runs: what it is (Text, printed with
// the plan and its seeds) and its forward+backward cost per seed in FLOPs (arch.Config.FLOPsPerToken × tokens),
// which the throughput probe converts into time at the base model's FLOPs per token.
type ExtraWork struct {
	Name, Text   string
	FLOPsPerSeed float64
}

// Outcome is what Run did.
type Outcome struct {
	Plan     *Plan
	Out      string
	Suffix   string // "" or "-probes"
	DataDir  string
	ProbeDir string // "" without a probe mix
	Stats    *data.Stats
	Steps    int // per run
	Seeds    []uint64
	Runs     int   // runs of the plan
	Tokens   int64 // training tokens per run of the base shape
	Rows     []summary.Row
	// Compare is the two runs the report's token-difficulty comparison contrasts (Train: the plan's
	// report.compare arms on the first seed; a study design may set its own before WriteReport).
	Compare analyze.Comparison
	Report  string // the HTML report written ("" when none)
	Tier    *Tier  // the budget's tier (nil for a plan without tiers)
	// Tuned are the learning-rate sweep's results by γ and width (nil without [tune]).
	Tuned map[string]Tuned
	// RunList is every run of the plan with its resolved recipe, in run order (the evaluator reads it).
	RunList []RunInfo
	// Branches are the cooldown branches of the plan's horizon series (nil without one), in run order.
	Branches []BranchInfo
	// Pairs are the plan's paired comparisons ([[pair]]), from the summary (nil without any).
	Pairs []Pair

	refParams int64   // the non-embedding parameters of the primaries' width (ladderSteps), once computed
	probeTPS  float64 // a throughput probe's tokens/s already measured in this execution (0: none yet)
	// probeOverhead is the overhead probe's fixed cost of a run, measured in this execution or read from the
	// sizing file (0: none yet).
	probeOverhead time.Duration
	probeScoreTPS float64 // the scoring probe's forward tokens/s, measured or read with probeOverhead (0: none yet)
}

// RunInfo is one run of a plan: its group, arm ("" for a sweep point), seed, directory and resolved recipe.
type RunInfo struct {
	Group  string
	Role   string // the group's role (Group.Role)
	Arm    string
	Seed   uint64
	Dir    string
	Config recipe.Config
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format, a...)
	}
}

// Run executes a plan on its own, without a study design: Start, the printed plan (Execution.Register, when
// Options.Describe), Train and, unless the execution is one task of a job array, the report
// (Execution.WriteReport) with the plan's comparison (report.compare).
func Run(ctx context.Context, p *Plan, o Options) (*Outcome, error) {
	x, err := Start(ctx, p, o)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	if x.PrintsPlan() {
		d, err := x.Describe()
		if err != nil {
			return nil, err
		}
		if err := x.Register(d); err != nil {
			return nil, err
		}
	}
	out, err := x.Train(ctx)
	if err != nil || o.Task {
		return out, err
	}
	return out, x.WriteReport(ctx)
}

// Execution is one execution of a plan that Start has prepared and sized: the corpus is in place, the budget's
// tier chosen and the steps and seeds known; nothing has trained. The caller (Run, or a study design such as
// package reproduce) drives it one way: Describe and Register the printed plan, Train, judge what it ran, and
// WriteReport; then Close.
type Execution struct {
	out  *Outcome
	o    Options
	lock *runlock.Lock // OUT/study.lock, held by the study's driver (nil for a task of a job array)
}

// StudyLockFile (in the output directory) is held by the driver of a study, the process that runs the whole plan
// (not a task of a job array, which trains one run and shares sizing.lock and the runs' locks with the others),
// from its first write (Start) to its last (the caller's Close, after scoring, judging and the report): a
// second driver on the same output directory is refused at once, naming the holder's pid and host. The lock
// file is package runlock's: a holder that died (or is a zombie) on this host, or whose heartbeat stopped, is
// taken over.
const StudyLockFile = "study.lock"

// Start prepares the data (once), mixes the probes in where the plan asks, resolves the precision and sizes
// the budget (or reuses OUT/sizing.json), training nothing. A driver (not Options.Task) holds OUT/study.lock
// from here until Close.
func Start(ctx context.Context, p *Plan, o Options) (*Execution, error) {
	autoSeeds, err := begin(p, &o)
	if err != nil {
		return nil, err
	}
	x := &Execution{o: o}
	if !o.Task {
		if x.lock, err = lockStudy(o.Out); err != nil {
			return nil, err
		}
	}
	if err := x.start(ctx, p, autoSeeds); err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

// lockStudy takes OUT/study.lock (StudyLockFile) for a study's driver, or says which live process holds it.
func lockStudy(out string) (*runlock.Lock, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(out, StudyLockFile)
	l, err := runlock.Acquire(path, runlock.DefaultStaleAfter, nil)
	var busy *runlock.BusyError
	if errors.As(err, &busy) {
		return nil, fmt.Errorf("%s: another study is running on this output directory (locked by %s): wait for it to end, or give another --out", path, busy.Holder)
	}
	return l, err
}

// Close releases the study's lock (a task's execution holds none). It may be called more than once.
func (x *Execution) Close() {
	if x.lock != nil {
		x.lock.Release()
		x.lock = nil
	}
}

// start is Start's work once the options are checked and the lock held.
func (x *Execution) start(ctx context.Context, p *Plan, autoSeeds bool) error {
	o := &x.o
	out := &Outcome{Plan: p, Out: o.Out, Seeds: o.Seeds, DataDir: filepath.Join(o.Out, DataDir)}
	if o.Probes {
		out.Suffix = "-probes"
	}
	x.out = out
	if err := prepareCorpus(ctx, p, out, o); err != nil {
		return err
	}
	var err error
	if p, err = resolvePrecision(p, out, o, true); err != nil {
		return err
	}
	out.Tier = p.TierFor(o.Budget)
	p = p.Tiered(out.Tier)
	out.Plan = p
	if hs, _ := p.series(); hs != nil && o.engine().Name() != train.EngineGo {
		return fmt.Errorf("plan %s: the horizon series %v (WSD cooldown branches from a trunk's snapshots) trains with the Go engine only, not %s", p.Name, hs, o.engine().Name())
	}
	if err := p.checkSeriesKeys(o.logf); err != nil {
		return err
	}
	autoSeeds = autoSeeds && out.Tier != nil && out.Tier.MinSeeds > 0
	if out.Steps, err = size(ctx, p, out, o, autoSeeds); err != nil {
		return err
	}
	out.Seeds = o.Seeds
	return checkPairSeeds(p, o.Seeds) // the tier's seeds, as the sizing chose them
}

// begin checks a training plan's options and fills in the budget (the plan's when o has none) and the seeds
// (the budget's when o has none, reported as auto), refusing more runs than MaxRuns.
func begin(p *Plan, o *Options) (autoSeeds bool, err error) {
	if p.Kind != KindTrain {
		return false, fmt.Errorf("plan %s is a %s plan, not a training plan", p.Name, p.Kind)
	}
	if err := checkOptions(p, o); err != nil {
		return false, fmt.Errorf("plan %s: %w", p.Name, err)
	}
	if o.Budget <= 0 {
		o.Budget = p.Budget.Duration()
	}
	autoSeeds = o.Seeds == nil
	if o.Seeds == nil {
		o.Seeds = p.SeedsFor(o.Budget)
	}
	if err := checkRuns(p, len(o.Seeds)); err != nil {
		return false, err
	}
	return autoSeeds, checkPairSeeds(p, o.Seeds)
}

// prepareCorpus puts the plan's corpus in OUT/data (a prepared one copied, else the embedded one tokenized)
// and, for a plan with a probe mix or Options.Probes, the mix in OUT/probes-data. A cancelled ctx stops the
// copy (importData).
func prepareCorpus(ctx context.Context, p *Plan, out *Outcome, o *Options) error {
	var err error
	if src := o.dataSource(p); src != "" {
		out.Stats, err = importData(ctx, src, out.DataDir, o)
	} else {
		out.Stats, err = prepareData(out.DataDir, p.Data.Vocab, o)
	}
	if err != nil {
		return err
	}
	if !p.Data.Probes && !o.Probes {
		return nil
	}
	out.ProbeDir = filepath.Join(o.Out, ProbeDataDir)
	if _, err := os.Stat(filepath.Join(out.ProbeDir, data.TrainFile)); err != nil {
		o.logf("mixing reasoning and memorisation probes into the corpus (%.0f%% of the tokens) in %s\n", 100*probes.MixShare, out.ProbeDir)
	}
	return probes.WriteMix(out.ProbeDir, out.DataDir, out.Stats.VocabSize, probes.MixConfig(cmp.Or(o.ProbeTest, 100)), probes.MixShare)
}

// Plan is the plan as this execution runs it (its budget's tier applied).
func (x *Execution) Plan() *Plan { return x.out.Plan }

// PrintsPlan reports whether the execution prints its plan before training (Options.Describe with a Log, not a
// task of a job array): then Describe and Register come before Train.
func (x *Execution) PrintsPlan() bool { return x.o.Describe && x.o.Log != nil && !x.o.Task }

// Describe is what the execution will run, at its sized steps and seeds (the throughput the sizing measured or
// read).
func (x *Execution) Describe() (*Description, error) {
	do := x.o
	do.Steps = x.out.Steps
	tps := 0.0
	key, err := do.probeKey(x.out.Plan, x.out)
	if err != nil {
		return nil, err
	}
	if s, err := budget.ReadSizing(filepath.Join(x.o.Out, budget.SizingFile)); err == nil && s.Differs(key) == "" { // its probe, not another engine's
		tps = s.ProbeTokensPerS
	}
	return Describe(x.out.Plan, do, tps)
}

// Register prints d (Description.Write, its Statement first) to the log and, on the first execution, refuses a
// plan over its budget (unless Options.Force) and records the text as OUT/plan.txt: the plan as printed before
// the first run trained is the record's (PlanFile); a resume prints the plan again but never rewrites it.
func (x *Execution) Register(d *Description) error {
	var text bytes.Buffer
	if err := d.Write(&text); err != nil {
		return err
	}
	if _, err := x.o.Log.Write(text.Bytes()); err != nil {
		return err
	}
	path := filepath.Join(x.o.Out, PlanFile)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		return nil
	}
	if err := overBudget(x.out.Plan, d, &x.o); err != nil {
		return err
	}
	return atomicfile.Write(path, text.Bytes())
}

// Train trains every run of every group (resuming interrupted and skipping finished ones; a task of a job array
// its one run), after the LR sweep, writes the summary and the pairs, and returns what it ran. The outcome's
// comparison is the plan's report.compare arms on the first seed.
func (x *Execution) Train(ctx context.Context) (*Outcome, error) {
	out, o, p := x.out, &x.o, x.out.Plan
	if p.Data.Selection && p.Tune == nil {
		if err := selectionPrepared(out, o); err != nil {
			return nil, err
		}
	}
	var err error
	if out.Tuned, err = runTuning(ctx, p, out, o); err != nil {
		return nil, err
	}
	runs, err := x.expandRuns()
	if err != nil {
		return nil, err
	}
	for gi := range p.Groups {
		if err := x.trainGroup(ctx, &p.Groups[gi], runs); err != nil {
			return nil, err
		}
	}
	if o.Task {
		return out, nil
	}
	if err := x.writeSummary(); err != nil {
		return nil, err
	}
	for _, r := range runs {
		if r.arm != "" && r.seed == o.Seeds[0] {
			if r.arm == p.Report.Compare[0] {
				out.Compare.A = r.dir
			}
			if r.arm == p.Report.Compare[1] {
				out.Compare.B = r.dir
			}
		}
	}
	return out, nil
}

// expandRuns resolves every run of the plan at the sized steps into the outcome's RunList and Branches, and
// its base-shape tokens per run; a task's index is checked against them.
func (x *Execution) expandRuns() ([]planRun, error) {
	out, o, p := x.out, &x.o, x.out.Plan
	runs, err := expandChecked(p, out, out.Steps, o)
	if err != nil {
		return nil, err
	}
	out.Runs = len(runs)
	for _, r := range runs {
		out.RunList = append(out.RunList, RunInfo{Group: r.group.Name, Role: r.group.Role, Arm: r.arm, Seed: r.cfg.Seed, Dir: r.dir, Config: r.cfg})
		for _, b := range r.branches {
			out.Branches = append(out.Branches, BranchInfo{Horizon: b.horizon, Trunk: r.dir,
				RunInfo: RunInfo{Group: r.group.Name, Role: r.group.Role, Arm: r.arm, Seed: r.cfg.Seed, Dir: b.dir, Config: b.cfg}})
		}
	}
	base, err := train.LoadSets("", out.baseSets(p, nil, out.Steps))
	if err != nil {
		return nil, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	out.Tokens = int64(out.Steps) * int64(base.Train.BatchSize) * int64(base.Model.SeqLen)
	if o.Task && (o.Index < 0 || o.Index >= len(runs)) {
		return nil, fmt.Errorf("plan %s has runs 0 … %d, not %d", p.Name, len(runs)-1, o.Index)
	}
	return runs, nil
}

// trainGroup trains one group's runs (a task: only its own run, if it is the group's): a sweep group through
// package sweep, an arms group by runArms, whose rows join the summary's.
func (x *Execution) trainGroup(ctx context.Context, g *Group, runs []planRun) error {
	out, o, p := x.out, &x.o, x.out.Plan
	if g.Axes != nil && !g.derived() {
		if err := runSweep(ctx, g, runs, out, o); err != nil {
			return err
		}
		if p.Summary && !o.Task {
			o.logf("group %s: a sweep, whose runs summary.json leaves out; smallinit sweep collect %s tabulates them\n", g.Name, out.groupDir(g))
		}
		return nil
	}
	var idx []int
	for i, r := range runs {
		if r.group == g && (!o.Task || i == o.Index) {
			idx = append(idx, i)
		}
	}
	rows, err := runArms(ctx, runs, idx, out, o)
	if err != nil {
		return err
	}
	if p.Summary {
		out.Rows = append(out.Rows, rows...)
	}
	return nil
}

// writeSummary writes summary.json and the plan's pairs (PairsFile) for a plan with a summary.
func (x *Execution) writeSummary() error {
	out, o, p := x.out, &x.o, x.out.Plan
	if !p.Summary {
		return nil
	}
	if err := summary.Write(filepath.Join(o.Out, summary.FileName(out.Suffix)),
		summary.Summary{Steps: out.Steps, Seed: o.Seeds[0], Data: out.Stats, Engine: o.EngineInfo, Runs: out.Rows}); err != nil {
		return err
	}
	if out.Pairs = pairs(p, out); out.Pairs == nil {
		return nil
	}
	b, err := json.MarshalIndent(out.Pairs, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", PairsFile, err)
	}
	return atomicfile.Write(filepath.Join(o.Out, PairsFile), append(b, '\n'))
}

// prepareData tokenizes the embedded corpus into dir unless it is there.
func prepareData(dir string, vocab int, o *Options) (*data.Stats, error) {
	st, err := data.ReadStats(dir)
	if err == nil {
		if st.Source != "embedded" || st.VocabSize != vocab {
			return nil, fmt.Errorf("%s says a corpus prepared from %s with a vocabulary of %d, not the plan's embedded corpus of %d (data.vocab): use another --out (or, if that stats.json was edited, restore it or rm -r %s to prepare the corpus again)",
				filepath.Join(dir, data.StatsFile), st.Source, st.VocabSize, vocab, dir)
		}
		if err := data.Verify(dir, st); errors.Is(err, data.ErrNoSums) {
			o.logf("note: %v\n", err)
		} else if err != nil {
			return nil, err
		}
		// stats.json's counts and vocabulary against the files, as --data checks them: an edited stats.json is
		// named here, not later as a run whose config.toml differs.
		if err := data.CheckPrepared(dir, st); err != nil {
			return nil, err
		}
		o.logf("reusing the prepared corpus in %s\n", dir)
		return st, nil
	}
	o.logf("preparing the embedded corpus in %s (byte-level BPE, %d tokens)...\n", dir, vocab)
	t0 := time.Now()
	if st, err = data.PrepareEmbedded(dir, vocab, nil); err != nil {
		return nil, err
	}
	o.logf("prepared %d training and %d validation tokens (%.2f bytes/token) in %.1fs\n",
		st.Train.Tokens, st.Val.Tokens, st.BytesPerToken, time.Since(t0).Seconds())
	return st, nil
}

// baseSets is the recipe every run of group g (nil: the base model) starts from at steps per run: the plan's
// base, the keys set from the data and the steps, then the group's own keys.
func (out *Outcome) baseSets(p *Plan, g *Group, steps int) []override.Set {
	trainDir, trainFile := out.DataDir, data.TrainFile
	if p.withoutSelection() {
		trainFile = data.SelectTrainFile // the LR-selection slice is never trained on
	}
	if out.ProbeDir != "" && (out.Suffix != "" || g != nil && g.Data == DataProbes) {
		trainDir, trainFile = out.ProbeDir, data.TrainFile
	}
	sets := append([]override.Set(nil), p.Base...)
	sets = append(sets, override.Set{Key: recipe.KeyVocab, Value: int64(out.Stats.VocabSize)},
		override.Set{Key: recipe.KeySteps, Value: int64(steps)})
	for _, ps := range p.PerStep {
		sets = append(sets, override.Set{Key: ps.Key, Value: int64(max(steps/ps.Div, 1))})
	}
	sets = append(sets, override.Set{Key: recipe.KeyDataTrain, Value: filepath.Join(trainDir, trainFile)},
		override.Set{Key: recipe.KeyDataVal, Value: filepath.Join(out.DataDir, data.ValFile)})
	if g != nil {
		sets = append(sets, g.Sets...)
	}
	return sets
}

// planRun is one run of a plan: an arm's seed, or a point of a sweep group.
type planRun struct {
	group *Group
	arm   string // "" for a sweep point
	seed  uint64
	dir   string
	cfg   recipe.Config
	local int // index within its sweep
	// branches are the run's cooldown branches of the plan's shorter horizons (horizon.go), trained after it.
	branches []branchRun
}

// expand resolves every run of the plan at steps per run; a recipe that does not load is an error naming the
// arm (or the sweep run) and the key.
func expand(p *Plan, out *Outcome, steps int, o *Options) ([]planRun, error) {
	var runs []planRun
	for gi := range p.Groups {
		g := &p.Groups[gi]
		if g.Axes != nil && !g.derived() {
			sp, err := sweepPlan(g, out, steps, o)
			if err != nil {
				return nil, err
			}
			for _, r := range sp.Runs {
				runs = append(runs, planRun{group: g, dir: sweep.RunDir(out.groupDir(g), r), cfg: r.Config, local: r.Index})
			}
			continue
		}
		arms := g.Arms
		if g.derived() && len(g.Axes) > 0 {
			arms = nil
			for _, pt := range points(groupAxes(g, out.Tier)) {
				arms = append(arms, Arm{Name: pointName(pt), Sets: pt})
			}
		}
		for _, a := range arms {
			for _, seed := range groupSeeds(g, o) {
				armSteps := steps
				sets := append(append(out.baseSets(p, g, steps), a.Sets...), override.Set{Key: recipe.KeySeed, Value: int64(seed)})
				cfg, err := train.LoadSets("", sets)
				if err == nil && g.Ladder {
					// The same tokens per non-embedding parameter at every width of the ladder, at the ladder's own
					// horizon when the tier gives it one.
					if p.ownHorizon(g) {
						armSteps, err = out.rungSteps(p, steps, cfg)
					} else {
						armSteps, err = out.ladderSteps(p, steps, cfg)
					}
					if err == nil && armSteps != steps {
						sets = append(append(out.baseSets(p, g, armSteps), a.Sets...), override.Set{Key: recipe.KeySeed, Value: int64(seed)})
						cfg, err = train.LoadSets("", sets)
					}
				}
				if err == nil && g.derived() {
					var more []override.Set
					if more, err = out.derivedSets(p, g, cfg); err == nil {
						cfg, err = train.LoadSets("", append(sets, more...))
					}
				}
				var branches []branchRun
				if err == nil && p.ownHorizon(g) {
					cfg, err = p.singleHorizon(cfg)
				} else if err == nil {
					cfg, branches, err = p.horizonRecipe(cfg, func(h float64, n int) string {
						return filepath.Join(out.horizonDir(g, h), fmt.Sprintf("%s-%dsteps-seed%d", a.Name, n, seed))
					})
				}
				if err != nil {
					return nil, fmt.Errorf("plan %s: group %s: arm %s: %w", p.Name, g.Name, a.Name, err)
				}
				dir := filepath.Join(out.groupDir(g), fmt.Sprintf("%s-%dsteps-seed%d", a.Name, armSteps, seed))
				runs = append(runs, planRun{group: g, arm: a.Name, seed: seed, dir: dir, cfg: cfg, branches: branches})
			}
		}
	}
	return runs, nil
}

func (out *Outcome) groupDir(g *Group) string { return filepath.Join(out.Out, g.Name+out.Suffix) }

// sweepAxes are a sweep group's axes with the plan's seeds (the group's own, when it has them) as the seed axis.
func sweepAxes(g *Group, seeds []uint64) []sweep.Axis {
	axes := append([]sweep.Axis(nil), g.Axes...)
	if g.Seeds != nil {
		seeds = g.Seeds
	}
	sv := make([]any, len(seeds))
	for i, s := range seeds {
		sv[i] = int64(s)
	}
	return append(axes, sweep.Axis{Key: recipe.KeySeed, Values: sv})
}

// sweepGrid is a sweep group's grid, typed: its base recipe and its axes with the plan's seeds.
func sweepGrid(p *Plan, g *Group, out *Outcome, steps int, seeds []uint64) (*sweep.Grid, error) {
	grid, err := sweep.NewGrid(out.baseSets(p, g, steps), sweepAxes(g, seeds))
	if err != nil {
		return nil, fmt.Errorf("plan %s: group %s: %w", p.Name, g.Name, err)
	}
	return grid, nil
}

// gridText is a sweep group's grid file (what a job array's tasks and `smallinit sweep` read from disk): its
// base recipe and its axes with the plan's seeds.
func gridText(p *Plan, g *Group, out *Outcome, steps int, seeds []uint64) ([]byte, error) {
	base, err := override.Document(out.baseSets(p, g, steps))
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("# written by smallinit (plan %s, group %s)\n[base]\n%s\n[axes]\n", p.Name, g.Name, base)
	for _, a := range sweepAxes(g, seeds) {
		v, err := override.Value(a.Values)
		if err != nil {
			return nil, fmt.Errorf("axes %q: %w", a.Key, err)
		}
		text += fmt.Sprintf("%q = %s\n", a.Key, v)
	}
	return []byte(text), nil
}

// sweepPlan expands a sweep group without writing anything.
func sweepPlan(g *Group, out *Outcome, steps int, o *Options) (*sweep.Plan, error) {
	grid, err := sweepGrid(out.Plan, g, out, steps, o.Seeds)
	if err != nil {
		return nil, err
	}
	sp, err := grid.Expand()
	if err != nil {
		return nil, fmt.Errorf("plan %s: group %s: %w", out.Plan.Name, g.Name, err)
	}
	return sp, nil
}

// runSweep writes a sweep group's grid file (OUT/<group>.grid.toml, for a job array's tasks and `smallinit
// sweep`) and executes the typed grid (every run, or the task's).
func runSweep(ctx context.Context, g *Group, runs []planRun, out *Outcome, o *Options) error {
	index := -1
	if o.Task {
		r := runs[o.Index]
		if r.group != g {
			return nil
		}
		index = r.local
	}
	text, err := gridText(out.Plan, g, out, out.Steps, o.Seeds)
	if err != nil {
		return err
	}
	grid, err := sweepGrid(out.Plan, g, out, out.Steps, o.Seeds)
	if err != nil {
		return err
	}
	dir := out.groupDir(g)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gpath := filepath.Join(out.Out, g.Name+out.Suffix+".grid.toml")
	if err := atomicfile.Write(gpath, text); err != nil {
		return err
	}
	grid.Path, grid.Text = gpath, text
	o.logf("\n== %s: %s\n", g.Name, dir)
	if _, err := sweep.Execute(ctx, grid, dir, sweep.Options{Jobs: o.Jobs, Index: index, Log: o.Log, Engine: o.Engine}); err != nil {
		return fmt.Errorf("%s sweep: %w", g.Name, err)
	}
	return nil
}

// runArms trains runs[idx...] of one group of arms: one at a time on all cores, or, with Options.Jobs > 1
// (AutoJobs: as OUT/packing.json chooses, see train.PackingFor; probed on the group's first run, and again
// for a group whose first run has another model size or precision), that many at once with cores/jobs threads
// each, their training logs in each run's train.log and one line per run on Log. The rows come back in the
// order of idx either way, so that the summary does not depend on the packing (and neither do the weights:
// the kernels' results do not depend on the thread count).
func runArms(ctx context.Context, runs []planRun, idx []int, out *Outcome, o *Options) ([]summary.Row, error) {
	jobs, threads, o, err := o.pack(runs[idx[0]].cfg, len(idx))
	if err != nil {
		return nil, err
	}
	rows := make([]summary.Row, len(idx))
	if jobs > 1 {
		o.logf("\n%s: %d runs, %d at a time with %d threads each (logs in each run's %s)\n", runs[idx[0]].group.Name, len(idx), jobs, threads, TrainLogFile)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make([]error, len(idx))
	workers.Each(ctx, len(idx), jobs, func(k int) {
		if ctx.Err() != nil { // stopped while this run waited for a worker: leave it unstarted
			return
		}
		if rows[k], errs[k] = runArm(ctx, runs[idx[k]], idx[k], len(runs), out, o, threads); errs[k] != nil {
			cancel(errs[k])
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rows, context.Cause(ctx)
}

// pack is how many of n runs of recipe cfg train at once (Options.Jobs; AutoJobs: as OUT/packing.json chooses,
// see train.PackingFor) and with how many threads each (0: one at a time on all cores), and the options they
// share: with jobs > 1 a copy of o whose Log takes one write at a time.
func (o *Options) pack(cfg recipe.Config, n int) (jobs, threads int, po *Options, err error) {
	jobs = o.Jobs
	if jobs == sweep.AutoJobs {
		jobs = 1
		if !o.Task && n > 1 && runtime.NumCPU() > 1 {
			pk, err := train.PackingFor(filepath.Join(o.Out, train.PackingFile), cfg, runtime.NumCPU(), o.Log)
			if err != nil {
				return 0, 0, nil, err
			}
			jobs = pk.Jobs
		}
	}
	jobs = max(1, min(jobs, n))
	if jobs == 1 {
		return 1, 0, o, nil
	}
	c := *o // the packed runs share Log: one line at a time
	if o.Log != nil {
		c.Log = &lockedWriter{w: o.Log}
	}
	return jobs, max(1, runtime.NumCPU()/jobs), &c, nil
}

// overBudget refuses to start a plan the budget sized (no --steps) whose expected wall time is over that budget,
// unless Options.Force: a 30-minute budget that would run for hours is a mistake to say before training, not
// after.
func overBudget(p *Plan, d *Description, o *Options) error {
	e := d.Estimate
	if o.Force || o.Steps > 0 || e == nil || e.Wall <= d.Budget {
		return nil
	}
	return fmt.Errorf("plan %s: the expected wall time %s is over the budget %s on this machine (the time line above): "+
		"give --force to run it anyway, or a larger budget, or fewer seeds", p.Name, e.Wall.Round(time.Minute), d.Budget)
}

// lockedWriter serialises the writes of packed runs to one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TrainLogFile is a packed arm's training log, in its run directory.
const TrainLogFile = "train.log"

// runArm trains (or resumes, or reads back) one arm's run and scores it for the summary when the plan has one.
//
// threads > 0 packs it beside others: a new run gets train.threads = threads (unless its recipe sets it), its
// training log goes to DIR/train.log, and Log gets one line when it starts and one when it ends.
func runArm(ctx context.Context, r planRun, i, n int, out *Outcome, o *Options, threads int) (summary.Row, error) {
	c := r.cfg
	o.logf("\n[%d/%d] %s: γ = %g, ε = %g, gate %s, %d steps -> %s\n", i+1, n, r.arm, c.Init.Gamma, c.Model.NormEps, c.Model.AttnGate, c.TotalSteps(), r.dir)
	opts := train.Options{Log: o.Log, Progress: o.Progress, Diagnostics: diag.Training}
	if threads > 0 {
		if c.Train.Threads == 0 {
			c.Train.Threads = threads
		}
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return summary.Row{}, err
		}
		lf, err := inputfile.OpenAppend(filepath.Join(r.dir, TrainLogFile))
		if err != nil {
			return summary.Row{}, err
		}
		defer lf.Close()
		opts.Log, opts.Progress = lf, false
	}
	res, err := o.engine().StartOrResume(ctx, c, r.dir, opts)
	if err != nil {
		return summary.Row{}, fmt.Errorf("%s: %w", r.arm, err)
	}
	for _, b := range r.branches {
		bc := b.cfg
		bc.Train.Threads = c.Train.Threads
		o.logf("[%d/%d] %s: the %g tokens-per-parameter branch, %d steps from step %d -> %s\n", i+1, n, r.arm, b.horizon, bc.TotalSteps(), train.BranchPoint(bc), b.dir)
		if _, err := train.StartOrResumeBranch(ctx, bc, b.dir, r.dir, opts); err != nil {
			return summary.Row{}, fmt.Errorf("%s, horizon %g: %w", r.arm, b.horizon, err)
		}
	}
	if threads > 0 {
		o.logf("[%d/%d] %s: done, val loss %.4f (training-time estimate), %.0f tokens/s\n", i+1, n, r.arm, res.ValLoss, res.TokensPerS)
	}
	if !out.Plan.Summary {
		return summary.Row{}, nil
	}
	if ctx.Err() != nil { // stopped after training: the next call reads the run back and scores it
		return summary.Row{}, fmt.Errorf("%s: %w before scoring %s: %w", r.arm, train.ErrInterrupted, r.dir, context.Cause(ctx))
	}
	probeDir := ""
	if out.Suffix != "" || r.group.Data == DataProbes {
		probeDir = out.ProbeDir
	}
	row, err := analyze.Score(ctx, r.dir, out.DataDir, probeDir, res, o.Windows)
	if err != nil {
		return row, err
	}
	row.Run, row.Seed, row.Gamma, row.NormEps, row.AttnGate, row.Steps = r.arm, r.seed, c.Init.Gamma, c.Model.NormEps, c.Model.AttnGate, c.TotalSteps()
	return row, nil
}
