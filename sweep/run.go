package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/internal/workers"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// Options control Execute.
type Options struct {
	Jobs       int           // runs trained at once (≤ 1 but AutoJobs: one at a time; AutoJobs: measured, see Execute)
	Index      int           // run only the run with this index (a job array task); −1: every run
	Cores      int           // cores shared by the jobs (0: runtime.NumCPU())
	StaleAfter time.Duration // lock heartbeat age after which another host's lock is stale (0: DefaultStaleAfter)
	Poll       time.Duration // how often an --index task retries a held lock (0: StaleAfter/10, at most 10 s)
	Log        io.Writer     // one line per run event (nil: silent); training logs go to each run's train.log

	// AfterStep, when set, is called after every training step of every run (tests interrupt sweeps with it).
	AfterStep func(r Run, step int)
	// Engine trains each run (nil: the Go engine, train.StartOrResume; train.TorchEngine: the PyTorch trainer).
	Engine train.Engine
}

// AutoJobs as Options.Jobs lets Execute choose: a packing probe (train.ProbePacking) on the largest selected
// run's model, recorded in DIR/packing.json and reused by later calls, decides between one run on all cores
// and one run per core.
const AutoJobs = -1

// Outcome is what Execute did with one run.
type Outcome string

// Outcomes of Execute.
const (
	Finished    Outcome = "finished"     // trained to the end by this call (started or resumed)
	AlreadyDone Outcome = "already done" // its final model was there: skipped
	Failed      Outcome = "failed"       // stopped with an error, recorded in its error.txt
	Interrupted Outcome = "interrupted"  // the context ended (or the lock was lost): stopped at a checkpoint
	Busy        Outcome = "busy"         // another live process holds its lock: left to it
	NotStarted  Outcome = "not started"  // the context ended before its turn
)

// Report is one run's outcome.
type Report struct {
	Run     Run
	Outcome Outcome
	Resumed bool          // continued from an earlier attempt's config.toml (and its newest checkpoint)
	Threads int           // train.threads it ran with
	Result  train.Result  // for Finished
	Err     error         // for Failed and Interrupted
	Elapsed time.Duration // wall-clock time of this call's attempt
}

var errLockLost = fmt.Errorf("lock lost: another process took the run over (%w)", train.ErrAbandoned)

// Execute runs the grid's runs in sweep directory dir: every run with o.Jobs in parallel, or only run o.Index.
// Each run's train.threads, when the grid leaves it 0, becomes max(1, cores / jobs) (cores / 1 for a single
// --index run). A run whose final model exists is skipped; one with a config.toml is resumed from its newest
// checkpoint (train.Resume); others start (train.Start). A run that fails gets DIR/runs/<id>/error.txt and
// the others go on; a failed run is retried by the next Execute. A run locked by a live process is left to it
// (with o.Index ≥ 0 Execute waits for the lock instead, so that a rescheduled array task takes over from an
// abandoned one). The error is non-nil when any run failed or was interrupted; the reports say which.
func Execute(ctx context.Context, g *Grid, dir string, o Options) ([]Report, error) {
	p, err := g.Expand()
	if err != nil {
		return nil, err
	}
	sel, err := p.Select(o.Index)
	if err != nil {
		return nil, err
	}
	if err := Prepare(dir, g, p); err != nil {
		return nil, err
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = runlock.DefaultStaleAfter
	}
	if o.Poll <= 0 {
		o.Poll = min(o.StaleAfter/10, 10*time.Second)
	}
	cores := o.Cores
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	var logMu sync.Mutex
	logf := func(format string, a ...any) {
		if o.Log == nil {
			return
		}
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(o.Log, format, a...)
	}
	jobs := o.Jobs
	if jobs == AutoJobs {
		jobs = 1
		if o.Index < 0 && len(sel) > 1 && cores > 1 {
			pk, err := packing(dir, sel, cores, o.Log)
			if err != nil {
				return nil, err
			}
			jobs = pk.Jobs
		}
	}
	jobs = max(1, min(jobs, len(sel)))
	threads := max(1, cores/jobs)
	logf("sweep %s: %d runs, running %d with %d in parallel, %d threads each\n", dir, len(p.Runs), len(sel), jobs, threads)

	reports := make([]Report, len(sel))
	started := workers.Each(ctx, len(sel), jobs, func(i int) { reports[i] = runOne(ctx, sel[i], dir, o, threads, logf) })
	for j := started; j < len(sel); j++ {
		reports[j] = Report{Run: sel[j], Outcome: NotStarted}
	}
	return reports, summarise(dir, reports)
}

// packing is Execute's AutoJobs choice (train.PackingFor, recorded in DIR/packing.json) for the selected
// run with the most parameters: the one packing helps least and that needs the most memory.
func packing(dir string, sel []Run, cores int, log io.Writer) (train.Packing, error) {
	big := sel[0]
	for _, r := range sel[1:] {
		if r.Params > big.Params {
			big = r
		}
	}
	pk, err := train.PackingFor(filepath.Join(dir, train.PackingFile), big.Config, cores, log)
	if err != nil {
		return pk, fmt.Errorf("sweep %s: %w", dir, err)
	}
	return pk, nil
}

