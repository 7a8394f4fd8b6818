package runlock

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
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

// TestStaleness: a lock is stale when its heartbeat is older than staleAfter, whatever host holds it, or when its
// holder is a process of this host that is gone; a fresh lock of another host or of a live local process is not.
// A holder heartbeats at least three times per DefaultStaleAfter, whatever staleAfter it was given.
func TestStaleness(t *testing.T) {
	host, _ := os.Hostname()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		host  string
		pid   int
		age   time.Duration
		stale bool
	}{
		{"another host, fresh", "elsewhere", 1, 5 * time.Second, false},
		{"another host, two heartbeats missed", "elsewhere", 1, 2 * Heartbeat, false},
		{"another host, three heartbeats missed", "elsewhere", 1, DefaultStaleAfter + time.Second, true},
		{"another host, long gone", "elsewhere", 1, time.Hour, true},
		{"this host, live process", host, os.Getppid(), 5 * time.Second, false},
		{"this host, process gone", host, gone.Process.Pid, 0, true},
	} {
		path := filepath.Join(t.TempDir(), FileName)
		b, _ := json.Marshal(lockInfo{PID: tc.pid, Host: tc.host, Token: "t", Started: time.Now()})
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-tc.age)
		if err := os.Chtimes(path, mt, mt); err != nil {
			t.Fatal(err)
		}
		_, holder, stale := Inspect(path, host, DefaultStaleAfter)
		if stale != tc.stale || !strings.Contains(holder, tc.host) {
			t.Errorf("%s: stale %v (%s), want %v", tc.name, stale, holder, tc.stale)
		}
	}
	for _, staleAfter := range []time.Duration{time.Second, DefaultStaleAfter, 5 * time.Minute, time.Hour} {
		if every := heartbeatEvery(staleAfter); every > DefaultStaleAfter/3 || every > staleAfter/3 && staleAfter >= time.Second {
			t.Errorf("staleAfter %s: heartbeat every %s, want at least three per %s", staleAfter, every, min(staleAfter, DefaultStaleAfter))
		}
	}
}

// TestUnreadableLockNamesFileRuleAndFix: a fresh lock file that holds no lock (empty, or foreign bytes) keeps
// the run busy, and the holder text names the file, what is wrong with it, the staleness rule and the fix.
func TestUnreadableLockNamesFileRuleAndFix(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"empty", "", "(empty)"},
		{"foreign", "hello", "5 bytes that are not a lock's JSON"},
	} {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Acquire(path, DefaultStaleAfter, nil)
		var busy *BusyError
		if !errors.As(err, &busy) {
			t.Fatalf("%s: %v, want a BusyError", tc.name, err)
		}
		for _, w := range []string{path, tc.want, "once its mtime is 30s old", "remove it if no process trains this run"} {
			if !strings.Contains(busy.Holder, w) {
				t.Errorf("%s: holder %q does not say %q", tc.name, busy.Holder, w)
			}
		}
	}
}
