package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/optim"
)

type benchCmd struct {
	Preset  string   `default:"tiny" help:"Model preset: tiny, small, medium, tiny-moe, small-moe or a scale preset (see smallinit init --help)."`
	Set     []string `placeholder:"KEY=VALUE" help:"Override a model config key; repeatable."`
	Batch   int      `help:"Sequences per step (default: the preset's)."`
	Steps   int      `default:"10" help:"Timed steps."`
	Warmup  int      `default:"2" help:"Untimed steps first."`
	Threads int      `help:"Worker threads (default: GOMAXPROCS)."`
	Peak    float64  `default:"225" help:"Peak fp32 GFLOP/s the model FLOP/s are compared to."`
	Kernels bool     `help:"Also measure matmul GFLOP/s on the training shapes."`
	Prec    string   `name:"precision" default:"f32" enum:"f32,bf16" help:"Matmul precision, as train.precision: f32 or bf16."`
	JSON    bool     `name:"json" help:"Print one JSON object."`
	Profile string   `name:"cpuprofile" type:"path" help:"Write a CPU profile of the timed steps (go tool pprof)."`
}

// benchResult is what bench reports; times are medians over the timed steps.
type benchResult struct {
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
	PeakShare   float64       `json:"peak_share"`
	PeakMemMB   float64       `json:"peak_mem_mb"`
	Loss        float64       `json:"last_loss"`
	Kernels     []kernelBench `json:"kernels,omitempty"`
}

type kernelBench struct {
	Shape  string  `json:"shape"`
	GFLOPs float64 `json:"gflops"`
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

func (cmd *benchCmd) Run() error {
	c, p, err := configFromPreset(cmd.Preset, cmd.Set)
	if err != nil {
		return err
	}
	if cmd.Batch == 0 {
		cmd.Batch = p.Batch
	}
	if cmd.Batch < 1 || cmd.Steps < 1 || cmd.Warmup < 0 {
		return fmt.Errorf("--batch, --steps must be positive and --warmup non-negative")
	}
	// Model, gradients, activations and AdamW's moments must fit: a preset too large for this machine (the
	// study's 1.5b) is an error, not an out-of-memory kill.
	if err := model.CheckMemory(c, cmd.Batch, 8*float64(c.NumParams())); err != nil {
		return fmt.Errorf("bench %s: %w", cmd.Preset, err)
	}
	pool := kernel.NewPool(cmd.Threads)
	defer pool.Close()
	m, err := model.New(c, cmd.Batch, pool)
	if err != nil {
		return err
	}
	if cmd.Prec == "bf16" && !kernel.HasBF16() {
		return fmt.Errorf("--precision bf16: this CPU has no AVX512_BF16 (kernels: %s)", kernel.Impl())
	}
	m.SetBF16Matmuls(cmd.Prec == "bf16")
	if _, err := gammainit.Apply(m, gammainit.Default(), 0); err != nil {
		return err
	}
	opt, err := optim.NewAdamW(optim.DefaultAdamW(), m.Specs, pool)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := cmd.Batch * c.SeqLen
	in, tg := make([]int32, n), make([]int32, n)
	for i := range in {
		in[i], tg[i] = int32(rng.IntN(c.Vocab)), int32(rng.IntN(c.Vocab))
	}
	var fwd, bwd, opt_, step []float64
	var loss float64
	for s := 0; s < cmd.Warmup+cmd.Steps; s++ {
		if s == cmd.Warmup && cmd.Profile != "" {
			f, err := os.Create(cmd.Profile)
			if err != nil {
				return fmt.Errorf("cpu profile: %w", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return fmt.Errorf("cpu profile %s: %w", cmd.Profile, err)
			}
			defer pprof.StopCPUProfile()
		}
		t0 := time.Now()
		loss, err = m.Forward(in, tg)
		if err != nil {
			return err
		}
		t1 := time.Now()
		m.ZeroGrads()
		m.Backward()
		t2 := time.Now()
		scale := optim.ClipScale(opt.GradNorm(m.Grads.Flat), 1)
		opt.Update(m.Params.Flat, m.Grads.Flat, 3e-4, scale)
		t3 := time.Now()
		if s >= cmd.Warmup {
			fwd = append(fwd, t1.Sub(t0).Seconds())
			bwd = append(bwd, t2.Sub(t1).Seconds())
			opt_ = append(opt_, t3.Sub(t2).Seconds())
			step = append(step, t3.Sub(t0).Seconds())
		}
		if !cmd.JSON {
			fmt.Fprintf(os.Stderr, "\rstep %d/%d  %.3fs", s+1, cmd.Warmup+cmd.Steps, t3.Sub(t0).Seconds())
		}
	}
	if !cmd.JSON {
		fmt.Fprintln(os.Stderr)
	}
	r := benchResult{Tool: "smallinit", Preset: cmd.Preset, Impl: kernel.Impl(), Precision: cmd.Prec, Threads: pool.Workers(),
		Batch: cmd.Batch, SeqLen: c.SeqLen, StepS: median(step), ForwardS: median(fwd), BackwardS: median(bwd),
		OptimizerS: median(opt_), Loss: loss}
	r.TokensPerS = float64(n) / r.StepS
	r.ModelGFLOPs = c.FLOPsPerToken() * r.TokensPerS / 1e9
	r.PeakShare = r.ModelGFLOPs / cmd.Peak
	r.PeakMemMB = peakMemMB()
	if cmd.Kernels {
		r.Kernels = benchKernels(pool)
	}
	if cmd.JSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("preset %s (%s), batch %d × T %d, %d threads, kernels %s\n", cmd.Preset, describe(c), r.Batch, r.SeqLen, r.Threads, r.Impl)
	fmt.Printf("tokens/s     %10.0f\n", r.TokensPerS)
	fmt.Printf("step         %10.4f s  (forward %.4f, backward %.4f, optimizer %.4f)\n", r.StepS, r.ForwardS, r.BackwardS, r.OptimizerS)
	fmt.Printf("model FLOP/s %10.1f GFLOP/s = %.0f%% of %.0f (FLOPs/token = 6·N_matmul + 12·L·T·d = %.3g)\n", r.ModelGFLOPs, 100*r.PeakShare, cmd.Peak, c.FLOPsPerToken())
	fmt.Printf("peak memory  %10.0f MB\n", r.PeakMemMB)
	for _, k := range r.Kernels {
		fmt.Printf("gemm %-26s %7.1f GFLOP/s\n", k.Shape, k.GFLOPs)
	}
	return nil
}

// benchKernels times each training matmul shape (median of 5 runs after one warm-up).
func benchKernels(pool *kernel.Pool) []kernelBench {
	var out []kernelBench
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
		out = append(out, kernelBench{Shape: s.Name, GFLOPs: 2 * float64(s.M) * float64(s.N) * float64(s.K) / median(ts) / 1e9})
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
