package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/optim"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train/rundir"
)

// Options control a run's console output.
type Options struct {
	Log       io.Writer      // plain progress lines (nil: silent)
	Progress  bool           // draw a progress bar on Log instead of lines (for terminals)
	AfterStep func(step int) // called after each completed step (tests use it to interrupt a run)

	// Diagnostics, when set and train.diagnostics_interval > 0, is called at step 0 and every interval with the
	// model and probe tokens (the validation tokens, else the training tokens); its result is appended to
	// diagnostics.jsonl as a DiagLine {"diagnostics": ..., "step": N}. It lives outside this package (diag.Training,
	// whose record type is diagrec.Record) so that train does not depend on diag.
	Diagnostics func(step int, m *model.Model, probe []int32) (any, error)

	// LockHeld says the caller already holds the run directory's lock (runlock.FileName), as a sweep task does;
	// otherwise Start and Resume take it, so that two processes never train one directory at once.
	LockHeld bool
	// WaitHeld, when positive, makes a run whose lock another live process holds wait for it, polling this
	// often, instead of failing with ErrBusy: until the holder releases it, finishes the run, or stops
	// heartbeating (runlock.DefaultStaleAfter, whatever its host: a task requeued on another node takes over
	// its killed predecessor's run within 30 s). The wait ends with the context. Waiting, when set, is told
	// the holder once when the wait begins (else Log gets a line).
	WaitHeld time.Duration
	Waiting  func(holder string)
}

// Result summarises a finished run. Its ValLoss is the training-time estimate of metrics.jsonl's last val_loss
// (EvalLoss on the first train.eval_windows windows); the final model's validation loss, on every token of the
// split, is eval.ScoreHeldOut's.
type Result struct {
	Dir        string
	Steps      int
	Loss       float64 // mean training loss over the last logging interval
	ValLoss    float64 // NaN when there is no validation file
	TokensPerS float64 // over the logged intervals of metrics.jsonl (Summarise): evaluation and checkpoints excluded

	// Set by StartOrResume, also with an error: whether dir held the run already, and the threads it trains
	// with (c's for a new run, the earlier attempt's config.toml's for a resumed one).
	Resumed bool
	Threads int
}

// ErrInterrupted is returned when the context is cancelled: the run stopped after a step and saved a checkpoint.
var ErrInterrupted = errors.New("interrupted")

// ErrRunExists is returned by Start for a directory that already holds a run.
var ErrRunExists = errors.New("already holds a run")

// ErrAbandoned, as the cause of a run's context (context.WithCancelCause), stops the run without writing a
// checkpoint: its directory has another owner now (a sweep whose lock was taken over), and a checkpoint, whose
// pruning deletes older ones, could destroy the one the new owner resumes from. The run returns an error
// wrapping ErrInterrupted and ErrAbandoned.
var ErrAbandoned = errors.New("run abandoned: its directory has another owner")

// ErrConfigDiffers is wrapped by the error of SameConfig (and so of StartOrResume) for a run directory whose
// config.toml is not the config asked for.
var ErrConfigDiffers = errors.New("differs from the config asked for")

// ErrBusy is returned when another live process holds the run directory's lock.
var ErrBusy = errors.New("run directory in use")

