package kernel

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Ceiling is an arithmetic ceiling of this CPU: the most FLOP/s one instruction kind delivers when nothing
// else runs, measured by a loop of independent chains of it. A model's FLOP/s is read against the ceiling of
// the precision its matmuls ran in: float32 against the FMA peak, bf16 also against the dot-product peak.
type Ceiling string

const (
	// CeilingFMA is the float32 FMA peak: VFMADD231PS on the widest vectors the CPU runs (zmm or ymm), 2 FLOP
	// per lane.
	CeilingFMA Ceiling = "f32 FMA"
	// CeilingBF16Dot is the bf16 dot-product peak: VDPBF16PS on zmm, 32 bf16 products and 32 float32 additions
	// per instruction (64 FLOP), AVX512_BF16 only.
	CeilingBF16Dot Ceiling = "bf16 dot"
)

// Peak is one measured ceiling.
type Peak struct {
	Ceiling     Ceiling `json:"ceiling"`
	Instruction string  `json:"instruction"` // the instruction and register width timed
	Threads     int     `json:"threads"`
	GFLOPs      float64 `json:"gflops"` // all threads together
}

// peakLoop is one ceiling's measuring loop: run(iters) executes iters × flops floating-point operations.
type peakLoop struct {
	ceiling     Ceiling
	instruction string
	flops       float64 // per iteration
	run         func(iters int)
}

// peakLoops lists the loops this CPU runs, widest first within a ceiling (peak_amd64.go, peak_other.go).
var peakLoops = availablePeakLoops()

// loopFor returns the widest loop of a ceiling this CPU runs.
func loopFor(c Ceiling) (peakLoop, bool) {
	for _, l := range peakLoops {
		if l.ceiling == c {
			return l, true
		}
	}
	return peakLoop{}, false
}

// HasCeiling reports whether this CPU, on the kernel path chosen at init, has the instruction of ceiling c
// (MeasurePeak fails without it): the VDPBF16PS ceiling exists only where the BF16 products run on it.
func HasCeiling(c Ceiling) bool {
	_, ok := loopFor(c)
	return ok
}

// MeasurePeak times ceiling c on threads goroutines (0: GOMAXPROCS) for about d (0: 0.5 s) after a short
// warm-up that lets the cores reach their vector clock, and returns the GFLOP/s of all threads together: the
// best of five equal slices of d, since a ceiling is what the cores deliver when they get to run, and on a
// shared machine other jobs take some slices. It is the loop BenchmarkFMAPeak and BenchmarkBF16DotPeak time.
// It fails where the CPU lacks the instruction (no AVX2/AVX-512 FMA, no AVX512_BF16).
func MeasurePeak(c Ceiling, threads int, d time.Duration) (Peak, error) {
	l, ok := loopFor(c)
	if !ok {
		return Peak{}, fmt.Errorf("kernel: this CPU has no %s instruction to measure (kernels: %s)", c, Impl())
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if d <= 0 {
		d = 500 * time.Millisecond
	}
	const chunk = 1 << 14 // iterations between clock reads: about 0.1-0.5 ms
	// rate runs the loop on every thread for about d and returns its GFLOP/s.
	rate := func(d time.Duration) float64 {
		var wg sync.WaitGroup
		counts := make([]int, threads)
		t0 := time.Now()
		for w := range threads {
			wg.Go(func() {
				for time.Since(t0) < d {
					l.run(chunk)
					counts[w] += chunk
				}
			})
		}
		wg.Wait()
		iters := 0
		for _, n := range counts {
			iters += n
		}
		return l.flops * float64(iters) / time.Since(t0).Seconds() / 1e9
	}
	rate(d / 5) // warm-up
	best := 0.0
	for range 5 {
		best = max(best, rate(d/5))
	}
	return Peak{Ceiling: c, Instruction: l.instruction, Threads: threads, GFLOPs: best}, nil
}
