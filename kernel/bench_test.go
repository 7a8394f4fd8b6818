package kernel

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// FMA peak of the development machine (Intel Xeon, family 6 model 207,
// Emerald Rapids class, KVM guest with 2 vCPUs, 2.1 GHz nominal), measured
// before anything else was written with a stand-alone loop of 24 independent
// VFMADD231PS chains (the same loop as BenchmarkFMAPeak), 12 runs on a
// mostly idle machine:
//
//	zmm, 1 thread:  119-172 GFLOP/s, median 153 (64 flop/cycle: two 512-bit FMA ports at ~2.6 GHz)
//	zmm, 2 threads: 154-326 GFLOP/s, median 271
//	ymm, 1 thread:   55-85 GFLOP/s, median 78 (32 flop/cycle)
//	ymm, 2 threads:  91-160 GFLOP/s, median 120
//
// The machine is shared: while other jobs ran, the same loop gave as little
// as 30-100 GFLOP/s on 2 threads. Compare GEMM numbers with BenchmarkFMAPeak
// run at the same time, and read GFLOP/cpu-s (flops per CPU-second actually
// received, times the workers) as the steadier figure.

// BenchmarkFMAPeak measures the float32 FMA throughput of one core and of all
// (MeasurePeak's CeilingFMA loop), on each vector width this CPU runs.
func BenchmarkFMAPeak(b *testing.B) { benchPeak(b, CeilingFMA) }

// BenchmarkBF16DotPeak measures the bf16 dot-product (VDPBF16PS) throughput of
// one core and of all (MeasurePeak's CeilingBF16Dot loop), where the CPU has
// AVX512_BF16: the ceiling of the bf16 matmuls.
func BenchmarkBF16DotPeak(b *testing.B) { benchPeak(b, CeilingBF16Dot) }

