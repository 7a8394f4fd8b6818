package train

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/optim"
	"github.com/smallinit/smallinit/recipe"
)

// BenchOptions set a throughput measurement.
type BenchOptions struct {
	Batch   int    // sequences per step
	Steps   int    // timed steps
	Warmup  int    // untimed steps first
	Threads int    // worker threads (0: GOMAXPROCS)
	Peaks   bool   // measure the ceilings of the precision on the same threads after the timed steps
	Kernels bool   // also time each training matmul shape
	Profile string // write a CPU profile of the timed steps to this file ("": none)
	// Precision of the matmul operands: "f32" (or "") or "bf16" (refused on a CPU with neither AVX512_BF16 nor AVX2+FMA).
	Precision string
	Log       io.Writer
	// Progress rewrites one status line on Log (a terminal); false writes a line per step, which a pipe or a
	// log file keeps readable (a "\r" per step there is one long line).
	Progress bool
}

// BenchResult is a throughput measurement (`smallinit bench --json` prints it); times are medians over the
// timed steps.
type BenchResult struct {
	Tool        string        `json:"tool"`
	Preset      string        `json:"preset"`
	Impl        string        `json:"kernel_impl"`
	Precision   string        `json:"precision"`
	Threads     int           `json:"threads"`
	Batch       int           `json:"batch"`
	SeqLen      int           `json:"seq_len"`
	TokensPerS  float64       `json:"tokens_per_s"`
	StepS       float64       `json:"step_s"`
	ForwardS    float64       `json:"forward_s"`
	BackwardS   float64       `json:"backward_s"`
	OptimizerS  float64       `json:"optimizer_s"`
	ModelGFLOPs float64       `json:"model_gflops"`
	CPU         string        `json:"cpu"`      // kernel.CPUModel: the processor and the kernel path
	Ceilings    []Ceiling     `json:"ceilings"` // with Peaks: the model FLOP/s against each ceiling of the precision
	PeakMemMB   float64       `json:"peak_mem_mb"`
	Loss        float64       `json:"last_loss"`
	Kernels     []KernelBench `json:"kernels,omitempty"`
}

// Ceiling is the model FLOP/s read against one arithmetic ceiling measured on the bench's threads.
type Ceiling struct {
	kernel.Peak
	Share float64 `json:"share"` // model GFLOP/s over the ceiling's
}

// ceilingsOf are the ceilings the model FLOP/s of a precision are read against: its row's in the precision
// table (float32 FMAs for an unknown name, which Benchmark refuses anyway).
func ceilingsOf(precision string) []kernel.Ceiling {
	p, err := ParsePrecision(precision)
	if err == nil {
		for _, k := range PrecisionKinds() {
			if k.Precision == p {
				return k.Ceilings
			}
		}
	}
	return []kernel.Ceiling{kernel.CeilingFMA}
}

// KernelBench is one matmul shape's GFLOP/s.
type KernelBench struct {
	Shape  string  `json:"shape"`
	GFLOPs float64 `json:"gflops"`
}

// FwdBwdTokensPerS is the tokens per second of the forward and backward passes alone (no optimizer step):
// what a plan's sizing divides its budget by.
func (r BenchResult) FwdBwdTokensPerS() float64 {
	return float64(r.Batch*r.SeqLen) / (r.ForwardS + r.BackwardS)
}