// lock takes dir's run lock unless the caller holds it, and returns the context the run trains under (cancelled
// with ErrAbandoned if the lock is taken away) and the function that releases both.
func lock(ctx context.Context, dir string, o Options) (context.Context, func(), error) {
	if o.LockHeld {
		return ctx, func() {}, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	path, lost := filepath.Join(dir, runlock.FileName), func() { cancel(ErrAbandoned) }
	var l *runlock.Lock
	var err error
	if o.WaitHeld > 0 {
		l, err = runlock.Wait(ctx, path, runlock.DefaultStaleAfter, o.WaitHeld, lost, func() bool { return rundir.Finished(dir) }, func(holder string) {
			switch {
			case o.Waiting != nil:
				o.Waiting(holder)
			case o.Log != nil:
				fmt.Fprintf(o.Log, "%s: waiting for its lock (%s)\n", dir, holder)
			}
		})
		if err == nil && l == nil { // finished by the holder: only read back, which needs no lock
			return ctx, func() { cancel(nil) }, nil
		}
	} else {
		l, err = runlock.Acquire(path, runlock.DefaultStaleAfter, lost)
	}
	var busy *runlock.BusyError
	if errors.As(err, &busy) {
		cancel(nil)
		return nil, nil, fmt.Errorf("%s: %w: another process trains it (%s)", dir, ErrBusy, busy.Holder)
	}
	if err != nil {
		cancel(nil)
		return nil, nil, err
	}
	return ctx, func() { l.Release(); cancel(nil) }, nil
}

// Start begins a new run of c in dir, which must not hold a run already.
func Start(ctx context.Context, c recipe.Config, dir string, o Options) (Result, error) {
	if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err == nil {
		return Result{}, fmt.Errorf("%s %w: resume it or choose another directory", dir, ErrRunExists)
	}
	if err := Validate(c); err != nil {
		return Result{}, fmt.Errorf("run config: %w", err)
	}
	c, err := ResolvePrecision(c, dir, o.Log)
	if err != nil {
		return Result{}, err
	}
	b, err := c.Encode()
	if err != nil {
		return Result{}, err
	}
	r, ctx, release, err := newRunDir(ctx, c, dir, o)
	if err != nil {
		return Result{}, err
	}
	defer release()
	// Checked again under the lock: another process may have started a run here since the first check.
	if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err == nil {
		return Result{}, fmt.Errorf("%s %w: resume it or choose another directory", dir, ErrRunExists)
	}
	if err := r.initialise(); err != nil {
		return Result{}, err
	}
	if err := atomicfile.Write(filepath.Join(dir, rundir.ConfigFile), b); err != nil {
		return Result{}, err
	}
	return r.loop(ctx)
}

// newRunDir reads and checks c's data and builds its runner before the run directory dir is created (so that bad
// data leave nothing behind), then creates dir and takes its lock. release closes the runner's pool and unlocks.
func newRunDir(ctx context.Context, c recipe.Config, dir string, o Options) (*runner, context.Context, func(), error) {
	r, err := newRunner(c, dir, o)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.pool.Close()
		return nil, nil, nil, fmt.Errorf("run directory: %w", err)
	}
	ctx, unlock, err := lock(ctx, dir, o)
	if err != nil {
		r.pool.Close()
		return nil, nil, nil, err
	}
	return r, ctx, func() { unlock(); r.pool.Close() }, nil
}

// StartOrResume trains the run of c in dir, whatever dir holds: the one "start this run, or resume it" of
// every caller (a sweep's runs, a plan's arms, learning-rate trials, anchor cells). With no run in dir it
// starts one. Otherwise, under the run's lock, it checks once that the run is c (SameConfig: train.threads
// aside), so that an edited or differently planned directory is refused rather than resumed under its own
// config, and then resumes it; a run that already finished is only read back (its final model untouched).
// The lock is taken unless o.LockHeld.
func StartOrResume(ctx context.Context, c recipe.Config, dir string, o Options) (Result, error) {
	if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err != nil {
		res, err := Start(ctx, c, dir, o)
		res.Threads = c.Train.Threads
		if !errors.Is(err, ErrRunExists) {
			return res, err
		}
		// Another process started it between the check and Start's lock: resume it, as if it had been there.
	}
	ctx, unlock, err := lock(ctx, dir, o)
	if err != nil {
		return Result{Resumed: true}, err
	}
	defer unlock()
	o.LockHeld = true
	threads, moved, err := SameConfig(dir, c)
	if err != nil {
		return Result{Resumed: true}, err
	}
	if moved {
		// The run directory was moved with its data (a study's --out renamed): its config.toml's data paths
		// are rewritten to where the files are now, and its checkpoints follow (relocate).
		have, err := Load(filepath.Join(dir, rundir.ConfigFile), nil)
		if err == nil {
			err = relocate(dir, have, c)
		}
		if err != nil {
			return Result{Resumed: true}, err
		}
		if o.Log != nil {
			fmt.Fprintf(o.Log, "%s was moved with its data: resuming it with data.train = %s\n", dir, c.Data.Train)
		}
	}
	var res Result
	if rundir.Finished(dir) {
		res, err = finishedResult(dir, c.TotalSteps())
	} else {
		res, err = Resume(ctx, dir, o)
	}
	res.Resumed, res.Threads = true, threads
	return res, err
}

