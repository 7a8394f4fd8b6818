// Package workers runs numbered jobs on a fixed number of goroutines: the one dispatch loop of the packed
// runs of a sweep (package sweep) and of a plan's groups of arms (package experiment).
package workers

import (
	"context"
	"sync"
)

// Each calls f(i) for i = 0 … n−1 on jobs goroutines (at least one), handing the indices out in order. Once
// ctx is done it hands out no more; it returns, after every call has returned, how many indices it handed
// out (n unless ctx ended first), so that the caller can mark the rest as not started.
func Each(ctx context.Context, n, jobs int, f func(i int)) int {
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(i)
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
