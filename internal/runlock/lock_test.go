package runlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockLostStopsHolder checks that a holder whose lock file is taken away is told so at its next heartbeat.
func TestLockLostStopsHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	lost := make(chan struct{})
	l, err := Acquire(path, 50*time.Millisecond, func() { close(lost) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(path, time.Minute, nil); err == nil {
		t.Fatal("second acquire of a fresh lock succeeded")
	}
	os.WriteFile(path, []byte(`{"pid":1,"host":"other"}`), 0o644)
	select {
	case <-lost:
	case <-time.After(2 * time.Second):
		t.Fatal("lost not called")
	}
	l.Release()
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "other") {
		t.Error("release removed another process's lock")
	}
}
