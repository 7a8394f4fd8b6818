package train

import (
	"encoding/json"
	"fmt"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// ScoreFile is a score cache in a run directory: a score a study computed from the run's final model, kept
// beside it so that a resumed study scores nothing twice. The scores are other packages' types; the files are
// the run's, so they are named here and written and read only through Run.
type ScoreFile string

// The score caches a run directory may hold.
const (
	SelectionScore   ScoreFile = "selection_score.json"  // an LR-sweep trial's loss on the selection slice
	VerdictScore     ScoreFile = "verdict_score.json"    // a reproduction run's held-out, OOD and mechanism score
	OODScore         ScoreFile = "ood_score.json"        // a study run's out-of-distribution texts, as `judge` scores them
	HeldOutTextScore ScoreFile = "held_out_score.json"   // a study run's score on its corpus's held-out text (judge --held-out)
	ValidationScore  ScoreFile = "validation_score.json" // a finished study run's whole-validation score, as a partial readout scores it
)

// ReadScore reads the run's score cache name into v and reports whether it could: a missing, unreadable or
// unparsable cache (a stale or cut one) reports false, and the caller scores the run again.
func (r *Run) ReadScore(name ScoreFile, v any) bool {
	b, err := inputfile.ReadFile(r.Path(string(name)), inputfile.MaxConfig)
	return err == nil && json.Unmarshal(b, v) == nil
}

// WriteScore writes v (indented JSON) as the run's score cache name, atomically.
func (r *Run) WriteScore(name ScoreFile, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("score cache %s: %w", r.Path(string(name)), err)
	}
	if err := atomicfile.Write(r.Path(string(name)), append(b, '\n')); err != nil {
		return fmt.Errorf("score cache: %w", err)
	}
	return nil
}