// benchPeak times ceiling c's loops: ".../zmm" on one core, ".../zmm/all" on
// every worker at once (the ceiling for the parallel GEMM benchmarks run at
// the same time on the same shared machine).
func benchPeak(b *testing.B, c Ceiling) {
	var loops []peakLoop
	for _, l := range peakLoops {
		if l.ceiling == c {
			loops = append(loops, l)
		}
	}
	if len(loops) == 0 {
		b.Skipf("this CPU has no %s instruction", c)
	}
	for _, l := range loops {
		width := l.instruction[len(l.instruction)-3:] // "zmm", "ymm"
		b.Run(width, func(b *testing.B) {
			const iters = 1 << 20
			for b.Loop() {
				l.run(iters)
			}
			b.ReportMetric(l.flops*iters*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(width+"/all", func(b *testing.B) {
			const iters = 1 << 18
			threads := runtime.GOMAXPROCS(0)
			for b.Loop() {
				var wg sync.WaitGroup
				for range threads {
					wg.Go(func() { l.run(iters) })
				}
				wg.Wait()
			}
			b.ReportMetric(l.flops*iters*float64(threads)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func hasImpl(name string) bool {
	for _, im := range available() {
		if im.name == name {
			return true
		}
	}
	return false
}

// benchGemm runs one shape on pool p (In(BF16) with bf16) and reports GFLOP/s.
func benchGemm(b *testing.B, p *Pool, s Shape, on, bf16 bool) {
	rng := rand.New(rand.NewPCG(1, 1))
	a := randSlice(rng, s.M*s.K)
	bm := randSlice(rng, s.K*s.N)
	c := make([]float32, s.M*s.N)
	lda, ldb := s.K, s.N
	if s.TransA {
		lda = s.M
	}
	if s.TransB {
		ldb = s.K
	}
	f := func() { p.Gemm(s.TransA, s.TransB, s.M, s.N, s.K, a, lda, bm, ldb, c, s.N, false) }
	if on {
		f = func() { p.GemmOn(0, s.TransA, s.TransB, s.M, s.N, s.K, a, lda, bm, ldb, c, s.N, false) }
	}
	if bf16 {
		f = func() { p.In(BF16).Gemm(s.TransA, s.TransB, s.M, s.N, s.K, a, lda, bm, ldb, c, s.N, false) }
		if on {
			f = func() { p.In(BF16).GemmOn(0, s.TransA, s.TransB, s.M, s.N, s.K, a, lda, bm, ldb, c, s.N, false) }
		}
	}
	f()
	cpu0 := processCPUSeconds()
	for b.Loop() {
		f()
	}
	b.ReportMetric(s.Flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu := processCPUSeconds() - cpu0; cpu > 0 {
		// What the workers achieve per second of CPU they actually got.
		workers := p.Workers()
		if on {
			workers = 1
		}
		b.ReportMetric(s.Flops()*float64(b.N)/cpu*float64(workers)/1e9, "GFLOP/cpu-s")
	}
}

// attentionShapes are per-head products of a 256-token sequence with head
// dimension 32 (and a 64-query block), run single-threaded with GemmOn.
var attentionShapes = []Shape{
	{Name: "256x32x256_NT", TransB: true, M: 256, K: 32, N: 256},
	{Name: "256x256x32_NN", M: 256, K: 256, N: 32},
	{Name: "64x256x32_NN", M: 64, K: 256, N: 32},
	{Name: "256x256x32_TN", TransA: true, M: 256, K: 256, N: 32},
}

// BenchmarkGemm measures the six training shapes on all workers with the
// implementation chosen at init, and the attention shapes on one thread;
// each float32 shape is followed by its In(BF16) run ("bf16/…"; the flops
// counted are the same 2·M·N·K), so that the two alternate on a noisy
// machine.
func BenchmarkGemm(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	for _, s := range BenchShapes() {
		b.Run(s.Name, func(b *testing.B) { benchGemm(b, p, s, false, false) })
		b.Run("bf16/"+s.Name, func(b *testing.B) { benchGemm(b, p, s, false, true) })
	}
	for _, s := range attentionShapes {
		b.Run("on1/"+s.Name, func(b *testing.B) { benchGemm(b, p, s, true, false) })
		b.Run("bf16/on1/"+s.Name, func(b *testing.B) { benchGemm(b, p, s, true, true) })
	}
}

// BenchmarkGemmImpl measures the training shapes with every implementation
// this CPU runs (the generic one is slow: use -benchtime=1x).
func BenchmarkGemmImpl(b *testing.B) {
	for _, im := range available() {
		p := newPoolImpl(0, im)
		for _, s := range BenchShapes() {
			b.Run(im.name+"/"+s.Name, func(b *testing.B) { benchGemm(b, p, s, false, false) })
		}
		p.Close()
	}
}

func BenchmarkVector(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{256, 4096} {
		x, y := randSlice(rng, n), randSlice(rng, n)
		for _, im := range available() {
			b.Run(fmt.Sprintf("Dot/%s/%d", im.name, n), func(b *testing.B) {
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					im.dot(x, y)
				}
			})
			b.Run(fmt.Sprintf("Axpy/%s/%d", im.name, n), func(b *testing.B) {
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					im.axpy(1e-3, x, y)
				}
			})
			b.Run(fmt.Sprintf("Exp/%s/%d", im.name, n), func(b *testing.B) {
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					im.exp(y, x)
				}
			})
			b.Run(fmt.Sprintf("MaxF/%s/%d", im.name, n), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					im.max(x)
				}
			})
		}
	}
}

// BenchmarkGemmSharedA times the weight-gradient products (Xᵀ·dY, k = the batch's tokens) of the small
// preset with the packed A shared across column groups and jc blocks and with per-task packing, alternating
// the two rounds times in one process (the machine is shared: alternation makes both see the same load), and
// reports each one's median milliseconds and the ratio per-task / shared.
func BenchmarkGemmSharedA(b *testing.B) {
	p := NewPool(0)
	defer p.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range []struct {
		name    string
		m, n, k int
	}{
		{"qkv_256x768x4096_TN", 256, 768, 4096},
		{"head_256x4096x4096_TN", 256, 4096, 4096},
		{"up_256x1408x4096_TN", 256, 1408, 4096},
	} {
		a, bm, c := randSlice(rng, s.k*s.m), randSlice(rng, s.k*s.n), make([]float32, s.m*s.n)
		for _, prec := range []string{"f32", "bf16"} {
			gemm := p.Gemm
			if prec == "bf16" {
				if !HasBF16() {
					continue
				}
				gemm = p.In(BF16).Gemm
			}
			b.Run(s.name+"_"+prec, func(b *testing.B) {
				var shared, perTask []float64
				for range b.N {
					for _, off := range []bool{false, true} {
						p.noShareA = off
						t0 := time.Now()
						gemm(true, false, s.m, s.n, s.k, a, s.m, bm, s.n, c, s.n, false)
						d := time.Since(t0).Seconds() * 1e3
						if off {
							perTask = append(perTask, d)
						} else {
							shared = append(shared, d)
						}
					}
				}
				p.noShareA = false
				ms, mp := medianOf(shared), medianOf(perTask)
				b.ReportMetric(ms, "shared-ms")
				b.ReportMetric(mp, "per-task-ms")
				b.ReportMetric(mp/ms, "per-task/shared")
			})
		}
	}
}

func medianOf(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
