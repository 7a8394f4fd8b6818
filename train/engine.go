package train

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// Engine trains the run of a config in a run directory, whatever the directory holds (StartOrResume's
// contract): a new directory starts the run, an interrupted one resumes, a finished one is read back. Both
// engines write the same run-directory layout, so that plans, verdicts and reports read a run without asking
// which engine trained it; EngineOf says which one did.
type Engine interface {
	Name() string
	StartOrResume(ctx context.Context, c recipe.Config, dir string, o Options) (Result, error)
	// TrainsOn names the device the engine trains on, for the records whose measurements hold only there (a
	// budget's sizing: a GPU trains tens of times faster than a CPU, one CPU faster than another): the kind
	// of device and its model, not an index ("cuda: NVIDIA H100 80GB HBM3", "cpu: AMD EPYC …").
	TrainsOn() string
}

// Engine names, as EngineOf returns them and `--engine` takes them.
const (
	EngineGo    = "go"
	EngineTorch = "torch"
)

// TorchRecordFile is the file the PyTorch trainer writes in its run directories (its settings, the torch
// version and "engine": "torch"); a Go run has none.
const TorchRecordFile = "pytorch.json"

// EngineOf is the engine that trained (or is training) the run in dir: EngineTorch when it holds the PyTorch
// trainer's record, else EngineGo.
func EngineOf(dir string) string {
	if rundir.IsRegular(filepath.Join(dir, TorchRecordFile)) {
		return EngineTorch
	}
	return EngineGo
}

// GoEngine is this package's trainer (StartOrResume).
type GoEngine struct{}

// Name is EngineGo.
func (GoEngine) Name() string { return EngineGo }

// TrainsOn is this machine's CPU (kernel.CPUModel: its model and the kernel path the Go engine runs).
func (GoEngine) TrainsOn() string { return "cpu: " + kernel.CPUModel() }

// StartOrResume is StartOrResume, refusing a run directory the PyTorch engine started and has not finished
// (its checkpoints carry the PyTorch trainer's settings in pytorch.json, which this trainer would ignore).
func (GoEngine) StartOrResume(ctx context.Context, c recipe.Config, dir string, o Options) (Result, error) {
	if EngineOf(dir) == EngineTorch && !rundir.Finished(dir) {
		return Result{Resumed: true}, fmt.Errorf("%s: started by the PyTorch engine: resume it with --engine torch", dir)
	}
	return StartOrResume(ctx, c, dir, o)
}

// TorchEngine trains through the PyTorch package's trainer (`python -m smallinit_torch train`), one process per
// run, on Device ("auto", "cpu", "cuda", "cuda:N"). The run's model directory (config.json from the config's
// [model] and the step-0 weights drawn as the Go engine draws them: drawInit) and run config (c encoded, Go's
// keys) are written into the run directory (TorchInputDir), so that the run and its inputs move together.
//
// Only the trainer trains: a run is finished when the trainer exits 0 having written final/ (anything else is
// an error naming the run, the trainer's exit and its last log lines), and StartOrResume then reads it back
// without training. One writer per run: the run's lock (runlock.FileName) is held here (or by the caller,
// Options.LockHeld) for the trainer's whole life, and the trainer, started with --lock-held, checks that the
// lock names its parent and stops the moment it does not; on Linux it is killed when its parent dies (a kill
// -9 of the study leaves no orphan writing into the run). Cancelling ctx sends the process SIGTERM: it
// checkpoints and stops, and the call returns ErrInterrupted. Preflight checks the interpreter and the device
// before anything is written.
type TorchEngine struct {
	Python     string // interpreter ("" = the first of TorchPythons that imports torch; Preflight picks it)
	PythonPath string // prepended to PYTHONPATH ("" = the package must be importable as installed)
	Device     string // the trainer's --device ("" = auto)
	Step       string // the trainer's --step ("" = its default, fast)
	// Batch, when set, trains the new runs of one shape that start together in one process (TorchBatcher);
	// nil: one process per run.
	Batch *TorchBatcher
	// Probe is what Preflight found (it sets it on the engine it returns; zero before): the device TrainsOn names.
	Probe TorchProbe
}

// TorchInputDir is the subdirectory of a PyTorch-engine run that holds its model directory and run config.
const TorchInputDir = "torch-input"

