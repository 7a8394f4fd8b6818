package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/train/rundir"
)

// Run is one run directory as read from disk. Anything that could not be read is recorded in Problems rather
// than returned as an error, so that a report can list broken and unfinished runs beside finished ones.
type Run struct {
	Dir         string        // the run directory
	ID          string        // short name: the directory's base name (longer when two runs share it)
	Config      recipe.Config // the resolved config (meaningful only when HasConfig)
	HasConfig   bool
	Metrics     []rundir.Metrics // metrics.jsonl, in file order
	Diagnostics []DiagPoint      // diagnostics.jsonl, in file order
	Checkpoints []Checkpoint     // checkpoints/step-*/ holding a model, by step
	FinalDir    string           // final/ when it holds a model, else ""
	InitDir     string           // init/ (the step-0 weights) when it holds a model, else "" (runs before it was written)
	TotalSteps  int              // the steps the config asks for (0 without a config)
	Complete    bool             // config, metrics up to TotalSteps and a final model are all there
	Reason      string           // why the run is incomplete ("" when complete)
	Problems    []string         // everything that could not be read
	Recipe      map[string]any   // the resolved config as dotted keys and typed values (recipe.Config.Flatten)
	Summary     *summary.Row     // the plan's summary.json row naming this run, if any
	Arm         *Arm             // nil for a run without a readable config
}

// Checkpoint is one retained checkpoint of a run.
type Checkpoint struct {
	Step int
	Dir  string
}

// DiagPoint is one line of diagnostics.jsonl (a rundir.DiagLine of a diagrec.Record): the weight metrics per tensor
// and per class, and the activation metrics. A line from a file that has no per-class means gets them from its
// tensors (diagrec.SummariseClasses); Activations is nil when the line has none.
type DiagPoint struct {
	Step int
	diagrec.Record
	Err string // a line recorded as {"step", "error"} (e.g. a diverged model)
}

// Skipped is a path the report read nothing from, and why: an input with no run under it, a subdirectory that
// could not be read, or a summary.json that could not be read.
type Skipped struct {
	Path   string
	Reason string
}

// Data is everything a report draws: the runs found and their arms.
type Data struct {
	Inputs  []string  // the paths given to Gather
	Runs    []*Run    // every run found, in discovery order (sorted by directory)
	Arms    []*Arm    // runs grouped by config, sorted by size, γ, ε and gate
	Varying []string  // config keys that tell arms apart (seed excluded), in display order
	Ignored []string  // bookkeeping keys that differ between runs but do not split arms
	Skipped []Skipped // paths read nothing from (inputs without runs, unreadable subdirectories and summaries)
}

// Gather finds the runs in paths (each a run directory or a directory with runs somewhere below it, such as a
// demo's or a sweep's output), reads them and groups them into arms. Unreadable or unfinished runs are kept and
// marked; a path with no run under it is recorded in Skipped. It returns an error only for an I/O failure
// while walking.
func Gather(paths []string) (*Data, error) {
	d := &Data{Inputs: append([]string(nil), paths...)}
	seen := map[string]bool{}
	roots := map[*Run]string{}
	var summaries []summaryFile
	seenSummary := map[string]bool{}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			d.Skipped = append(d.Skipped, Skipped{root, err.Error()})
			continue
		}
		if !info.IsDir() {
			d.Skipped = append(d.Skipped, Skipped{root, "not a directory"})
			continue
		}
		// A plan writes summary.json beside its groups' directories: a root that is one of them finds it above.
		if up := filepath.Dir(root); !seenSummary[up] {
			seenSummary[up] = true
			if s, err := readSummary(up); err == nil {
				summaries = append(summaries, s)
			} else if !errors.Is(err, fs.ErrNotExist) {
				d.Skipped = append(d.Skipped, Skipped{filepath.Join(up, summary.File), err.Error()})
			}
		}
		found := 0
		err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if p == root {
					return err
				}
				d.Skipped = append(d.Skipped, Skipped{p, err.Error()}) // an unreadable subdirectory: skipped, and said so
				return nil
			}
			if !e.IsDir() {
				return nil
			}
			if p != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "checkpoints" || e.Name() == rundir.FinalDir) {
				return fs.SkipDir
			}
			if !seenSummary[p] {
				seenSummary[p] = true
				if s, err := readSummary(p); err == nil {
					summaries = append(summaries, s)
				} else if !errors.Is(err, fs.ErrNotExist) {
					d.Skipped = append(d.Skipped, Skipped{filepath.Join(p, summary.File), err.Error()})
				}
			}
			if !rundir.IsRunDir(p) {
				return nil
			}
			abs, _ := filepath.Abs(p)
			if !seen[abs] {
				seen[abs] = true
				r := readRun(p)
				roots[r] = root
				d.Runs = append(d.Runs, r)
			}
			found++
			return fs.SkipDir
		})
		if err != nil {
			return nil, fmt.Errorf("report: walk %s: %w", root, err)
		}
		if found == 0 {
			d.Skipped = append(d.Skipped, Skipped{root, "no run directory (config.toml or metrics.jsonl) under it"})
		}
	}
	sort.SliceStable(d.Runs, func(i, j int) bool { return d.Runs[i].Dir < d.Runs[j].Dir })
	nameRuns(d.Runs, roots)
	attachSummaries(d.Runs, summaries)
	d.groupArms()
	return d, nil
}

