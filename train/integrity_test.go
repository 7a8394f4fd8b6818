package train

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/train/rundir"
)

// flipByte flips the bits of the byte at offset off from the end of the file (issue 48's one flipped byte).
func flipByte(t *testing.T, path string, off int) func() {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	orig := bytes.Clone(b)
	b[len(b)-off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// interruptedRun starts the small run of 11 steps in root/run and stops it after step 5; it returns the run
// directory and the checkpoint a resume starts from (the one the interrupt wrote, of step 5).
func interruptedRun(t *testing.T, root string) (string, string) {
	t.Helper()
	c := smallRun(t, root, 11)
	dir := filepath.Join(root, "run")
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := Start(ctx, c, dir, Options{AfterStep: func(s int) {
		if s == 5 {
			cancel()
		}
	}}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	return dir, filepath.Join(dir, rundir.CheckpointSub(5))
}

// TestCheckpointBitFlipRefused: one flipped byte in any file of the checkpoint a run resumes from (weights,
// their config, the optimizer's moments, the state) is refused naming the file, and the run resumes once the
// byte is restored. Before checkpoints carried a manifest, every one of these resumed silently.
func TestCheckpointBitFlipRefused(t *testing.T) {
	dir, ck := interruptedRun(t, t.TempDir())
	for _, name := range []string{arch.WeightsFile, arch.ConfigFile, optimizerFile, stateFile} {
		restore := flipByte(t, filepath.Join(ck, name), 3) // the last tensor's data; the JSON files' closing bytes
		_, err := Resume(context.Background(), dir, Options{})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(ck, name)) || !strings.Contains(err.Error(), "sha256") {
			t.Errorf("%s with a flipped byte: %v, want a refusal naming it", name, err)
		}
		restore()
	}
	if _, err := Resume(context.Background(), dir, Options{}); err != nil {
		t.Fatalf("resume after the bytes were restored: %v", err)
	}
}

// TestCheckpointWithoutManifestResumes: a checkpoint of a build before manifests (none in it) resumes, with a
// note saying its files were not verified, so that runs started by an older build continue on this one.
func TestCheckpointWithoutManifestResumes(t *testing.T) {
	dir, ck := interruptedRun(t, t.TempDir())
	if err := os.Remove(filepath.Join(ck, filesum.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := Resume(context.Background(), dir, Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "has no manifest.json") {
		t.Errorf("no note on the unverified checkpoint:\n%s", log.String())
	}
}

// TestSnapshotBitFlipRefusedByBranch: one flipped byte in a trunk snapshot's optimizer state is refused when a
// branch starts from it, naming the file; before, the branch trained from the changed moments.
func TestSnapshotBitFlipRefusedByBranch(t *testing.T) {
	root := t.TempDir()
	wsd := []string{"schedule.kind=wsd", "schedule.lr=3e-3"}
	trunk := smallRun(t, root, 12, append(wsd, "schedule.decay_steps=4", "train.snapshot_steps=[7]")...)
	short := smallRun(t, root, 10, append(wsd, "schedule.decay_steps=3")...)
	tdir, bdir := filepath.Join(root, "trunk"), filepath.Join(root, "branch")
	ctx := context.Background()
	if _, err := Start(ctx, trunk, tdir, Options{}); err != nil {
		t.Fatal(err)
	}
	opt := filepath.Join(tdir, SnapshotSub(7), optimizerFile)
	restore := flipByte(t, opt, 5)
	if _, err := StartOrResumeBranch(ctx, short, bdir, tdir, Options{}); err == nil || !strings.Contains(err.Error(), opt) {
		t.Errorf("branch from a snapshot with a flipped byte: %v, want a refusal naming %s", err, opt)
	}
	restore()
	if _, err := StartOrResumeBranch(ctx, short, bdir, tdir, Options{}); err != nil {
		t.Fatal(err)
	}
	// A finished branch whose metrics.jsonl was cut is not read back as finished.
	path := filepath.Join(bdir, rundir.MetricsFile)
	b, _ := os.ReadFile(path)
	cut := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
	if err := os.WriteFile(path, b[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := StartOrResumeBranch(ctx, short, bdir, tdir, Options{}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("finished branch with a cut metrics.jsonl: %v, want a refusal naming it", err)
	}
}

// TestSameConfigNamesTheKey (issue 48, Found "vague errors"): a run planned again with another eval_interval
// is refused naming the key and both values; before, the refusal named no key.
func TestSameConfigNamesTheKey(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 2)
	dir := filepath.Join(root, "run")
	if _, err := Start(context.Background(), c, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	c.Train.EvalInterval = 5
	_, _, err := SameConfig(dir, c)
	if !errors.Is(err, ErrConfigDiffers) || !strings.Contains(err.Error(), "at train.eval_interval: 3 there, 5 here") {
		t.Errorf("SameConfig with another eval_interval: %v, want the key and both values named", err)
	}
}
