package train

import (
	"fmt"
	"path/filepath"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/train/rundir"
)

// Run is a run directory read back (rundir.Run, whose methods it has) with the two readers that need what
// stands above the recipe: the final model and the init record.
//
//	r, err := train.OpenRun(dir)
//	ms, err := r.Metrics()                      // every line of metrics.jsonl
//	ds, err := train.Diagnostics[diag.Record](r) // every line of diagnostics.jsonl, as diag's record
//	m, err := r.FinalModel(16, pool)            // the trained model
type Run struct{ *rundir.Run }

// OpenRun opens the run directory dir (rundir.Open).
func OpenRun(dir string) (*Run, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	return &Run{r}, nil
}

// Files of a run directory besides checkpoints/ (rundir's).
const (
	ConfigFile  = rundir.ConfigFile
	MetricsFile = rundir.MetricsFile
	InitFile    = rundir.InitFile
	DiagFile    = rundir.DiagFile
	FinalDir    = rundir.FinalDir
	InitDir     = rundir.InitDir
)

// Metrics is one line of metrics.jsonl (rundir.Metrics).
type Metrics = rundir.Metrics

// DiagLine is one line of diagnostics.jsonl (rundir.DiagLine).
type DiagLine[T any] = rundir.DiagLine[T]

// Summary is what a run's metrics.jsonl says about it as a whole (rundir.Summary).
type Summary = rundir.Summary

// IsRunDir is rundir.IsRunDir.
func IsRunDir(dir string) bool { return rundir.IsRunDir(dir) }

// CheckpointSub is rundir.CheckpointSub.
func CheckpointSub(step int) string { return rundir.CheckpointSub(step) }

// Summarise is rundir.Summarise.
func Summarise(ms []Metrics) Summary { return rundir.Summarise(ms) }

// Diagnostics reads every line of r's diagnostics.jsonl with its record decoded as T (rundir.Diagnostics).
func Diagnostics[T any](r *Run) ([]DiagLine[T], error) { return rundir.Diagnostics[T](r.Run) }

// Config is the run's resolved config (config.toml), read by train.Load: recipe's checks and the machine's.
func (r *Run) Config() (Config, error) { return Load(r.Path(ConfigFile), nil) }

func isRegular(p string) bool { return rundir.IsRegular(p) }

// FinalModel loads the run's final model (final/) with room for batch sequences per forward pass, on pool.
// It is the one loader of a run's trained model.
func (r *Run) FinalModel(batch int, pool *kernel.Pool) (*model.Model, error) {
	m, _, err := model.Load(filepath.Join(r.Dir(), FinalDir), batch, pool)
	if err != nil {
		return nil, fmt.Errorf("run %s: final model: %w", r.Dir(), err)
	}
	return m, nil
}

// Init is the run's init record (init.json): the recipe, seed and optimizer it started with and the std of
// every matrix as drawn.
func (r *Run) Init() (gammainit.Record, error) {
	path := r.Path(InitFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return gammainit.Record{}, err
	}
	rec, err := gammainit.ParseRecord(b)
	if err != nil {
		return gammainit.Record{}, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}
