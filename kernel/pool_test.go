package kernel

import (
	"sync/atomic"
	"testing"
)

func TestForCoversOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 5} {
		p := NewPool(workers)
		for _, n := range []int{0, 1, 2, 3, 7, 8, 64, 100, 1000} {
			for _, grain := range []int{0, 1, 2, 3, 7, 64, 2000} {
				hits := make([]atomic.Int32, n)
				var bad atomic.Int32
				p.For(n, grain, func(w, lo, hi int) {
					if w < 0 || w >= workers || lo < 0 || hi > n || lo >= hi {
						bad.Add(1)
					}
					if n > max(grain, 1) && workers > 1 && hi-lo < grain {
						bad.Add(1)
					}
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				})
				if bad.Load() != 0 {
					t.Fatalf("workers=%d n=%d grain=%d: bad chunk", workers, n, grain)
				}
				for i := range hits {
					if h := hits[i].Load(); h != 1 {
						t.Fatalf("workers=%d n=%d grain=%d: index %d done %d times", workers, n, grain, i, h)
					}
				}
			}
		}
		p.Close()
		p.Close()
		// After Close, For runs inline.
		sum := 0
		p.For(10, 1, func(w, lo, hi int) { sum += hi - lo })
		if sum != 10 {
			t.Fatalf("For after Close covered %d", sum)
		}
	}
}

func TestForUsesAllWorkers(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var seen [2]atomic.Int32
	body := func(w, lo, hi int) {
		seen[w].Add(1)
		for i := 0; i < 200000; i++ {
			sinkInt.Add(0)
		}
	}
	for i := 0; i < 500 && seen[1].Load() == 0; i++ {
		p.For(8, 1, body)
	}
	if seen[1].Load() == 0 {
		t.Fatal("worker 1 never ran a chunk")
	}
}

var sinkInt atomic.Int64

func TestForNoAlloc(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	var total atomic.Int64
	body := func(w, lo, hi int) { total.Add(int64(hi - lo)) }
	p.For(100, 1, body)
	if allocs := testing.AllocsPerRun(100, func() { p.For(100, 1, body) }); allocs != 0 {
		t.Fatalf("For: %v allocations per call", allocs)
	}
}

// BenchmarkFor measures the fixed cost of a For call with a trivial body.
func BenchmarkFor(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	body := func(w, lo, hi int) {}
	for b.Loop() {
		p.For(p.Workers(), 1, body)
	}
}
