package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/optim"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/train/rundir"
)

// A checkpoint is a directory DIR/checkpoints/step-NNNNNN/ holding the model (model.safetensors + config.json,
// the engine's format), optimizer.safetensors (AdamW moments as exp_avg.<name> and exp_avg_sq.<name>, PyTorch's
// names), state.json and manifest.json (filesum: the sha256 of every other file, written last). It is written
// under a temporary name, synced, and renamed into place, so a crash at any moment leaves the previous
// checkpoint intact; a file changed since (one flipped byte) is refused on resume and branch, naming it.
const (
	checkpointsDir = rundir.CheckpointsDir
	stateFile      = "state.json"
	optimizerFile  = "optimizer.safetensors"
	// snapshotsDir holds a trunk's snapshots (train.snapshot_steps): checkpoints in the same format, written at
	// the steps where cooldown branches start (branch.go) and never pruned.
	snapshotsDir = "snapshots"
)

// State is everything besides weights and moments that a resumed run needs to continue bit for bit.
type State struct {
	Step         int     `json:"step"`              // optimizer steps completed
	Tokens       int64   `json:"tokens"`            // training tokens consumed
	Epoch        int     `json:"epoch"`             // sampler epoch
	Pos          int     `json:"pos"`               // sampler position in the epoch's permutation
	AdamStep     int     `json:"adam_step"`         // AdamW updates applied (differs from Step when batches were skipped)
	Skipped      int     `json:"skipped"`           // batches skipped for a non-finite loss or gradient
	LossSum      float64 `json:"loss_sum"`          // training loss summed since the last metrics line
	LossCount    int     `json:"loss_count"`        // steps in LossSum
	MetricsBytes int64   `json:"metrics_bytes"`     // length of metrics.jsonl when the checkpoint was taken
	DiagBytes    int64   `json:"diagnostics_bytes"` // length of diagnostics.jsonl when the checkpoint was taken
	Seed         uint64  `json:"seed"`
	// Config is the run config's fingerprint (Fingerprint) when the checkpoint was taken, so that a resume
	// under an edited config.toml is refused ("": a checkpoint written before it was recorded).
	Config string `json:"config,omitempty"`
}

// check verifies the invariants of a checkpoint's state taken after step steps of batchTokens tokens each:
// every step consumed one batch and was either an AdamW update or skipped.
func (st State) check(step int, batchTokens int64) error {
	switch {
	case step < 1:
		return fmt.Errorf("a checkpoint of step %d: a run checkpoints only after a step, so no run wrote it", step)
	case st.Step < 0 || st.Tokens < 0 || st.Epoch < 0 || st.Pos < 0 || st.AdamStep < 0 || st.MetricsBytes < 0 || st.DiagBytes < 0 || st.Skipped < 0 || st.LossCount < 0:
		return errors.New("negative counter in state")
	case st.Step != step:
		return fmt.Errorf("state of step %d in the checkpoint of step %d", st.Step, step)
	case st.Tokens/batchTokens != int64(st.Step) || st.Tokens%batchTokens != 0:
		return fmt.Errorf("%d tokens after %d steps of %d tokens", st.Tokens, st.Step, batchTokens)
	case st.AdamStep+st.Skipped != st.Step:
		return fmt.Errorf("%d updates and %d skipped batches after %d steps", st.AdamStep, st.Skipped, st.Step)
	case st.LossCount > st.Step:
		return fmt.Errorf("%d losses pending after %d steps", st.LossCount, st.Step)
	}
	return nil
}

func checkpointName(step int) string { return rundir.StepName(step) }

// saveCheckpoint writes a checkpoint of step st.Step under dir and prunes all but the newest keep.
func saveCheckpoint(dir string, m *model.Model, opt *optim.AdamW, st State, init any, keep int) (string, error) {
	return saveState(filepath.Join(dir, checkpointsDir), m, opt, st, init, keep)
}

