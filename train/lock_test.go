package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestLockedDirectoryIsRefused: while another holder has a run directory's lock, Start and Resume refuse it
// with ErrBusy naming the holder, and write nothing; once released, the run starts.
func TestLockedDirectoryIsRefused(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 4)
	dir := filepath.Join(root, "run")
	os.MkdirAll(dir, 0o755)
	held, err := runlock.Acquire(filepath.Join(dir, runlock.FileName), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"start":  func() error { _, err := Start(context.Background(), c, dir, Options{}); return err },
		"resume": func() error { _, err := Resume(context.Background(), dir, Options{}); return err },
	} {
		err := run()
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("%s of a locked directory: %v, want ErrBusy naming the holder", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err == nil {
		t.Error("a refused start wrote config.toml")
	}
	held.Release()
	if _, err := Start(context.Background(), c, dir, Options{}); err != nil {
		t.Fatalf("start after release: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, runlock.FileName)); err == nil {
		t.Error("a finished run left its lock behind")
	}
}

// TestSecondProcessCannotTrainARunningDirectory runs training in a child process and, while it trains, tries to
// resume and to start the same directory from this one: both are refused (the race of two `train --out D` that
// both passed the "already holds a run" check, and of two `train --resume D`), and the child's metrics.jsonl
// ends with every step once.
func TestSecondProcessCannotTrainARunningDirectory(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 12)
	b, _ := c.Encode()
	os.WriteFile(filepath.Join(root, "child.toml"), b, 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SMALLINIT_TEST_TRAIN_CHILD="+root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	run := filepath.Join(root, "run")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if steps, _ := listCheckpoints(run); len(steps) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never wrote a checkpoint")
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := fmt.Sprintf("pid %d", cmd.Process.Pid)
	if _, err := Resume(context.Background(), run, Options{}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), want) {
		t.Errorf("resume while another process trains: %v, want ErrBusy naming %s", err, want)
	}
	if _, err := Start(context.Background(), c, run, Options{}); err == nil {
		t.Error("start over a directory another process trains succeeded")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	f, err := os.ReadFile(filepath.Join(run, rundir.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		var rec struct{ Step int }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Step <= last {
			t.Fatalf("metrics.jsonl repeats or reorders steps: %d after %d", rec.Step, last)
		}
		last = rec.Step
	}
}