// SameConfig checks that the config.toml of an earlier attempt at a run in dir is want (train.threads aside,
// and data paths that name the same files under a directory that was moved since: CompareMoved), so that a
// sweep or a plan resumes the run it describes and not one edited by hand or planned with other settings
// (another precision, say). It returns the threads the earlier attempt used, and whether the run was moved.
func SameConfig(dir string, want recipe.Config) (threads int, moved bool, err error) {
	path := filepath.Join(dir, rundir.ConfigFile)
	have, err := Load(path, nil)
	if err != nil {
		return 0, false, err
	}
	if moved, err = CompareMoved(have, want, dir); err != nil {
		return 0, false, fmt.Errorf("%s %w", path, err)
	}
	return have.Train.Threads, moved, nil
}

// Resume continues the run in dir from its newest checkpoint (or from the start if it has none), producing
// exactly what the uninterrupted run would have.
func Resume(ctx context.Context, dir string, o Options) (Result, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Result{}, fmt.Errorf("resume %s: not a run directory", dir)
	}
	ctx, unlock, err := lock(ctx, dir, o)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	c, err := Load(filepath.Join(dir, rundir.ConfigFile), nil)
	if err != nil {
		return Result{}, fmt.Errorf("resume %s: %w", dir, err)
	}
	r, err := newRunner(c, dir, o)
	if err != nil {
		return Result{}, err
	}
	defer r.pool.Close()
	steps, err := listCheckpoints(dir)
	if err != nil {
		return Result{}, fmt.Errorf("resume %s: %w", dir, err)
	}
	if len(steps) == 0 {
		if err := r.initialise(); err != nil {
			return Result{}, err
		}
	} else {
		step := steps[len(steps)-1]
		ck := filepath.Join(dir, checkpointsDir, checkpointName(step))
		if total := c.TotalSteps(); step > total {
			return Result{}, fmt.Errorf("resume %s: checkpoint %s is past the run's %d steps (%s edited to fewer steps, or a checkpoint of another run): restore %s, or move the run directory away to start it afresh",
				dir, ck, total, rundir.ConfigFile, rundir.ConfigFile)
		}
		st, err := loadCheckpoint(ck, step, r.m, r.opt, r.logf)
		if err != nil {
			return Result{}, err
		}
		legacy, err := legacyFingerprint(c)
		if err != nil {
			return Result{}, err
		}
		if st.Seed != c.Seed || st.Config != "" && st.Config != r.st.Config && st.Config != legacy {
			return Result{}, fmt.Errorf("resume %s: %s is not the config its checkpoint %s was taken under (edited by hand?); "+
				"restore it, or move the run directory away to start it afresh. A run's length is fixed when it starts: to train "+
				"longer, start a new run whose init is this run's checkpoint, or a WSD continuation from it: %w", dir, filepath.Join(dir, rundir.ConfigFile), ck, ErrConfigDiffers)
		}
		st.Config = r.st.Config
		r.st = st
		r.lastCk = ck
		if err := r.sampler(st.Epoch, st.Pos); err != nil {
			return Result{}, fmt.Errorf("resume %s: %w", filepath.Join(ck, stateFile), err)
		}
		r.logf("resuming %s from %s\n", dir, ck)
	}
	if err := r.checkLength(rundir.MetricsFile, r.st.MetricsBytes); err != nil {
		return Result{}, err
	}
	if err := r.checkLength(rundir.DiagFile, r.st.DiagBytes); err != nil {
		return Result{}, err
	}
	if err := truncateMetrics(filepath.Join(dir, rundir.MetricsFile), r.st.MetricsBytes); err != nil {
		return Result{}, err
	}
	if err := truncateMetrics(filepath.Join(dir, rundir.DiagFile), r.st.DiagBytes); err != nil {
		return Result{}, err
	}
	return r.loop(ctx)
}

// checkLength checks the length the resumed checkpoint's state.json records for the run's file name: the file
// may only have grown since (it is cut back to that length), and the length must end a line. A state.json
// that does not belong to the run is refused before anything is changed; before, a length beyond the file's
// end padded it with zero bytes.
func (r *runner) checkLength(name string, n int64) error {
	if r.lastCk == "" {
		return nil
	}
	path := filepath.Join(r.dir, name)
	state := filepath.Join(r.lastCk, stateFile)
	st, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) && n == 0 {
			return nil
		}
		return fmt.Errorf("resume %s: %s: %w", state, name, err)
	}
	if n > st.Size() {
		return fmt.Errorf("resume %s: says %s had %d bytes, it has %d", state, name, n, st.Size())
	}
	if n > 0 {
		f, err := inputfile.Open(path, inputfile.NoLimit)
		if err != nil {
			return fmt.Errorf("resume %s: %w", state, err)
		}
		var last [1]byte
		_, err = f.ReadAt(last[:], n-1)
		f.Close()
		if err != nil || last[0] != '\n' {
			return fmt.Errorf("resume %s: its length of %s, %d bytes, is not at a line end", state, name, n)
		}
	}
	return nil
}