// saveState writes the checkpoint of step st.Step under root (DIR/checkpoints or DIR/snapshots) and, with keep
// > 0, prunes all but the newest keep there.
func saveState(root string, m *model.Model, opt *optim.AdamW, st State, init any, keep int) (string, error) {
	final := filepath.Join(root, checkpointName(st.Step))
	tmp := filepath.Join(root, ".tmp-"+checkpointName(st.Step))
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	fail := func(err error) (string, error) {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("checkpoint step %d: %w", st.Step, err)
	}
	if err := m.Save(tmp, init); err != nil {
		return fail(err)
	}
	w := safetensors.Create(filepath.Join(tmp, optimizerFile), map[string]string{"adam_step": fmt.Sprint(opt.Step)})
	for _, t := range m.Specs {
		if err := w.AddFloat32("exp_avg."+t.Name, t.Shape, opt.M[t.Offset:t.Offset+t.Size()]); err != nil {
			w.Abort()
			return fail(err)
		}
		if err := w.AddFloat32("exp_avg_sq."+t.Name, t.Shape, opt.V[t.Offset:t.Offset+t.Size()]); err != nil {
			w.Abort()
			return fail(err)
		}
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := atomicfile.Write(filepath.Join(tmp, stateFile), append(b, '\n')); err != nil {
		return fail(err)
	}
	if err := filesum.Write(tmp); err != nil {
		return fail(err)
	}
	if err := syncDir(tmp); err != nil {
		return fail(err)
	}
	os.RemoveAll(final) // a checkpoint of the same step from a run that was killed after writing it
	if err := os.Rename(tmp, final); err != nil {
		return fail(err)
	}
	if err := syncDir(root); err != nil {
		return fail(err)
	}
	if keep > 0 {
		steps, _ := rundir.ListSteps(root)
		for i := 0; i+keep < len(steps); i++ {
			os.RemoveAll(filepath.Join(root, checkpointName(steps[i])))
		}
	}
	return final, nil
}

// syncDir fsyncs a directory so that renames inside it are durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// listCheckpoints returns the steps of the complete checkpoints under dir, ascending.
func listCheckpoints(dir string) ([]int, error) {
	return rundir.ListSteps(filepath.Join(dir, checkpointsDir))
}

// loadCheckpoint restores weights, optimizer moments and state from checkpoint directory ck, the checkpoint of
// the given step, into m and opt. Its files are first checked against its manifest; a checkpoint without one
// (written by a build before manifests) is accepted with a note through logf, so that older runs resume.
func loadCheckpoint(ck string, step int, m *model.Model, opt *optim.AdamW, logf func(string, ...any)) (State, error) {
	var st State
	if err := filesum.Verify(ck); errors.Is(err, filesum.ErrNoManifest) {
		logf("note: %s has no %s (written by an earlier build): its files are trusted unverified\n", ck, filesum.ManifestFile)
	} else if err != nil {
		return st, fmt.Errorf("resume: checkpoint %s: %w; move that checkpoint directory away to resume from the one before it", ck, err)
	}
	b, err := inputfile.ReadFile(filepath.Join(ck, stateFile), inputfile.MaxConfig)
	if err != nil {
		return st, fmt.Errorf("resume: %w", err)
	}
	if len(b) == 0 {
		return st, fmt.Errorf("resume %s: empty, not a checkpoint's state (a write cut short): move %s away to resume from the checkpoint before it", filepath.Join(ck, stateFile), ck)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("resume %s: %w (move %s away to resume from the checkpoint before it)", filepath.Join(ck, stateFile), err, ck)
	}
	if err := st.check(step, int64(m.Batch())*int64(m.Config.SeqLen)); err != nil {
		return st, fmt.Errorf("resume %s: %w", filepath.Join(ck, stateFile), err)
	}
	c, _, err := model.ReadConfig(ck)
	if err != nil {
		return st, fmt.Errorf("resume: %w", err)
	}
	if c != m.Config {
		return st, fmt.Errorf("resume %s: checkpoint model config differs from the run's config.toml", ck)
	}
	if err := m.LoadWeights(filepath.Join(ck, arch.WeightsFile)); err != nil {
		return st, fmt.Errorf("resume: %w", err)
	}
	path := filepath.Join(ck, optimizerFile)
	f, err := safetensors.Open(path)
	if err != nil {
		return st, fmt.Errorf("resume: %w", err)
	}
	defer f.Close()
	for _, t := range m.Specs {
		for _, mv := range []struct {
			prefix string
			dst    []float32
		}{{"exp_avg.", opt.M}, {"exp_avg_sq.", opt.V}} {
			name := mv.prefix + t.Name
			info, ok := f.Info(name)
			if !ok || info.NumElements() != t.Size() {
				return st, fmt.Errorf("resume %s: tensor %s missing or of the wrong size", path, name)
			}
			if err := f.ReadFloat32(name, mv.dst[t.Offset:t.Offset+t.Size()]); err != nil {
				return st, fmt.Errorf("resume: %w", err)
			}
		}
	}
	opt.Step = st.AdamStep
	return st, nil
}
