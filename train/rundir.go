package train

import (
	"fmt"
	"path/filepath"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// Run is a run directory read back (rundir.Run, whose methods it has) with the two readers that need what
// stands above the recipe: the final model and the init record.
//
//	r, err := train.OpenRun(dir)
//	ms, err := r.Metrics()                      // every line of metrics.jsonl
//	ds, err := rundir.Diagnostics[diagrec.Record](r.Run) // every line of diagnostics.jsonl, as diag's record
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

// Config is the run's resolved config (config.toml), read by train.Load: recipe's checks and the machine's.
func (r *Run) Config() (recipe.Config, error) { return Load(r.Path(rundir.ConfigFile), nil) }

// FinalModel loads the run's final model (final/) with room for batch sequences per forward pass, on pool.
// It is the one loader of a run's trained model.
func (r *Run) FinalModel(batch int, pool *kernel.Pool) (*model.Model, error) {
	m, _, err := model.Load(filepath.Join(r.Dir(), rundir.FinalDir), batch, pool)
	if err != nil {
		return nil, fmt.Errorf("run %s: final model: %w", r.Dir(), err)
	}
	return m, nil
}

// Init is the run's init record (init.json): the recipe, seed and optimizer it started with and the std of
// every matrix as drawn.
func (r *Run) Init() (gammainit.Record, error) {
	path := r.Path(rundir.InitFile)
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
