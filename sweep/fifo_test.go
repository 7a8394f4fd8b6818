//go:build unix

package sweep

import (
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