// truncateMetrics drops the lines of a run record (metrics.jsonl, diagnostics.jsonl) written after the checkpoint
// being resumed (n = 0: all of them, for a run that starts). A record that is not a regular file (a FIFO, a
// device) is refused naming it.
func truncateMetrics(path string, n int64) error {
	st, err := os.Stat(path)
	if err != nil && os.IsNotExist(err) && n == 0 {
		return nil
	}
	if err == nil {
		err = inputfile.Check(path, st, inputfile.NoLimit)
	}
	if err == nil {
		err = os.Truncate(path, n)
	}
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	return nil
}

// runner holds a run's state.
type runner struct {
	c      recipe.Config
	dir    string
	o      Options
	pool   *kernel.Pool
	m      *model.Model
	opt    *optim.AdamW
	sched  recipe.Schedule
	train  []int32
	val    []int32
	samp   *Sampler
	st     State
	lastCk string
}

func newRunner(c recipe.Config, dir string, o Options) (*runner, error) {
	r := &runner{c: c, dir: dir, o: o}
	mc := c.Model.Config
	var err error
	// The data files are the ones their prepared directory's stats.json names (a stats.json of an earlier
	// build: a note, once).
	noted := false
	for _, f := range []struct{ key, path string }{{"data.train", c.Data.Train}, {"data.val", c.Data.Val}} {
		if f.path == "" {
			continue
		}
		if err := data.VerifyFile(f.path); errors.Is(err, data.ErrNoSums) {
			if !noted {
				r.logf("note: %v\n", err)
				noted = true
			}
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	if r.train, err = data.ReadTokens(c.Data.Train, mc.Vocab); err != nil {
		return nil, fmt.Errorf("data.train: %w", err)
	}
	if c.Data.Val != "" {
		if r.val, err = data.ReadTokens(c.Data.Val, mc.Vocab); err != nil {
			return nil, fmt.Errorf("data.val: %w", err)
		}
		if data.NumWindows(len(r.val), mc.SeqLen) == 0 {
			return nil, fmt.Errorf("data.val %s: %d tokens, need at least %d for one window", c.Data.Val, len(r.val), mc.SeqLen+1)
		}
	}
	// Model, gradients, activations and AdamW's two moments must fit in memory: a context length or width that
	// cannot is an error naming them, not an out-of-memory crash.
	if err := model.CheckMemory(mc, c.Train.BatchSize, 8*float64(mc.NumParams())); err != nil {
		return nil, fmt.Errorf("run config: %w", err)
	}
	if c.Train.Precision == PrecisionAuto {
		return nil, fmt.Errorf("train.precision = \"auto\" in %s: start the run with it (train.Start measures and records the choice)", dir)
	}
	if err := kernel.ForcedErr(); err != nil {
		return nil, err
	}
	prec, err := nativePrecision(c.Train.Precision)
	if err != nil {
		return nil, fmt.Errorf("train.%w", err)
	}
	r.pool = kernel.NewPool(c.Train.Threads)
	if r.m, err = model.New(mc, c.Train.BatchSize, r.pool); err != nil {
		r.pool.Close()
		return nil, err
	}
	r.m.SetPrecision(prec)
	if r.opt, err = optim.NewAdamW(c.Optimizer, r.m.Specs, r.pool); err != nil {
		r.pool.Close()
		return nil, err
	}
	r.sched = c.Schedule
	r.sched.Total = c.TotalSteps()
	r.st.Seed = c.Seed
	if r.st.Config, err = Fingerprint(c, r.train, r.val); err != nil {
		r.pool.Close()
		return nil, err
	}
	if err := r.sampler(0, 0); err != nil {
		r.pool.Close()
		return nil, err
	}
	return r, nil
}

func (r *runner) sampler(epoch, pos int) error {
	s, err := NewSampler(r.train, r.c.Model.SeqLen, r.c.Seed, epoch, pos)
	if err != nil {
		return fmt.Errorf("data.train %s: %w", r.c.Data.Train, err)
	}
	r.samp = s
	return nil
}

// initialise draws the initial weights and records their stds (docs/definitions.md §2: log the std actually drawn).
func (r *runner) initialise() error {
	stds, err := gammainit.Apply(r.m, r.c.Init, r.c.Seed)
	if err != nil {
		return err
	}
	opt := r.c.Optimizer
	b, _ := json.MarshalIndent(gammainit.Record{Recipe: r.c.Init, Seed: r.c.Seed, Optimizer: &opt, Tensors: stds}, "", "  ")
	if err := atomicfile.Write(filepath.Join(r.dir, rundir.InitFile), append(b, '\n')); err != nil {
		return err
	}
	if err := r.saveInit(); err != nil {
		return err
	}
	if err := truncateMetrics(filepath.Join(r.dir, rundir.DiagFile), 0); err != nil {
		return err
	}
	return truncateMetrics(filepath.Join(r.dir, rundir.MetricsFile), 0)
}

// saveInit writes the step-0 weights to DIR/init/, whole or not at all (a temporary directory renamed).
func (r *runner) saveInit() error {
	dst, tmp := filepath.Join(r.dir, rundir.InitDir), filepath.Join(r.dir, ".tmp-"+rundir.InitDir)
	os.RemoveAll(tmp)
	if err := r.m.Save(tmp, initRecord(r.c)); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("step-0 weights: %w", err)
	}
	os.RemoveAll(dst)
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("step-0 weights: %w", err)
	}
	return nil
}

