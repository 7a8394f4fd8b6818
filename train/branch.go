package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// A cooldown branch (docs/definitions.md §3, "Horizon series") is a run of a shorter horizon that shares its
// first steps with a longer run, the trunk: with a WSD schedule the learning rate before a run's decay does not
// depend on its length, so a run of S_h steps whose decay starts at step b = S_h − D_h trains exactly what the
// trunk trains up to step b. The trunk writes a snapshot at b (train.snapshot_steps); the branch starts from it
// and decays over its own D_h steps. The branch is then the independent run of its config, bit for bit (the
// sampler's order, the pending loss sum and AdamW's moments are all in the snapshot), for the price of its
// decay steps only.

// SnapshotSub is the subdirectory of a trunk's run directory that holds its snapshot of step.
func SnapshotSub(step int) string { return filepath.Join(snapshotsDir, checkpointName(step)) }

// Snapshots are the steps of the run's complete snapshots (train.snapshot_steps), ascending.
func (r *Run) Snapshots() ([]int, error) {
	return rundir.ListSteps(filepath.Join(r.Dir(), snapshotsDir))
}

// ErrNoSnapshot is wrapped by StartOrResumeBranch's error when the trunk has not reached the branch point yet.
var ErrNoSnapshot = errors.New("the trunk has no snapshot at the branch point yet")

// BranchPoint is the step at which a run of c leaves a trunk: the start of its WSD decay.
func BranchPoint(c recipe.Config) int { return c.TotalSteps() - c.Schedule.DecaySteps }

// CheckBranch says why c cannot be a branch of trunk at step at: it must be the trunk's recipe but for the
// keys that set the length and the bookkeeping (steps, the decay's length, the intervals, the snapshots,
// threads), and its learning rate must equal the trunk's at every step before at, bit for bit.
func CheckBranch(trunk, c recipe.Config, at int) error {
	if at <= 0 || at >= c.TotalSteps() {
		return fmt.Errorf("branch point %d outside the branch's steps (0, %d)", at, c.TotalSteps())
	}
	if at >= trunk.TotalSteps() {
		return fmt.Errorf("branch point %d at or past the trunk's %d steps", at, trunk.TotalSteps())
	}
	norm := func(x recipe.Config) recipe.Config {
		x.Train.Steps, x.Train.Tokens, x.Schedule.DecaySteps = 0, 0, 0
		x.Train.EvalInterval, x.Train.CheckpointEvery, x.Train.DiagnosticsEvery, x.Train.KeepCheckpoints = 0, 0, 0, 0
		x.Train.SnapshotSteps, x.Train.Threads = nil, 0
		return x
	}
	a, err := norm(trunk).Encode()
	if err != nil {
		return err
	}
	b, err := norm(c).Encode()
	if err != nil {
		return err
	}
	if string(a) != string(b) {
		return fmt.Errorf("the branch's recipe differs from the trunk's beyond its length and intervals")
	}
	ts, bs := trunk.Schedule, c.Schedule
	ts.Total, bs.Total = trunk.TotalSteps(), c.TotalSteps()
	for s := range at {
		if math.Float64bits(ts.LR(s)) != math.Float64bits(bs.LR(s)) {
			return fmt.Errorf("learning rate at step %d: trunk %g, branch %g (a branch needs a WSD schedule whose decay starts at the branch point)", s, ts.LR(s), bs.LR(s))
		}
	}
	return nil
}