// torchLogTail is how many of the trainer's last output lines an error quotes.
const torchLogTail = 8

// Name is EngineTorch.
func (TorchEngine) Name() string { return EngineTorch }

// TrainsOn is the device Preflight found, by kind and name: "cuda: NVIDIA H100 80GB HBM3" (any index of one
// model), or on the CPU this machine's (kernel.CPUModel; torch names a CPU only by its architecture). An engine
// not preflighted says so, with its --device.
func (e TorchEngine) TrainsOn() string {
	switch kind, _, _ := strings.Cut(e.Probe.Device, ":"); kind {
	case "":
		return fmt.Sprintf("--device %s (not preflighted)", cmp.Or(e.Device, "auto"))
	case "cpu":
		return "cpu: " + kernel.CPUModel()
	default:
		return kind + ": " + e.Probe.DeviceName
	}
}

// StartOrResume trains the run of c in dir through the PyTorch trainer, or reads back a finished run.
func (e TorchEngine) StartOrResume(ctx context.Context, c recipe.Config, dir string, o Options) (Result, error) {
	started := rundir.IsRegular(filepath.Join(dir, rundir.ConfigFile))
	res := Result{Resumed: started, Threads: c.Train.Threads}
	if started && EngineOf(dir) != EngineTorch {
		return res, fmt.Errorf("%s: started by the Go engine: resume it with --engine go", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("run directory: %w", err)
	}
	ctx, unlock, err := lock(ctx, dir, o)
	if err != nil {
		return res, err
	}
	defer unlock()
	started = rundir.IsRegular(filepath.Join(dir, rundir.ConfigFile)) // again under the lock
	res.Resumed = started
	if started {
		threads, moved, err := SameConfig(dir, c)
		if err != nil {
			return res, err
		}
		if moved {
			return res, fmt.Errorf("%s: moved with its data since it started: the PyTorch engine resumes a run only where it started", dir)
		}
		res.Threads = threads
	}
	if !rundir.Finished(dir) {
		if err := e.trainRun(ctx, c, dir, started, o.Log); err != nil {
			return res, err
		}
	}
	fr, err := finishedResult(dir, c.TotalSteps())
	if err != nil {
		return res, fmt.Errorf("%s: %w", dir, err)
	}
	fr.Resumed, fr.Threads = res.Resumed, res.Threads
	return fr, nil
}

// trainRun trains the run of c in dir to its end: alone, or (a new run, with Batch) in a batch of runs of its
// shape.
func (e TorchEngine) trainRun(ctx context.Context, c recipe.Config, dir string, started bool, log io.Writer) error {
	if started {
		return e.train(ctx, append(e.flags("train"), "--resume", dir), dir, log)
	}
	md, rc, err := writeInputs(c, dir)
	if err != nil {
		return err
	}
	if e.Batch != nil {
		if e.Step != "" && e.Step != "fast" {
			return fmt.Errorf("%s: --step %s: a batch of runs trains the fast step only", dir, e.Step)
		}
		return e.Batch.join(ctx, e, c, []string{"--run", md, rc, dir}, dir, log)
	}
	return e.train(ctx, append(e.flags("train"), "--model", md, "--config", rc, "--out", dir), dir, log)
}

// flags are the trainer's arguments for its command cmd (train, train-batch) before the runs': quiet, the lock
// held here, the device, and (train) the step.
func (e TorchEngine) flags(cmd string) []string {
	args := []string{"-m", "smallinit_torch", cmd, "--quiet", "--lock-held"}
	if e.Device != "" {
		args = append(args, "--device", e.Device)
	}
	if e.Step != "" && cmd == "train" {
		args = append(args, "--step", e.Step)
	}
	return args
}

// writeInputs writes a new run's model directory (the step-0 weights) and run config under dir/TorchInputDir
// and returns their paths.
func writeInputs(c recipe.Config, dir string) (md, rc string, err error) {
	in := filepath.Join(dir, TorchInputDir)
	md = filepath.Join(in, "model")
	if err := os.MkdirAll(md, 0o755); err != nil {
		return "", "", err
	}
	if err := drawInit(c, md); err != nil {
		return "", "", err
	}
	toml, err := c.Encode()
	if err != nil {
		return "", "", fmt.Errorf("encode the run config: %w", err)
	}
	rc = filepath.Join(in, "run.toml")
	if err := atomicfile.Write(rc, toml); err != nil {
		return "", "", err
	}
	return md, rc, nil
}

// drawInit writes the run's step-0 weights, drawn here by gammainit.Apply from c's [init] and seed exactly as
// the Go engine draws them, into the model directory md (with the recipe recorded as smallinit_init): both
// engines start a run from the same weights, so that their runs of one plan agree within the parity tolerance
// (the PyTorch package's own draws follow the same rule but another generator).
func drawInit(c recipe.Config, md string) error {
	pool := kernel.NewPool(1)
	defer pool.Close()
	m, err := model.New(c.Model.Config, 1, pool)
	if err != nil {
		return fmt.Errorf("%s: %w", md, err)
	}
	if _, err := gammainit.Apply(m, c.Init, c.Seed); err != nil {
		return fmt.Errorf("%s: %w", md, err)
	}
	return m.Save(md, initRecord(c))
}

// command is the interpreter running args, with PYTHONPATH and, on Linux, death with this process.
func (e TorchEngine) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.python(), args...)
	cmd.Env = os.Environ()
	if e.PythonPath != "" {
		pp := e.PythonPath
		if old := os.Getenv("PYTHONPATH"); old != "" {
			pp += string(os.PathListSeparator) + old
		}
		cmd.Env = append(cmd.Env, "PYTHONPATH="+pp)
	}
	dieWithParent(cmd)
	return cmd
}