// diagnose appends one diagnostics line when diagnostics are on and due at the current step.
func (r *runner) diagnose() error {
	every := r.c.Train.DiagnosticsEvery
	if r.o.Diagnostics == nil || every == 0 || r.st.Step%every != 0 {
		return nil
	}
	probe := r.val
	if probe == nil {
		probe = r.train
	}
	v, err := r.o.Diagnostics(r.st.Step, r.m, probe)
	if err != nil {
		return fmt.Errorf("diagnostics at step %d: %w", r.st.Step, err)
	}
	b, err := json.Marshal(rundir.DiagLine[any]{Step: r.st.Step, Diagnostics: v})
	if err != nil { // e.g. a non-finite metric of a diverging model: record it rather than stop the run
		b, _ = json.Marshal(rundir.DiagLine[any]{Step: r.st.Step, Error: err.Error()})
	}
	path := filepath.Join(r.dir, rundir.DiagFile)
	f, err := inputfile.OpenAppend(path)
	if err != nil {
		return fmt.Errorf("diagnostics: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("diagnostics: %w", err)
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	r.st.DiagBytes = pos
	return err
}

func (r *runner) logf(format string, a ...any) {
	if r.o.Log != nil && !r.o.Progress {
		fmt.Fprintf(r.o.Log, format, a...)
	}
}

// evalVal is the validation loss (NaN without a validation file).
func (r *runner) evalVal() (float64, error) {
	if r.val == nil {
		return math.NaN(), nil
	}
	l, _, err := EvalLoss(r.m, r.val, r.c.Train.EvalWindows)
	return l, err
}

// loop runs steps r.st.Step .. total, as llm.c's training loop reads: the learning rate, one step, the counts,
// the metrics line when due, diagnostics, and the snapshot and checkpoint when due; then the final model.
func (r *runner) loop(ctx context.Context) (Result, error) {
	c := r.c
	total := c.TotalSteps()
	in, tg := make([]int32, c.Train.BatchSize*c.Model.SeqLen), make([]int32, c.Train.BatchSize*c.Model.SeqLen)
	lg, err := r.openMetrics(total)
	if err != nil {
		return Result{}, err
	}
	defer lg.f.Close()
	startStep := r.st.Step
	if err := r.begin(lg, total); err != nil {
		return Result{}, err
	}
	lg.intervalStart = time.Now() // the first interval's throughput leaves out the step-0 diagnostics and evaluation
	for r.st.Step < total {
		step := r.st.Step
		lr := r.sched.LR(step)
		loss, gn, err := r.trainStep(step, lr, in, tg)
		if err != nil {
			return Result{}, err
		}
		if err := r.abandoned(ctx); err != nil { // before this step writes metrics, diagnostics or a checkpoint
			return Result{}, err
		}
		r.advance(lg, loss)
		done := r.st.Step == total
		if err := r.logStep(lg, total, lr, gn, done); err != nil {
			return Result{}, err
		}
		if err := r.diagnose(); err != nil {
			return Result{}, err
		}
		if r.o.AfterStep != nil {
			r.o.AfterStep(r.st.Step)
		}
		if err := r.abandoned(ctx); err != nil {
			return Result{}, err
		}
		if err := r.save(ctx, lg, done); err != nil {
			return Result{}, err
		}
	}
	return r.finish(startStep, total, lg)
}

// metricsLog is a run's metrics.jsonl open for appending, its progress bar (nil: none) and the logging
// interval the next line averages over.
type metricsLog struct {
	f   *os.File
	enc *json.Encoder
	bar *progressbar.ProgressBar
	// intervalStart and intervalTokens measure the throughput since the last line; lastLoss and lastVal are
	// the last logged losses (NaN: none yet), the result of a run this call trained.
	intervalStart     time.Time
	intervalTokens    int64
	lastLoss, lastVal float64
}

// openMetrics opens the run's metrics.jsonl for appending and, with Options.Progress and a Log, a progress bar
// of total steps at the run's step.
func (r *runner) openMetrics(total int) (*metricsLog, error) {
	mf, err := inputfile.OpenAppend(filepath.Join(r.dir, rundir.MetricsFile))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	lg := &metricsLog{f: mf, enc: json.NewEncoder(mf), intervalStart: time.Now(), lastLoss: math.NaN(), lastVal: math.NaN()}
	if r.o.Progress && r.o.Log != nil {
		lg.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(r.o.Log), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30), progressbar.OptionSetDescription("train"),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(r.o.Log) }))
		lg.bar.Set(r.st.Step)
	}
	return lg, nil
}

