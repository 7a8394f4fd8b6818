package train

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/train/rundir"
)

// TestBranchEqualsIndependentRun: a WSD cooldown branch started from a trunk's snapshot ends with the final
// model, optimizer moments and training-loss record of the independent WSD run of its horizon, bit for bit, also
// when the trunk is killed before its snapshot and the branch after its start, each resumed; and the trunk
// itself is unchanged by writing the snapshot.
func TestBranchEqualsIndependentRun(t *testing.T) {
	root := t.TempDir()
	wsd := []string{"schedule.kind=wsd", "schedule.lr=3e-3"}
	// The trunk: 20 steps, decay over the last 6; its branch of 10 steps decays over its last 3 from step 7.
	trunk := smallRun(t, root, 20, append(wsd, "schedule.decay_steps=6", "train.snapshot_steps=[7]", "train.diagnostics_interval=3")...)
	short := smallRun(t, root, 10, append(wsd, "schedule.decay_steps=3", "train.diagnostics_interval=3")...)
	if got := BranchPoint(short); got != 7 {
		t.Fatalf("BranchPoint = %d, want 7", got)
	}
	ctx := context.Background()
	tdir, bdir, idir := filepath.Join(root, "trunk"), filepath.Join(root, "branch"), filepath.Join(root, "independent")
	if _, err := StartOrResumeBranch(ctx, short, bdir, filepath.Join(root, "none"), Options{}); err == nil {
		t.Fatal("a branch of a missing trunk started")
	}
	// The trunk is killed after step 6, before its snapshot of step 7 (its last checkpoint: step 6), and resumed.
	tctx, tcancel := context.WithCancel(ctx)
	_, err := Start(tctx, trunk, tdir, Options{Diagnostics: probeLoss, AfterStep: func(s int) {
		if s == 5 { // the trunk has not reached the branch point: the branch must wait
			if _, err := StartOrResumeBranch(ctx, short, bdir, tdir, Options{}); !errors.Is(err, ErrNoSnapshot) {
				t.Errorf("branch before the snapshot: %v, want ErrNoSnapshot", err)
			}
		}
		if s == 6 {
			tcancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted trunk: %v", err)
	}
	if _, err := Resume(ctx, tdir, Options{Diagnostics: probeLoss}); err != nil {
		t.Fatal(err)
	}
	if snaps, err := mustOpenRun(t, tdir).Snapshots(); err != nil || len(snaps) != 1 || snaps[0] != 7 {
		t.Fatalf("trunk snapshots %v (%v), want [7]", snaps, err)
	}
	// The trunk is the run it would be without the snapshot.
	plain := trunk
	plain.Train.SnapshotSteps = nil
	if _, err := Start(ctx, plain, filepath.Join(root, "plain"), Options{Diagnostics: probeLoss}); err != nil {
		t.Fatal(err)
	}
	sameRun(t, tdir, filepath.Join(root, "plain"))

	if _, err := Start(ctx, short, idir, Options{Diagnostics: probeLoss}); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(ctx)
	_, err = StartOrResumeBranch(bctx, short, bdir, tdir, Options{Diagnostics: probeLoss, AfterStep: func(s int) {
		if s == 8 {
			cancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted branch: %v", err)
	}
	res, err := StartOrResumeBranch(ctx, short, bdir, tdir, Options{Diagnostics: probeLoss})
	if err != nil || !res.Resumed {
		t.Fatalf("resumed branch: %+v, %v", res, err)
	}
	sameRun(t, idir, bdir)
	for _, f := range []string{filepath.Join(rundir.FinalDir, "model.safetensors"), filepath.Join(rundir.CheckpointSub(10), optimizerFile), rundir.InitFile} {
		a, _ := os.ReadFile(filepath.Join(idir, f))
		b, _ := os.ReadFile(filepath.Join(bdir, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the branch and the independent run", f)
		}
	}
	// Read back once finished.
	if res, err := StartOrResumeBranch(ctx, short, bdir, tdir, Options{}); err != nil || !res.Resumed {
		t.Errorf("finished branch read back: %+v, %v", res, err)
	}
}

// TestCheckBranchRefusesAnotherRecipe: a branch whose recipe or warmup differs from the trunk's, or whose
// schedule is not flat up to the branch point, is refused with the reason.
func TestCheckBranchRefusesAnotherRecipe(t *testing.T) {
	root := t.TempDir()
	trunk := smallRun(t, root, 20, "schedule.kind=wsd", "schedule.decay_steps=6")
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"schedule.kind=wsd", "schedule.decay_steps=3", "init.gamma=0.5"}, "recipe differs"},
		{[]string{"schedule.kind=wsd", "schedule.decay_steps=3", "schedule.warmup_steps=3"}, "recipe differs"},
		{[]string{"schedule.kind=cosine", "schedule.decay_steps=3"}, "recipe differs"},
		{[]string{"schedule.kind=wsd", "schedule.decay_steps=0"}, "outside the branch's steps"},
	} {
		c := smallRun(t, root, 10, tc.sets...)
		err := CheckBranch(trunk, c, BranchPoint(c))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.sets, err, tc.want)
		}
	}
	ok := smallRun(t, root, 10, "schedule.kind=wsd", "schedule.decay_steps=3")
	if err := CheckBranch(trunk, ok, BranchPoint(ok)); err != nil {
		t.Errorf("a proper branch refused: %v", err)
	}
}

// mustOpenRun is OpenRun, failing the test on an error.
func mustOpenRun(t *testing.T, dir string) *Run {
	t.Helper()
	r, err := OpenRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