// summarise is Execute's error: the failed and interrupted runs, or nil.
func summarise(dir string, reports []Report) error {
	var failed []string
	interrupted, notStarted := 0, 0
	for _, r := range reports {
		switch r.Outcome {
		case Failed:
			failed = append(failed, r.Run.ID)
		case Interrupted:
			interrupted++
		case NotStarted:
			notStarted++
		}
	}
	var msgs []string
	if len(failed) > 0 {
		msgs = append(msgs, fmt.Sprintf("%d of %d runs failed: %s (see %s)", len(failed), len(reports),
			strings.Join(failed, ", "), filepath.Join(dir, RunsDir, "<id>", ErrorFile)))
	}
	if interrupted+notStarted > 0 {
		msgs = append(msgs, fmt.Sprintf("interrupted: %d runs stopped at a checkpoint and %d not started; run the same command again to continue", interrupted, notStarted))
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// isDone reports whether the run in rd finished (train.Run.Done).
func isDone(rd string) bool {
	r, err := train.OpenRun(rd)
	return err == nil && r.Done()
}

// runOne takes run r's lock and trains it (start or resume), recording a failure in error.txt.
func runOne(ctx context.Context, r Run, dir string, o Options, threads int, logf func(string, ...any)) Report {
	rep := Report{Run: r}
	rd := RunDir(dir, r)
	if isDone(rd) {
		rep.Outcome = AlreadyDone
		logf("%s: already done\n", r.ID)
		return rep
	}
	fail := func(err error) Report {
		rep.Outcome, rep.Err = Failed, err
		host, _ := os.Hostname()
		msg := fmt.Sprintf("%s\nrun %s failed at %s on %s (pid %d)\n", err, r.ID, time.Now().UTC().Format(time.RFC3339), host, os.Getpid())
		if werr := atomicfile.Write(filepath.Join(rd, ErrorFile), []byte(msg)); werr != nil {
			logf("%s: cannot record the error: %v\n", r.ID, werr)
		}
		logf("%s: failed: %v\n", r.ID, err)
		return rep
	}
	if err := os.MkdirAll(rd, 0o755); err != nil {
		rep.Outcome, rep.Err = Failed, err
		logf("%s: failed: %v\n", r.ID, err)
		return rep
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lost := func() { cancel(errLockLost) }
	lockPath := filepath.Join(rd, runlock.FileName)
	var lock *runlock.Lock
	var err error
	if o.Index >= 0 {
		lock, err = runlock.Wait(ctx, lockPath, o.StaleAfter, o.Poll, lost, func() bool { return isDone(rd) },
			func(holder string) { logf("%s: waiting for the lock (%s)\n", r.ID, holder) })
	} else {
		lock, err = runlock.Acquire(lockPath, o.StaleAfter, lost)
	}
	var busy *runlock.BusyError
	switch {
	case errors.As(err, &busy):
		rep.Outcome = Busy
		logf("%s: running elsewhere (%s)\n", r.ID, busy.Holder)
		return rep
	case err != nil && ctx.Err() != nil:
		rep.Outcome = NotStarted
		return rep
	case err != nil:
		return fail(err)
	case lock == nil:
		rep.Outcome = AlreadyDone
		logf("%s: finished by another process\n", r.ID)
		return rep
	}
	defer lock.Release()
	if isDone(rd) { // finished by another process between the first check and the lock
		rep.Outcome = AlreadyDone
		return rep
	}
	if err := os.Remove(filepath.Join(rd, ErrorFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	lf, err := inputfile.OpenAppend(filepath.Join(rd, LogFile))
	if err != nil {
		return fail(err)
	}
	defer lf.Close()
	topts := train.Options{Log: lf, Diagnostics: diag.Training, LockHeld: true} // diagnostics.jsonl when the run's diagnostics_interval > 0
	if o.AfterStep != nil {
		topts.AfterStep = func(step int) { o.AfterStep(r, step) }
	}
	c := r.Config
	if c.Train.Threads == 0 {
		c.Train.Threads = threads // a new run's threads; a resumed one keeps its own (train.SameConfig ignores them)
	}
	start := time.Now()
	if _, serr := os.Stat(filepath.Join(rd, rundir.ConfigFile)); serr == nil { // for the log line only
		logf("%s: resuming\n", r.ID)
	} else {
		logf("%s: started (%d threads)\n", r.ID, c.Train.Threads)
	}
	eng := o.Engine
	if eng == nil {
		eng = train.GoEngine{}
	}
	rep.Result, err = eng.StartOrResume(runCtx, c, rd, topts)
	rep.Resumed, rep.Threads = rep.Result.Resumed, rep.Result.Threads
	rep.Elapsed = time.Since(start)
	switch {
	case err == nil:
		rep.Outcome = Finished
		logf("%s: finished in %s: train loss %.4f, val loss %.4f (training-time estimate)\n", r.ID, rep.Elapsed.Round(time.Second), rep.Result.Loss, rep.Result.ValLoss)
	case errors.Is(err, train.ErrInterrupted) || runCtx.Err() != nil:
		rep.Outcome, rep.Err = Interrupted, err
		if errors.Is(context.Cause(runCtx), errLockLost) {
			rep.Err = errLockLost
		}
		logf("%s: %v\n", r.ID, rep.Err)
	default:
		return fail(err)
	}
	return rep
}

// WriteReports prints what Execute did with each run: index, id, outcome, time and the training-time validation
// estimate (train.Result.ValLoss).
func WriteReports(w io.Writer, reps []Report) {
	if len(reps) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "index\tid\toutcome\ttime\tval loss (training estimate)")
	for _, r := range reps {
		t, loss := "", ""
		if r.Elapsed > 0 {
			t = r.Elapsed.Round(time.Millisecond).String()
		}
		if r.Outcome == Finished {
			loss = fmt.Sprintf("%.4f", r.Result.ValLoss)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Run.Index, r.Run.ID, r.Outcome, t, loss)
	}
	tw.Flush()
}
