// Package workers runs numbered jobs on a fixed number of goroutines: the one dispatch loop of every caller
// that trains runs side by side (a sweep's packed runs, a plan's groups of arms, an anchor diagram's cells).
package workers

import (
	"context"
	"sync"
)

// Each calls f(i) for i = 0 … n−1 on jobs goroutines (at least one), handing the indices out in order. Once
// ctx is done it hands out no more; it returns, after every call has returned, how many indices it handed
// out (n unless ctx ended first), so that the caller can mark the rest as not started.
func Each(ctx context.Context, n, jobs int, f func(i int)) int {
	return EachOn(ctx, n, jobs, func(_, i int) { f(i) })
}

// EachOn is Each that also tells f which goroutine, 0 … jobs−1, runs index i, so that a caller can give each
// goroutine its own resources (a kernel pool, say) without sharing them between concurrent calls.
func EachOn(ctx context.Context, n, jobs int, f func(worker, i int)) int {
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range max(1, jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(w, i)
			}
		}()
	}
	sent := 0
dispatch:
	for ; sent < n; sent++ {
		select {
		case work <- sent:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	return sent
}