// StartOrResumeBranch trains the run of c in dir as a branch of the trunk run in trunkDir, from the trunk's
// snapshot of step BranchPoint(c). A dir that holds the run already is resumed (or read back) like any run
// (StartOrResume). A new one is set up from the snapshot: the trunk's init.json, its metrics.jsonl and
// diagnostics.jsonl up to the snapshot, the snapshot as the branch's first checkpoint (under the branch's own
// config fingerprint), then config.toml, written last so that a crash before it leaves a directory that is set
// up again from scratch. The snapshot must exist: ErrNoSnapshot until the trunk has passed the branch point.
func StartOrResumeBranch(ctx context.Context, c recipe.Config, dir, trunkDir string, o Options) (Result, error) {
	if rundir.IsRegular(filepath.Join(dir, rundir.ConfigFile)) {
		return StartOrResume(ctx, c, dir, o)
	}
	at := BranchPoint(c)
	trunk, err := Load(filepath.Join(trunkDir, rundir.ConfigFile), nil)
	if err != nil {
		return Result{}, fmt.Errorf("branch %s: trunk: %w", dir, err)
	}
	if err := Validate(c); err != nil {
		return Result{}, fmt.Errorf("branch %s: run config: %w", dir, err)
	}
	// The trunk's precision as it resolved it ("auto" is resolved once, by the trunk).
	if c.Train.Precision == PrecisionAuto {
		c.Train.Precision = trunk.Train.Precision
	}
	if err := CheckBranch(trunk, c, at); err != nil {
		return Result{}, fmt.Errorf("branch %s of %s: %w", dir, trunkDir, err)
	}
	snap := filepath.Join(trunkDir, SnapshotSub(at))
	if steps, err := rundir.ListSteps(filepath.Join(trunkDir, snapshotsDir)); err != nil || !slices.Contains(steps, at) {
		return Result{}, fmt.Errorf("branch %s: %s: %w", dir, snap, ErrNoSnapshot)
	}
	r, ctx, release, err := newRunDir(ctx, c, dir, o)
	if err != nil {
		return Result{}, err
	}
	defer release()
	if rundir.IsRegular(filepath.Join(dir, rundir.ConfigFile)) { // another process set it up since the first check
		o.LockHeld = true
		return StartOrResume(ctx, c, dir, o)
	}
	st, err := loadCheckpoint(snap, at, r.m, r.opt, r.logf)
	if err != nil {
		return Result{}, fmt.Errorf("branch %s: %w", dir, err)
	}
	if st.Seed != c.Seed {
		return Result{}, fmt.Errorf("branch %s: snapshot %s has seed %d, the branch %d", dir, snap, st.Seed, c.Seed)
	}
	os.RemoveAll(filepath.Join(dir, checkpointsDir)) // a set-up cut short before config.toml
	for _, f := range []struct {
		name string
		n    int64
	}{{rundir.InitFile, -1}, {rundir.MetricsFile, st.MetricsBytes}, {rundir.DiagFile, st.DiagBytes}} {
		if err := copyPrefix(filepath.Join(trunkDir, f.name), filepath.Join(dir, f.name), f.n); err != nil {
			return Result{}, fmt.Errorf("branch %s: %w", dir, err)
		}
	}
	st.Config = r.st.Config
	if _, err := saveCheckpoint(dir, r.m, r.opt, st, initRecord(c), c.Train.KeepCheckpoints); err != nil {
		return Result{}, fmt.Errorf("branch %s: %w", dir, err)
	}
	b, err := c.Encode()
	if err != nil {
		return Result{}, err
	}
	if err := atomicfile.Write(filepath.Join(dir, rundir.ConfigFile), b); err != nil {
		return Result{}, err
	}
	o.LockHeld = true
	res, err := Resume(ctx, dir, o)
	res.Threads = c.Train.Threads
	return res, err
}

// copyPrefix writes the first n bytes of src (n < 0: all of it; a missing src with n ≤ 0: an empty file) to dst,
// atomically.
func copyPrefix(src, dst string, n int64) error {
	f, err := inputfile.Open(src, inputfile.NoLimit)
	if err != nil {
		if os.IsNotExist(err) && n <= 0 {
			return atomicfile.Write(dst, nil)
		}
		return err
	}
	defer f.Close()
	var rd io.Reader = f
	if n >= 0 {
		rd = io.LimitReader(f, n)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if n >= 0 && int64(len(b)) != n {
		return fmt.Errorf("%s: %d bytes, the snapshot says %d", src, len(b), n)
	}
	return atomicfile.Write(dst, b)
}
