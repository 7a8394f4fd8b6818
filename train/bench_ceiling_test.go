package train

import (
	"math"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// TestBenchReadsFLOPsAgainstThePrecisionsCeilings: bench reads the model FLOP/s against ceilings measured on its
// own threads, not a fixed number: float32 against the FMA peak; bf16 against the FMA peak and, where it runs on
// VDPBF16PS, that instruction's dot-product peak, which is the higher. It names the CPU and the kernel path.
func TestBenchReadsFLOPsAgainstThePrecisionsCeilings(t *testing.T) {
	c := arch.Config{Vocab: 64, Dim: 32, FFN: 64, Layers: 1, Heads: 2, SeqLen: 16, NormEps: 1e-5, Norm: arch.NormRMS,
		AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	precisions := []string{"f32"}
	if kernel.BF16.Native() {
		precisions = append(precisions, "bf16")
	}
	for _, prec := range precisions {
		r, err := Benchmark(c, BenchOptions{Batch: 2, Steps: 1, Threads: 2, Precision: prec, Peaks: true})
		if err != nil {
			t.Fatal(err)
		}
		var want []kernel.Ceiling
		for _, ce := range ceilingsOf(prec) {
			if ce != kernel.CeilingBF16Dot || kernel.HasBF16() {
				want = append(want, ce)
			}
		}
		if len(r.Ceilings) != len(want) || r.CPU != kernel.CPUModel() {
			t.Fatalf("%s: ceilings %+v, cpu %q", prec, r.Ceilings, r.CPU)
		}
		for i, ce := range r.Ceilings {
			if ce.Ceiling != want[i] || ce.Threads != 2 || !(ce.GFLOPs > 0) || math.Abs(ce.Share-r.ModelGFLOPs/ce.GFLOPs) > 1e-12 {
				t.Errorf("%s: ceiling %d %+v, want %s on 2 threads", prec, i, ce, want[i])
			}
		}
	}
	if r, err := Benchmark(c, BenchOptions{Batch: 2, Steps: 1}); err != nil || r.Ceilings != nil {
		t.Errorf("without Peaks: ceilings %+v, %v", r.Ceilings, err)
	}
}