// python is the interpreter the engine runs.
func (e TorchEngine) python() string {
	if e.Python == "" {
		return torchPythons()[0]
	}
	return e.Python
}

// train runs the PyTorch trainer to the end of the run in dir (or to a SIGTERM checkpoint when ctx ends). Its
// output goes to log; its last lines are kept for the error of a trainer that fails or exits without finishing.
func (e TorchEngine) train(ctx context.Context, args []string, dir string, log io.Writer) error {
	return e.trainAll(ctx, args, []string{dir}, log)[0]
}

// trainAll is train for a trainer that trains the runs in dirs (train-batch): each run's error.
func (e TorchEngine) trainAll(ctx context.Context, args []string, dirs []string, log io.Writer) []error {
	cmd := e.command(ctx, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Minute
	if log == nil {
		log = io.Discard
	}
	tail := &lineTail{max: torchLogTail}
	out := io.MultiWriter(log, tail)
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	errs := make([]error, len(dirs))
	what := fmt.Sprintf("the PyTorch trainer (%s %s)", e.python(), strings.Join(args[:3], " "))
	if len(dirs) > 1 {
		what = fmt.Sprintf("the PyTorch trainer of a batch of %d runs (%s %s)", len(dirs), e.python(), strings.Join(args[:3], " "))
	}
	var ee *exec.ExitError
	for i, dir := range dirs {
		switch {
		case ctx.Err() != nil:
			errs[i] = fmt.Errorf("%s: %w (the PyTorch trainer stopped at a checkpoint)", dir, ErrInterrupted)
		case errors.As(err, &ee):
			errs[i] = fmt.Errorf("%s: %s failed (%s)%s", dir, what, ee.ProcessState, tail.quote())
		case err != nil:
			errs[i] = fmt.Errorf("%s: %s: %w", dir, what, err)
		case !rundir.Finished(dir) || EngineOf(dir) != EngineTorch:
			errs[i] = fmt.Errorf("%s: %s exited with exit status 0 but did not finish the run (its %s/ and %s are not both there)%s",
				dir, what, rundir.FinalDir, TorchRecordFile, tail.quote())
		}
	}
	return errs
}

// lineTail keeps the last max lines written to it.
type lineTail struct {
	max   int
	lines []string
	part  []byte
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
	return len(p), nil
}

func (t *lineTail) add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// quote is ": its last lines:\n  ..." or ": it printed nothing".
func (t *lineTail) quote() string {
	if len(t.part) > 0 {
		t.add(string(t.part))
		t.part = nil
	}
	if len(t.lines) == 0 {
		return "; it printed nothing"
	}
	return "; its last lines:\n    " + strings.Join(t.lines, "\n    ")
}