// write appends one metrics line and records the file's length in the state (the checkpoint's MetricsBytes).
func (r *runner) write(lg *metricsLog, m rundir.Metrics) error {
	if err := lg.enc.Encode(m); err != nil {
		return fmt.Errorf("metrics %s: %w", lg.f.Name(), err)
	}
	pos, err := lg.f.Seek(0, io.SeekCurrent)
	r.st.MetricsBytes = pos
	return err
}

// begin opens a segment of the run's record when steps remain and, at step 0, takes the initial diagnostics
// and logs the initial validation loss.
func (r *runner) begin(lg *metricsLog, total int) error {
	if r.st.Step < total {
		if err := r.recordSegment(); err != nil {
			return err
		}
	}
	if r.st.Step != 0 {
		return nil
	}
	if err := r.diagnose(); err != nil {
		return err
	}
	if r.c.Train.EvalInterval <= 0 || r.val == nil {
		return nil
	}
	v, err := r.evalVal()
	if err != nil {
		return err
	}
	if err := r.write(lg, rundir.Metrics{Step: 0, ValLoss: finite(v)}); err != nil {
		return err
	}
	r.logf("step %6d  val loss %.4f\n", 0, v)
	return nil
}

// trainStep is one optimisation step at learning rate lr: the next batch into in and tg, forward, backward,
// the gradient norm, and the clipped AdamW update; a non-finite loss or gradient norm is an error naming the
// last good checkpoint, or with train.skip_nonfinite a skipped batch (counted, not applied).
func (r *runner) trainStep(step int, lr float64, in, tg []int32) (loss, gn float64, err error) {
	c := r.c
	r.samp.Next(in, tg)
	maskTargets(c, tg)
	if loss, err = r.m.Forward(in, tg); err != nil {
		return 0, 0, fmt.Errorf("step %d: %w", step, err)
	}
	r.m.ZeroGrads()
	r.m.Backward()
	gn = r.opt.GradNorm(r.m.Grads.Flat)
	if math.IsNaN(loss) || math.IsInf(loss, 0) || math.IsNaN(gn) || math.IsInf(gn, 0) {
		if !c.Train.SkipNonFinite {
			last := r.lastCk
			if last == "" {
				last = "none (set train.skip_nonfinite = true to skip such batches)"
			}
			return 0, 0, fmt.Errorf("step %d: non-finite loss %v or gradient norm %v; last good checkpoint: %s", step, loss, gn, last)
		}
		r.st.Skipped++
		return loss, gn, nil
	}
	r.opt.Update(r.m.Params.Flat, r.m.Grads.Flat, lr, optim.ClipScale(gn, c.Train.GradClip))
	r.m.BalanceRouters() // MoE selection bias (router_bias_update_rate > 0), from this step's expert loads
	r.st.LossSum += loss
	r.st.LossCount++
	return loss, gn, nil
}

