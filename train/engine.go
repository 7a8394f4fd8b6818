package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
// keys) are written into the run directory (TorchInputDir), so that the run and its inputs move together. Once the
// process has finished the run, StartOrResume reads it back (and so checks that the config.toml the PyTorch
// trainer resolved is c's). Cancelling ctx sends the process SIGTERM: it checkpoints and stops, and the call
// returns ErrInterrupted.
type TorchEngine struct {
	Python     string // interpreter ("" = python3)
	PythonPath string // prepended to PYTHONPATH ("" = the package must be importable as installed)
	Device     string // the trainer's --device ("" = auto)
	Step       string // the trainer's --step ("" = its default, fast)
}

// TorchInputDir is the subdirectory of a PyTorch-engine run that holds its model directory and run config.
const TorchInputDir = "torch-input"

// Name is EngineTorch.
func (TorchEngine) Name() string { return EngineTorch }

// StartOrResume trains the run of c in dir through the PyTorch trainer, or reads back a finished run.
func (e TorchEngine) StartOrResume(ctx context.Context, c recipe.Config, dir string, o Options) (Result, error) {
	started := rundir.IsRegular(filepath.Join(dir, rundir.ConfigFile))
	if started && EngineOf(dir) != EngineTorch {
		return Result{Resumed: true}, fmt.Errorf("%s: started by the Go engine: resume it with --engine go", dir)
	}
	if !rundir.Finished(dir) {
		args, err := e.arguments(c, dir, started)
		if err != nil {
			return Result{Resumed: started}, err
		}
		if err := e.train(ctx, args, o.Log); err != nil {
			return Result{Resumed: started}, fmt.Errorf("%s: %w", dir, err)
		}
	}
	ro := o // the caller's lock (a sweep's LockHeld) stays held for the read-back
	ro.Log, ro.Progress = io.Discard, false
	res, err := StartOrResume(ctx, c, dir, ro)
	res.Resumed = started
	return res, err
}

// arguments writes the run's inputs (a new run) and returns the trainer's arguments.
func (e TorchEngine) arguments(c recipe.Config, dir string, started bool) ([]string, error) {
	args := []string{"-m", "smallinit_torch", "train", "--quiet"}
	if e.Device != "" {
		args = append(args, "--device", e.Device)
	}
	if e.Step != "" {
		args = append(args, "--step", e.Step)
	}
	if started {
		return append(args, "--resume", dir), nil
	}
	in := filepath.Join(dir, TorchInputDir)
	md := filepath.Join(in, "model")
	if err := os.MkdirAll(md, 0o755); err != nil {
		return nil, err
	}
	if err := drawInit(c, md); err != nil {
		return nil, err
	}
	toml, err := c.Encode()
	if err != nil {
		return nil, fmt.Errorf("encode the run config: %w", err)
	}
	rc := filepath.Join(in, "run.toml")
	if err := atomicfile.Write(rc, toml); err != nil {
		return nil, err
	}
	return append(args, "--model", md, "--config", rc, "--out", dir), nil
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

// train runs the PyTorch trainer to the end of the run (or to a SIGTERM checkpoint when ctx ends).
func (e TorchEngine) train(ctx context.Context, args []string, log io.Writer) error {
	py := e.Python
	if py == "" {
		py = "python3"
	}
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Minute
	cmd.Env = os.Environ()
	if e.PythonPath != "" {
		pp := e.PythonPath
		if old := os.Getenv("PYTHONPATH"); old != "" {
			pp += string(os.PathListSeparator) + old
		}
		cmd.Env = append(cmd.Env, "PYTHONPATH="+pp)
	}
	if log == nil {
		log = io.Discard
	}
	cmd.Stdout, cmd.Stderr = log, log
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("%w (the PyTorch trainer stopped at a checkpoint)", ErrInterrupted)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("the PyTorch trainer (%s %s) exited with status %d: its last lines are in the log", py, args[0]+" "+args[1], ee.ExitCode())
	}
	return err
}
