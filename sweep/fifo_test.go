//go:build unix

package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A sweep directory whose plan.json is a FIFO is refused at once, not read (a read would block forever).
func TestReadPlanRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, PlanFile), 0o644); err != nil {
		t.Fatalf("making the FIFO: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadPlan(dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), PlanFile) {
			t.Errorf("ReadPlan on a FIFO plan: %v, want an error naming %s", err, PlanFile)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadPlan blocked on a FIFO plan.json")
	}
}

// TestSweepRefusesFIFORecords: a run directory whose train.log is a FIFO (an append would wait for a reader
// past any stop signal) fails that run at once, naming the file; `sweep status` on a run whose error.txt is a
// FIFO shows it as failed with the reason instead of blocking on the read.
func TestSweepRefusesFIFORecords(t *testing.T) {
	src := t.TempDir()
	g := microGrid(t, src, "")
	p, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		run  func(dir string) (string, error) // what the sweep says about run 0
	}{
		{LogFile, func(dir string) (string, error) {
			reps, err := Execute(context.Background(), g, dir, Options{Index: 0})
			if len(reps) != 1 {
				return "", err
			}
			return fmt.Sprint(reps[0].Outcome, ": ", reps[0].Err), nil
		}},
		{ErrorFile, func(dir string) (string, error) {
			_, sts, err := Status(dir, 0)
			if err != nil || len(sts) == 0 {
				return "", err
			}
			return fmt.Sprint(sts[0].State, ": ", sts[0].Note), nil
		}},
	} {
		dir := filepath.Join(t.TempDir(), "sweep")
		if err := Prepare(dir, g, p); err != nil {
			t.Fatal(err)
		}
		rd := RunDir(dir, p.Runs[0])
		if err := os.MkdirAll(rd, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(rd, tc.file)
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatalf("making the FIFO: %v", err)
		}
		type said struct {
			text string
			err  error
		}
		done := make(chan said, 1)
		go func() { s, err := tc.run(dir); done <- said{s, err} }()
		select {
		case s := <-done:
			if !strings.Contains(s.text, "failed") || !strings.Contains(s.text, path) || !strings.Contains(s.text, "FIFO") {
				t.Errorf("%s as a FIFO: %q (%v), want run 0 failed naming %s as a FIFO", tc.file, s.text, s.err, path)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the sweep blocked on a FIFO %s", tc.file)
		}
	}
}
