//go:build unix

package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestRunRefusesAFIFORecord: a run directory whose metrics.jsonl or diagnostics.jsonl is a FIFO (which an
// open for appending would wait on until a reader came, past any stop signal) fails at once with an error
// naming the file and what it is.
func TestRunRefusesAFIFORecord(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 2, "train.diagnostics_interval=1")
	for _, name := range []string{rundir.MetricsFile, rundir.DiagFile} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatalf("making the FIFO: %v", err)
			}
			done := make(chan error, 1)
			go func() { _, err := Start(context.Background(), c, dir, Options{Diagnostics: probeLoss}); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, inputfile.ErrNotRegular) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "FIFO") {
					t.Errorf("%v, want an error naming %s as a FIFO", err, path)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the run blocked on a FIFO %s", name)
			}
		})
	}
}