// Leave takes out of d the runs for which why gives a reason (a non-empty string), records each in Skipped
// with that reason (so the page and the warnings say what was left out and why), and groups the rest into arms
// again. It returns how many runs it took out.
func (d *Data) Leave(why func(*Run) string) int {
	var keep []*Run
	for _, r := range d.Runs {
		if reason := why(r); reason != "" {
			d.Skipped = append(d.Skipped, Skipped{r.Dir, reason})
			continue
		}
		keep = append(keep, r)
	}
	left := len(d.Runs) - len(keep)
	if left > 0 {
		d.Runs, d.Arms, d.Varying, d.Ignored = keep, nil, nil, nil
		for _, r := range d.Runs {
			r.Arm = nil
		}
		d.groupArms()
	}
	return left
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// nameRuns gives each run a short unique ID: its base name, else its path below the input it was found under.
func nameRuns(runs []*Run, roots map[*Run]string) {
	count := map[string]int{}
	for _, r := range runs {
		count[filepath.Base(r.Dir)]++
	}
	used := map[string]int{}
	for _, r := range runs {
		id := filepath.Base(r.Dir)
		if count[id] > 1 {
			if rel, err := filepath.Rel(filepath.Dir(roots[r]), r.Dir); err == nil {
				id = filepath.ToSlash(rel)
			} else {
				id = r.Dir
			}
		}
		if used[id]++; used[id] > 1 {
			id = fmt.Sprintf("%s#%d", id, used[id])
		}
		r.ID = id
	}
}

// readRun reads one run directory (through rundir.Run, the reader of its files), recording every problem in the
// run.
func readRun(dir string) *Run {
	r := &Run{Dir: dir}
	bad := func(format string, a ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, a...)) }
	tr, err := rundir.Open(dir)
	if err != nil {
		bad("%v", err)
		r.Reason = r.Problems[0]
		return r
	}
	if !tr.HasConfig() {
		bad("no %s", rundir.ConfigFile)
	} else if c, err := tr.Config(); err != nil {
		bad("%v", err)
	} else {
		r.Config, r.HasConfig, r.TotalSteps, r.Recipe = c, true, c.TotalSteps(), c.Flatten()
	}
	// Each reader returns what it could read with its error: a run with a damaged line still shows the rest.
	if r.Metrics, err = tr.Metrics(); errors.Is(err, fs.ErrNotExist) {
		bad("no %s", rundir.MetricsFile)
	} else if err != nil {
		bad("%v", err)
	}
	ds, err := rundir.Diagnostics[*diagrec.Record](tr)
	if err != nil {
		bad("%v", err)
	}
	for _, l := range ds {
		r.Diagnostics = append(r.Diagnostics, diagPoint(l))
	}
	r.Checkpoints = listCheckpoints(tr)
	if tr.HasModel(rundir.FinalDir) {
		r.FinalDir = filepath.Join(dir, rundir.FinalDir)
	}
	if tr.HasModel(rundir.InitDir) {
		r.InitDir = filepath.Join(dir, rundir.InitDir)
	}
	last := r.LastStep()
	switch {
	case !r.HasConfig:
		r.Reason = r.Problems[0]
	case len(r.Metrics) == 0:
		r.Reason = "no metrics logged"
	case last < r.TotalSteps:
		r.Reason = fmt.Sprintf("stopped at step %d of %d", last, r.TotalSteps)
	case r.FinalDir == "":
		r.Reason = fmt.Sprintf("no final model (%s/)", rundir.FinalDir)
	default:
		r.Complete = true
	}
	return r
}

// diagPoint is one line of diagnostics.jsonl as the report draws it: a line without per-class means gets them
// from its tensors.
func diagPoint(l rundir.DiagLine[*diagrec.Record]) DiagPoint {
	p := DiagPoint{Step: l.Step, Err: l.Error}
	if l.Diagnostics != nil {
		p.Record = *l.Diagnostics
		if len(p.Classes) == 0 && len(p.Weights) > 0 {
			p.Classes = diagrec.SummariseClasses(p.Weights)
		}
	}
	return p
}

// listCheckpoints returns the retained checkpoints of a run that hold a model, by step.
func listCheckpoints(tr *rundir.Run) []Checkpoint {
	steps, err := tr.Checkpoints()
	if err != nil {
		return nil
	}
	var out []Checkpoint
	for _, step := range steps {
		if sub := rundir.CheckpointSub(step); tr.HasModel(sub) {
			out = append(out, Checkpoint{Step: step, Dir: filepath.Join(tr.Dir(), sub)})
		}
	}
	return out
}

