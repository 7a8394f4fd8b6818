package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/train"
)

type benchCmd struct {
	Preset  string   `default:"tiny" help:"Model preset: tiny, small, medium, tiny-moe, small-moe or a scale preset (see smallinit init --help)."`
	Set     []string `placeholder:"KEY=VALUE" help:"Override a key in the one override language (run-config keys in TOML syntax; a key without a section is a model key): e.g. norm_eps=1e-12 or model.hidden_size=256 (model keys only); repeatable."`
	Batch   int      `help:"Sequences per step (default: the preset's)."`
	Steps   int      `default:"10" help:"Timed steps."`
	Warmup  int      `default:"2" help:"Untimed steps first."`
	Threads int      `help:"Worker threads (default: GOMAXPROCS)."`
	NoPeaks bool     `name:"no-peaks" help:"Do not measure the arithmetic ceilings (the f32 FMA peak and, for bf16, the VDPBF16PS dot-product peak, about 0.6 s each on the bench's threads) that the model FLOP/s are read against."`
	Kernels bool     `help:"Also measure matmul GFLOP/s on the training shapes."`
	Prec    string   `name:"precision" default:"f32" help:"Matmul operands, a precision of train's table: f32, bf16 (bf16 operands, float32 accumulation: VDPBF16PS on AVX512_BF16, float32 FMAs on AVX2, the same bits), or auto: time the eligible precisions on this model (as train.precision = \"auto\" does, nothing recorded) and bench the one chosen."`
	JSON    bool     `name:"json" help:"Print one JSON object."`
	Profile string   `name:"cpuprofile" type:"path" help:"Write a CPU profile of the timed steps (go tool pprof)."`
}

func (cmd *benchCmd) Run() error {
	c, p, err := configFromPreset(cmd.Preset, cmd.Set)
	if err != nil {
		return err
	}
	if cmd.Batch == 0 {
		cmd.Batch = p.Batch
	}
	var log io.Writer = os.Stderr
	if cmd.JSON {
		log = nil
	}
	prec := cmd.Prec
	var auto *train.PrecisionChoice
	if prec == train.PrecisionAuto {
		pc, err := train.ProbePrecision(c, cmd.Batch, cmd.Threads, 3, 2)
		if err != nil {
			return fmt.Errorf("bench %s --precision auto: %w", cmd.Preset, err)
		}
		fmt.Fprintln(os.Stderr, pc)
		auto, prec = &pc, pc.Precision
	}
	r, err := train.Benchmark(c, train.BenchOptions{Batch: cmd.Batch, Steps: cmd.Steps, Warmup: cmd.Warmup, Threads: cmd.Threads,
		Peaks: !cmd.NoPeaks, Kernels: cmd.Kernels, Profile: cmd.Profile, Precision: prec, Log: log,
		Progress: term.IsTerminal(int(os.Stderr.Fd()))})
	if err != nil {
		return fmt.Errorf("bench %s (--batch %d, --steps %d, --warmup %d): %w", cmd.Preset, cmd.Batch, cmd.Steps, cmd.Warmup, err)
	}
	r.Preset = cmd.Preset
	if cmd.JSON {
		// With --precision auto, the probe's measurement and choice ride along as "precision_auto".
		return json.NewEncoder(os.Stdout).Encode(struct {
			train.BenchResult
			Auto *train.PrecisionChoice `json:"precision_auto,omitempty"`
		}{r, auto})
	}
	fmt.Printf("preset %s (%s), batch %d × T %d, %d threads, precision %s\n", cmd.Preset, c.Describe(), r.Batch, r.SeqLen, r.Threads, r.Precision)
	fmt.Printf("cpu          %s, kernel path %s\n", r.CPU, r.Impl)
	fmt.Printf("tokens/s     %10.0f\n", r.TokensPerS)
	fmt.Printf("step         %10.4f s  (forward %.4f, backward %.4f, optimizer %.4f)\n", r.StepS, r.ForwardS, r.BackwardS, r.OptimizerS)
	fmt.Printf("model FLOP/s %10.1f GFLOP/s (FLOPs/token = 6·N_matmul + 12·L·T·d = %.3g)\n", r.ModelGFLOPs, c.FLOPsPerToken())
	for _, ce := range r.Ceilings {
		fmt.Printf("  = %3.0f%% of the %s peak, %.1f GFLOP/s (%s on %d threads, measured now)\n", 100*ce.Share, ce.Ceiling, ce.GFLOPs, ce.Instruction, ce.Threads)
	}
	fmt.Printf("peak memory  %10.0f MB\n", r.PeakMemMB)
	for _, k := range r.Kernels {
		fmt.Printf("gemm %-26s %7.1f GFLOP/s\n", k.Shape, k.GFLOPs)
	}
	return nil
}
