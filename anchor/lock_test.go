package anchor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/kernel"
)

// TestCellLockOfAnotherNode: a cell whose lock was left by a process on another node (a diagram requeued after
// its node was lost) is taken over once the lock's heartbeat is runlock.DefaultStaleAfter old, not refused; a
// lock with a live heartbeat is waited for, until it is released or the context ends, and never taken over.
func TestCellLockOfAnotherNode(t *testing.T) {
	s := Shape{Dim: 16, FFN: 32, HeadDim: 8, Norm: arch.NormLayer}
	b := Budget{Steps: 2, Batch: 8, Threads: 1}
	c := Cell{Task: TaskComposite, Gamma: 0.5, Layers: 1, LR: 1e-3, Seed: 1}
	pool := kernel.NewPool(1)
	defer pool.Close()
	for _, tc := range []struct {
		name    string
		age     time.Duration // of the lock's heartbeat
		release time.Duration // > 0: the holder releases the lock after this long
		trains  bool          // else the context (2 s) ends the wait
	}{
		{"killed on another node, three heartbeats ago", runlock.DefaultStaleAfter + time.Second, 0, true},
		{"killed on another node long ago", time.Hour, 0, true},
		{"alive on another node, releases it", 0, 500 * time.Millisecond, true},
		{"alive on another node", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			tok := filepath.Join(out, "train.tok")
			if err := WriteTokens(tok, CompositeTrain(100, 1)); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(out, "run")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(dir, runlock.FileName)
			b0, _ := json.Marshal(map[string]any{"pid": 1, "host": "another-node", "token": "x", "started": time.Now().UTC()})
			if err := os.WriteFile(lock, b0, 0o644); err != nil {
				t.Fatal(err)
			}
			mt := time.Now().Add(-tc.age)
			if err := os.Chtimes(lock, mt, mt); err != nil {
				t.Fatal(err)
			}
			if tc.release > 0 {
				time.AfterFunc(tc.release, func() { os.Remove(lock) })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var log strings.Builder
			m, res, err := TrainCell(ctx, c, s, b, tok, dir, 8, pool, &log)
			if waited := strings.Contains(log.String(), "waiting for pid 1 on another-node"); waited != (tc.age == 0) {
				t.Errorf("log %q; want a line saying the cell waits exactly when the lock is fresh", log.String())
			}
			if tc.trains {
				if err != nil || m == nil || res.Steps != 2 {
					t.Fatalf("%+v, %v; want the cell trained", res, err)
				}
				if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the lock is still there after the cell: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v, want the wait ended by the context", err)
			}
			if now, _ := os.ReadFile(lock); string(now) != string(b0) {
				t.Errorf("a live holder's lock was taken over: %s", now)
			}
		})
	}
}
