package kernel

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Pool is a persistent set of worker goroutines plus the per-worker scratch
// memory (GEMM packing buffers) they use. The goroutines are started once by
// NewPool; idle workers block on a channel, so an idle Pool costs no CPU.
// A Pool runs one For or Gemm at a time: its methods must not be called
// concurrently, except GemmOn from inside a For body (each worker with its own
// index).
type Pool struct {
	n      int
	impl   *impl
	wake   []chan struct{} // one per helper worker (index 0 unused)
	done   chan struct{}
	left   atomic.Int32 // helpers still running the current job
	closed bool
	// noShareA turns off the shared packed A of parallel products (gemmJob.shareA) so that the benchmark
	// can time both ways in one process; the results are the same either way.
	noShareA bool

	job func(w int) // the job the helpers run

	// Current For call.
	forBody   func(worker, lo, hi int)
	forN      int
	forChunks int
	forNext   atomic.Int64
	forFn     func(w int)

	// Current parallel Gemm call.
	g      gemmJob
	gemmFn func(w int)

	scratch []scratch
}

// scratch is one worker's packing memory, grown on demand and then reused.
type scratch struct {
	a    []float32 // packed A block, MC×KC in MR-row panels
	b    []float32 // packed B block for GemmOn, KC×NC in NR-column panels
	tile []float32 // MR×NR result of an edge tile
	args gemmArgs  // operands of the worker's current GemmOn
	_    [64]byte  // keep workers' headers on separate cache lines
}

// MaxWorkers is the most workers a pool takes: far above any machine this runs on, far below what would
// exhaust memory with per-worker scratch (a million workers took 2.2 GB before failing).
const MaxWorkers = 1024

// NewPool starts workers-1 goroutines; the caller of For and Gemm acts as
// worker 0. workers <= 0 means runtime.GOMAXPROCS(0).
func NewPool(workers int) *Pool { return newPoolImpl(workers, active) }

func newPoolImpl(workers int, im *impl) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers > MaxWorkers {
		panic(fmt.Sprintf("kernel: NewPool(%d): at most %d workers", workers, MaxWorkers))
	}
	p := &Pool{
		n:       workers,
		impl:    im,
		wake:    make([]chan struct{}, workers),
		done:    make(chan struct{}, 1),
		scratch: make([]scratch, workers),
	}
	p.forFn = p.forWorker
	p.gemmFn = p.gemmWorker
	for w := 1; w < workers; w++ {
		p.wake[w] = make(chan struct{}, 1)
		go p.helper(w)
	}
	return p
}

// Close stops the worker goroutines. Later calls still work, single-threaded
// on the caller. Close is idempotent.
func (p *Pool) Close() {
	if p.closed {
		return
	}
	p.closed = true
	for w := 1; w < p.n; w++ {
		close(p.wake[w])
	}
}

// Workers returns the number of workers, the caller included. Worker indices
// passed to For bodies and accepted by GemmOn are in [0, Workers()).
func (p *Pool) Workers() int { return p.n }

func (p *Pool) helper(w int) {
	for range p.wake[w] {
		p.job(w)
		if p.left.Add(-1) == 0 {
			p.done <- struct{}{}
		}
	}
}

// parallel reports whether jobs can be spread over helper goroutines.
func (p *Pool) parallel() bool { return p.n > 1 && !p.closed }

// run calls job(w) on every worker, the caller being worker 0, and returns
// when all have returned.
func (p *Pool) run(job func(w int)) {
	p.job = job
	p.left.Store(int32(p.n - 1))
	for w := 1; w < p.n; w++ {
		p.wake[w] <- struct{}{}
	}
	job(0)
	<-p.done
	p.job = nil
}

// For splits [0, n) into contiguous chunks of at least grain items and calls
// body(worker, lo, hi) for each chunk, the chunks being taken dynamically by
// all workers (the caller participates as worker 0), and returns when every
// chunk is done. A worker may get several chunks, or none. If n <= grain or
// Workers() == 1 it runs body(0, 0, n) inline. For allocates nothing; body
// should be a func value created once, not a fresh closure per call. body
// must not call For or Gemm, but may call GemmOn(worker, ...).
func (p *Pool) For(n, grain int, body func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	if n <= grain || !p.parallel() {
		body(0, 0, n)
		return
	}
	// Up to 4 chunks per worker balance a noisy machine without making the
	// chunks needlessly small.
	p.forBody, p.forN, p.forChunks = body, n, min(n/grain, 4*p.n)
	p.forNext.Store(0)
	p.run(p.forFn)
	p.forBody = nil
}

func (p *Pool) forWorker(w int) {
	for {
		i := int(p.forNext.Add(1) - 1)
		if i >= p.forChunks {
			return
		}
		p.forBody(w, i*p.forN/p.forChunks, (i+1)*p.forN/p.forChunks)
	}
}

// barrier is a reusable spinning barrier for the workers of one job. Waits
// are short (a B block pack), so it spins, yielding the processor between
// polls so that it also works with more workers than GOMAXPROCS.
type barrier struct {
	arrived atomic.Int32
	_       [60]byte
	gen     atomic.Uint32
	_       [60]byte
}

func (b *barrier) wait(n int) {
	if n == 1 {
		return
	}
	gen := b.gen.Load()
	if b.arrived.Add(1) == int32(n) {
		b.arrived.Store(0)
		b.gen.Add(1)
		return
	}
	for spin := 1; b.gen.Load() == gen; spin++ {
		if spin%256 == 0 {
			runtime.Gosched()
		}
	}
}

// growAligned returns buf if it holds n elements, else a new 64-byte aligned
// slice of n elements.
func growAligned(buf []float32, n int) []float32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	raw := make([]float32, n+16)
	off := int((64 - uintptr(unsafe.Pointer(&raw[0]))&63) & 63 / 4)
	return raw[off : off+n : off+n]
}
