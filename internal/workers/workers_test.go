package workers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestEach: every index runs exactly once on at most jobs goroutines; a cancelled context stops the hand-out
// and the count says how far it got.
func TestEach(t *testing.T) {
	for _, tc := range []struct{ n, jobs int }{{0, 2}, {1, 1}, {7, 2}, {5, 0}, {3, 8}} {
		var seen [16]atomic.Int32
		var running, peak atomic.Int32
		got := Each(context.Background(), tc.n, tc.jobs, func(i int) {
			r := running.Add(1)
			for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
			}
			seen[i].Add(1)
			running.Add(-1)
		})
		if got != tc.n {
			t.Errorf("n %d jobs %d: handed out %d", tc.n, tc.jobs, got)
		}
		for i := range tc.n {
			if seen[i].Load() != 1 {
				t.Errorf("n %d jobs %d: index %d ran %d times", tc.n, tc.jobs, i, seen[i].Load())
			}
		}
		if p := int(peak.Load()); p > max(1, tc.jobs) {
			t.Errorf("n %d jobs %d: %d at once", tc.n, tc.jobs, p)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	got := Each(ctx, 10, 1, func(i int) {
		ran.Add(1)
		if i == 2 {
			cancel()
		}
	})
	if got < 3 || got > 4 || int(ran.Load()) != got {
		t.Errorf("cancelled after index 2: handed out %d, ran %d", got, ran.Load())
	}
}

// TestEachOnWorkerOwnsItsCalls: the worker number is below jobs, and no two calls on one worker overlap, so a
// resource indexed by it is never shared between concurrent calls.
func TestEachOnWorkerOwnsItsCalls(t *testing.T) {
	const jobs, n = 3, 40
	var busy [jobs]atomic.Int32
	var bad, ran atomic.Int32
	got := EachOn(context.Background(), n, jobs, func(w, i int) {
		if w < 0 || w >= jobs || busy[w].Add(1) != 1 {
			bad.Add(1)
		}
		ran.Add(1)
		time.Sleep(100 * time.Microsecond) // long enough for an overlapping call to be seen
		if w >= 0 && w < jobs {
			busy[w].Add(-1)
		}
	})
	if got != n || ran.Load() != n || bad.Load() != 0 {
		t.Errorf("handed out %d, ran %d, %d calls on a bad or busy worker", got, ran.Load(), bad.Load())
	}
}