// Benchmark times training steps (forward, backward, AdamW) of a γ = 1 model of config c on random tokens.
// The model, its gradients, activations and AdamW's moments must fit this machine's memory.
func Benchmark(c arch.Config, o BenchOptions) (BenchResult, error) {
	if o.Batch < 1 || o.Steps < 1 || o.Warmup < 0 {
		return BenchResult{}, fmt.Errorf("bench: batch %d and steps %d must be positive and warmup %d non-negative", o.Batch, o.Steps, o.Warmup)
	}
	prec, err := nativePrecision(o.Precision)
	if err != nil {
		return BenchResult{}, err
	}
	o.Precision = prec.String()
	if err := model.CheckMemory(c, o.Batch, 8*float64(c.NumParams())); err != nil {
		return BenchResult{}, err
	}
	pool := kernel.NewPool(o.Threads)
	defer pool.Close()
	m, err := model.New(c, o.Batch, pool)
	if err != nil {
		return BenchResult{}, err
	}
	m.SetPrecision(prec)
	if _, err := gammainit.Apply(m, recipe.DefaultInit(), 0); err != nil {
		return BenchResult{}, err
	}
	opt, err := optim.NewAdamW(recipe.DefaultAdamW(), m.Specs, pool)
	if err != nil {
		return BenchResult{}, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := o.Batch * c.SeqLen
	in, tg := make([]int32, n), make([]int32, n)
	for i := range in {
		in[i], tg[i] = int32(rng.IntN(c.Vocab)), int32(rng.IntN(c.Vocab))
	}
	var fwd, bwd, opts, step []float64
	var loss float64
	for s := 0; s < o.Warmup+o.Steps; s++ {
		if s == o.Warmup && o.Profile != "" {
			f, err := os.Create(o.Profile)
			if err != nil {
				return BenchResult{}, fmt.Errorf("cpu profile: %w", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return BenchResult{}, fmt.Errorf("cpu profile %s: %w", o.Profile, err)
			}
			defer pprof.StopCPUProfile()
		}
		t0 := time.Now()
		if loss, err = m.Forward(in, tg); err != nil {
			return BenchResult{}, err
		}
		t1 := time.Now()
		m.ZeroGrads()
		m.Backward()
		t2 := time.Now()
		opt.Update(m.Params.Flat, m.Grads.Flat, 3e-4, optim.ClipScale(opt.GradNorm(m.Grads.Flat), 1))
		t3 := time.Now()
		if s >= o.Warmup {
			fwd = append(fwd, t1.Sub(t0).Seconds())
			bwd = append(bwd, t2.Sub(t1).Seconds())
			opts = append(opts, t3.Sub(t2).Seconds())
			step = append(step, t3.Sub(t0).Seconds())
		}
		switch {
		case o.Log != nil && o.Progress:
			fmt.Fprintf(o.Log, "\rstep %d/%d  %.3fs", s+1, o.Warmup+o.Steps, t3.Sub(t0).Seconds())
		case o.Log != nil:
			fmt.Fprintf(o.Log, "step %d/%d  %.3fs\n", s+1, o.Warmup+o.Steps, t3.Sub(t0).Seconds())
		}
	}
	if o.Log != nil && o.Progress {
		fmt.Fprintln(o.Log)
	}
	r := BenchResult{Tool: "smallinit", Impl: kernel.Impl(), CPU: kernel.CPUModel(), Precision: o.Precision, Threads: pool.Workers(),
		Batch: o.Batch, SeqLen: c.SeqLen, StepS: median(step), ForwardS: median(fwd), BackwardS: median(bwd), OptimizerS: median(opts), Loss: loss}
	r.TokensPerS = float64(n) / r.StepS
	r.ModelGFLOPs = c.FLOPsPerToken() * r.TokensPerS / 1e9
	if o.Peaks {
		for _, ce := range ceilingsOf(o.Precision) {
			if !kernel.HasCeiling(ce) {
				continue // bf16 on float32 FMAs (AVX2): no VDPBF16PS to measure, the FMA peak is its ceiling
			}
			p, err := kernel.MeasurePeak(ce, r.Threads, 0)
			if err != nil {
				return BenchResult{}, err
			}
			r.Ceilings = append(r.Ceilings, Ceiling{Peak: p, Share: r.ModelGFLOPs / p.GFLOPs})
		}
	}
	r.PeakMemMB = peakMemMB()
	if o.Kernels {
		r.Kernels = benchKernels(pool)
	}
	return r, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchKernels times each training matmul shape (median of 5 runs after one warm-up).
func benchKernels(pool *kernel.Pool) []KernelBench {
	var out []KernelBench
	for _, s := range kernel.BenchShapes() {
		a, b, c := make([]float32, s.M*s.K), make([]float32, s.K*s.N), make([]float32, s.M*s.N)
		for i := range a {
			a[i] = float32(i%7) * 0.1
		}
		for i := range b {
			b[i] = float32(i%5) * 0.1
		}
		lda, ldb := s.K, s.N
		if s.TransA {
			lda = s.M
		}
		if s.TransB {
			ldb = s.K
		}
		var ts []float64
		for r := 0; r < 6; r++ {
			t0 := time.Now()
			pool.Gemm(s.TransA, s.TransB, s.M, s.N, s.K, a, lda, b, ldb, c, s.N, false)
			if r > 0 {
				ts = append(ts, time.Since(t0).Seconds())
			}
		}
		out = append(out, KernelBench{Shape: s.Name, GFLOPs: 2 * float64(s.M) * float64(s.N) * float64(s.K) / median(ts) / 1e9})
	}
	return out
}

// peakMemMB is the process's peak resident set (VmHWM on Linux; the Go heap's Sys elsewhere).
func peakMemMB() float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / (1 << 20)
}
