//go:build linux || darwin

package runlock

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAcquireRefusesNonRegularLock: a lock path that is a FIFO, a directory or a symlink to a device is no lock
// this package wrote: Acquire refuses it at once (no blocking read, no waiting) naming what it is.
func TestAcquireRefusesNonRegularLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "FIFO"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "directory"},
		{"device", func(p string) error { return os.Symlink("/dev/zero", p) }, "symlink"},
	} {
		p := filepath.Join(t.TempDir(), FileName)
		if err := tc.make(p); err != nil {
			t.Fatalf("%s: making the lock file: %v", tc.name, err)
		}
		done := make(chan error, 1)
		go func() {
			l, err := Acquire(p, DefaultStaleAfter, nil)
			if l != nil {
				l.Release()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: %v, want an error naming %s", tc.name, err, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Acquire blocked", tc.name)
		}
	}
}

// TestHeartbeatRefusesAFIFO: a held lock replaced by a FIFO is a lost lock at the next heartbeat (lost is
// called), and Release returns; before, the heartbeat's read of the FIFO blocked forever, and so did Release.
func TestHeartbeatRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	lost := make(chan struct{})
	l, err := Acquire(path, 50*time.Millisecond, func() { close(lost) })
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("making the FIFO: %v", err)
	}
	released := make(chan struct{})
	go func() {
		<-lost
		l.Release()
		close(released)
	}()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("a lock replaced by a FIFO blocked its heartbeat or Release")
	}
}