// abandoned stops the run, writing nothing more, once its directory has another owner (ErrAbandoned).
func (r *runner) abandoned(ctx context.Context) error {
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrAbandoned) {
		return fmt.Errorf("%w at step %d, nothing more written: %w", ErrInterrupted, r.st.Step, context.Cause(ctx))
	}
	return nil
}

// advance counts the step just taken: the step, its tokens, the sampler's position and the optimiser's step
// in the state, and the progress bar.
func (r *runner) advance(lg *metricsLog, loss float64) {
	tokens := int64(r.c.Train.BatchSize * r.c.Model.SeqLen)
	r.st.Step++
	r.st.Tokens += tokens
	r.st.Epoch, r.st.Pos = r.samp.Epoch, r.samp.Pos
	r.st.AdamStep = r.opt.Step
	lg.intervalTokens += tokens
	if lg.bar != nil {
		lg.bar.Describe(fmt.Sprintf("loss %.4f", loss))
		lg.bar.Add(1)
	}
}

// logStep writes the metrics line of the step just taken when it is due (every train.log_interval steps, an
// evaluation step, the last step): the mean training loss since the last line, the learning rate lr, the
// gradient norm gn, the throughput and, at evaluation steps, the validation loss.
func (r *runner) logStep(lg *metricsLog, total int, lr, gn float64, done bool) error {
	c := r.c
	evalNow := r.val != nil && ((c.Train.EvalInterval > 0 && r.st.Step%c.Train.EvalInterval == 0) || done)
	if r.st.Step%c.Train.LogInterval != 0 && !done && !evalNow {
		return nil
	}
	mt := rundir.Metrics{Step: r.st.Step, Tokens: r.st.Tokens, LR: lr, GradNorm: gn, Skipped: r.st.Skipped}
	if math.IsNaN(gn) || math.IsInf(gn, 0) {
		mt.GradNorm = 0 // a skipped batch (skip_nonfinite): JSON has no NaN; Skipped counts it
	}
	if r.st.LossCount > 0 {
		mt.Loss = r.st.LossSum / float64(r.st.LossCount)
		lg.lastLoss = mt.Loss
	}
	mt.TokensPerS = float64(lg.intervalTokens) / time.Since(lg.intervalStart).Seconds()
	if evalNow {
		v, err := r.evalVal()
		if err != nil {
			return err
		}
		mt.ValLoss, lg.lastVal = finite(v), v
	}
	if err := r.write(lg, mt); err != nil {
		return err
	}
	line := fmt.Sprintf("step %6d/%d  loss %.4f  lr %.2e  grad norm %.3f  %.0f tok/s", mt.Step, total, mt.Loss, lr, gn, mt.TokensPerS)
	if evalNow {
		line += fmt.Sprintf("  val loss %.4f", lg.lastVal)
	}
	r.logf("%s\n", line)
	r.st.LossSum, r.st.LossCount = 0, 0
	lg.intervalStart, lg.intervalTokens = time.Now(), 0
	return nil
}