// summaryFile is a plan's summary.json (package summary).
type summaryFile struct {
	dir  string
	rows []summary.Row
}

func readSummary(dir string) (summaryFile, error) {
	s, err := summary.Read(filepath.Join(dir, summary.File))
	if err != nil {
		return summaryFile{}, err
	}
	return summaryFile{dir: dir, rows: s.Runs}, nil
}

// attachSummaries gives each run the summary row that names its directory (by its parent's and its own base
// name, below the summary: runs/X and runs-probes/X are different runs).
func attachSummaries(runs []*Run, sums []summaryFile) {
	last2 := func(p string) string { return filepath.Join(filepath.Base(filepath.Dir(p)), filepath.Base(p)) }
	for _, s := range sums {
		sabs, _ := filepath.Abs(s.dir)
		for i := range s.rows {
			row := &s.rows[i]
			for _, r := range runs {
				rabs, _ := filepath.Abs(r.Dir)
				if last2(rabs) == last2(row.Dir) && strings.HasPrefix(rabs, sabs+string(filepath.Separator)) {
					r.Summary = row
				}
			}
		}
	}
}

// Value is the canonical text of the run's value of a config key (override.Format: 1 and 1.0 are the same
// value and read the same), "" when the run has no such key. Arms are told apart by it.
func (r *Run) Value(key string) string {
	v, ok := r.Recipe[key]
	if !ok || v == nil {
		return ""
	}
	return override.Format(v)
}

// LastStep is the step of the last metrics line (0 without metrics).
func (r *Run) LastStep() int { return rundir.Summarise(r.Metrics).Step }

// Tokens is the number of training tokens consumed, from the last metrics line that records them.
func (r *Run) Tokens() int64 { return rundir.Summarise(r.Metrics).Tokens }

// TrainLoss is the last logged training loss (NaN if none).
func (r *Run) TrainLoss() float64 { return rundir.Summarise(r.Metrics).TrainLoss }

// ValLoss is the run's final validation loss: the score of the plan's summary.json row naming the run when there
// is one (eval.ScoreHeldOut: every token of the validation split, the number the plan's table shows), else the
// last val_loss of metrics.jsonl (the training-time monitor on the first train.eval_windows windows); NaN if
// neither.
func (r *Run) ValLoss() float64 {
	if r.ValLossScored() {
		return r.Summary.ValLoss
	}
	return rundir.Summarise(r.Metrics).ValLoss
}

// ValLossScored says whether ValLoss is the plan's score of the whole validation split (summary.json) rather
// than the training-time estimate of metrics.jsonl.
func (r *Run) ValLossScored() bool {
	return r.Summary != nil && r.Summary.ValLoss > 0 && !math.IsInf(r.Summary.ValLoss, 0)
}

// valLossSource says, for a caption or a note, where the final validation losses of runs come from: the
// whole-split score of a plan's summary.json, metrics.jsonl's training-time estimate, or (naming the counts)
// both. Runs without a finite loss are not counted.
func valLossSource(runs []*Run) string {
	var scored, estimated int
	for _, r := range runs {
		switch v := r.ValLoss(); {
		case math.IsNaN(v) || math.IsInf(v, 0):
		case r.ValLossScored():
			scored++
		default:
			estimated++
		}
	}
	const (
		whole    = "every token of the validation split, as the plan scored it in summary.json"
		estimate = "the training-time estimate, the last val_loss of metrics.jsonl on the first train.eval_windows windows of the validation split"
	)
	switch {
	case estimated == 0:
		return whole
	case scored == 0:
		return estimate + ", as no plan summary.json scored these runs on the whole split"
	}
	return fmt.Sprintf("%d run%s with %s, %d that no summary.json scored with %s; the two differ", scored, plural(scored),
		whole, estimated, estimate)
}

// TokensPerS is the training throughput over the logged intervals (rundir.Summarise; NaN if no line has one).
func (r *Run) TokensPerS() float64 { return rundir.Summarise(r.Metrics).TokensPerS }

// N is the model's non-embedding parameter count (arch.Config.NonEmbeddingParams): the N of the sweep tables
// and of L(N).
func (r *Run) N() int64 { return r.Config.Model.NonEmbeddingParams() }

// Seed is the run's seed.
func (r *Run) Seed() uint64 { return r.Config.Seed }

// LastDiag is the last diagnostics line with activation metrics, or nil.
func (r *Run) LastDiag() *DiagPoint {
	for i := len(r.Diagnostics) - 1; i >= 0; i-- {
		if r.Diagnostics[i].Activations != nil {
			return &r.Diagnostics[i]
		}
	}
	return nil
}

// State is "complete" or "incomplete: " and the reason.
func (r *Run) State() string {
	if r.Complete {
		return "complete"
	}
	return "incomplete: " + r.Reason
}