// save writes the step's snapshot (train.snapshot_steps) and checkpoint (every train.checkpoint_interval
// steps, the last step, or on interruption, when it then stops the run with ErrInterrupted), the metrics made
// durable first.
func (r *runner) save(ctx context.Context, lg *metricsLog, done bool) error {
	c := r.c
	if slices.Contains(c.Train.SnapshotSteps, r.st.Step) {
		// Before the step's regular checkpoint: a crash between the two resumes from an earlier
		// checkpoint and writes this snapshot again, identically.
		if err := lg.f.Sync(); err != nil {
			return fmt.Errorf("metrics %s: %w", lg.f.Name(), err)
		}
		if _, err := saveState(filepath.Join(r.dir, snapshotsDir), r.m, r.opt, r.st, initRecord(c), 0); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	interrupted := ctx.Err() != nil
	if done || interrupted || (c.Train.CheckpointEvery > 0 && r.st.Step%c.Train.CheckpointEvery == 0) {
		// The checkpoint records the metrics' length; make those bytes durable first, so that after a
		// machine crash the checkpoint never claims more than the file holds.
		if err := lg.f.Sync(); err != nil {
			return fmt.Errorf("metrics %s: %w", lg.f.Name(), err)
		}
		ck, err := saveCheckpoint(r.dir, r.m, r.opt, r.st, initRecord(c), c.Train.KeepCheckpoints)
		if err != nil {
			return err
		}
		r.lastCk = ck
	}
	if interrupted && !done {
		return fmt.Errorf("%w at step %d: checkpoint %s written; resume %s to continue", ErrInterrupted, r.st.Step, r.lastCk, r.dir)
	}
	return nil
}

// finish writes the final model (the tokenizer first: model.Save writes config.json last, and its presence is
// what tells a finished run, sweep's done marker, so final/ must be whole by then) and returns the run's result.
func (r *runner) finish(startStep, total int, lg *metricsLog) (Result, error) {
	c := r.c
	final := filepath.Join(r.dir, rundir.FinalDir)
	if err := os.MkdirAll(final, 0o755); err != nil {
		return Result{}, fmt.Errorf("final model: %w", err)
	}
	if err := copyTokenizer(c.Data.Train, final, c.Model.Config.Vocab); err != nil {
		return Result{}, err
	}
	if err := r.m.Save(final, initRecord(c)); err != nil {
		return Result{}, err
	}
	// The throughput is metrics.jsonl's (Summarise, its one definition), over every logged interval of the run,
	// those of earlier attempts included.
	res, err := finishedResult(r.dir, r.st.Step)
	if err != nil {
		return Result{}, err
	}
	if startStep < total {
		// The losses as computed: a non-finite validation loss is left out of metrics.jsonl but not of the result.
		res.Loss, res.ValLoss = lg.lastLoss, lg.lastVal
	}
	return res, nil
}

// finishedResult is the Result of a finished run read from its metrics.jsonl (rundir.Summarise): the last logged
// training and validation losses and the training throughput over the logged intervals (0 when no line has one).
func finishedResult(dir string, steps int) (Result, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return Result{}, fmt.Errorf("finished run: %w", err)
	}
	s, err := r.Summary()
	if err != nil {
		return Result{}, fmt.Errorf("finished run: %w", err)
	}
	// The loop writes a metrics line at its last step: a record that ends before it was cut after the run
	// finished (a truncated copy, a branch's record cut by hand), and its losses are not the run's.
	if s.Step != steps {
		return Result{}, fmt.Errorf("finished run %s: %s ends at step %d, the run has %d steps (the file was cut after the run finished): restore it, or move the run directory away to train the run again",
			dir, r.Path(rundir.MetricsFile), s.Step, steps)
	}
	res := Result{Dir: dir, Steps: steps, Loss: s.TrainLoss, ValLoss: s.ValLoss}
	if !math.IsNaN(s.TokensPerS) {
		res.TokensPerS = s.TokensPerS
	}
	return res, nil
}

// finite is &v, or nil for NaN and ±Inf: a metrics line leaves out a non-finite validation loss (diverged
// weights under skip_nonfinite), since JSON has no NaN; the log line still prints it.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// initRecord is what a model saved from a run of c records in its config.json as smallinit_init: the recipe
// and seed of the run.
func initRecord(c recipe.Config) gammainit.Record {
	return gammainit.Record{Recipe: c.Init, Seed: c.Seed}
}

// TokenizerFile is the tokenizer a prepared data directory holds beside its token files; a run copies it into
// its final model directory so that text-level tools (eval-tasks, generate) find it there.
const TokenizerFile = "tokenizer.json"

// copyTokenizer copies tokenizer.json from the training file's directory into dir, if there is one: the one
// stats.json's sum names (data.VerifyFile), and a tokenizer whose ids fit the model's vocabulary of vocab.
func copyTokenizer(trainFile, dir string, vocab int) error {
	src := filepath.Join(filepath.Dir(trainFile), TokenizerFile)
	b, err := inputfile.ReadFile(src, inputfile.MaxTokenizer)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("copy tokenizer: %w", err)
	}
	if err := data.VerifyFile(src); err != nil && !errors.Is(err, data.ErrNoSums) {
		return fmt.Errorf("copy tokenizer: %w", err)
	}
	tok, err := tokenizer.Load(src)
	if err != nil {
		return fmt.Errorf("copy tokenizer: %w", err)
	}
	if tok.VocabSize() > vocab {
		return fmt.Errorf("copy tokenizer %s: %d tokens, more than the model's vocabulary of %d (model.vocab_size): it is another corpus's tokenizer", src, tok.VocabSize(), vocab)
	}
	return atomicfile.Write(filepath.Join(dir, TokenizerFile), b)
}
