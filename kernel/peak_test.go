package kernel

import (
	"testing"
	"time"
)

// TestMeasurePeakOrdersTheCeilings: on this CPU the float32 FMA peak is measured on every thread and, where
// AVX512_BF16 is native, the bf16 dot-product peak too; VDPBF16PS does twice the FLOP of VFMADD231PS per
// instruction, so its ceiling is not below the FMA's on any CPU that issues them at the same rate (an Intel
// with AMX issues VDPBF16PS at half rate: equal there). A CPU without the instruction gets an error, not 0.
func TestMeasurePeakOrdersTheCeilings(t *testing.T) {
	fma, err := MeasurePeak(CeilingFMA, 0, 50*time.Millisecond)
	if _, ok := loopFor(CeilingFMA); !ok {
		if err == nil {
			t.Error("no FMA loop, no error")
		}
		t.Skip("no FMA on this CPU")
	}
	if err != nil || !(fma.GFLOPs > 1) || fma.Threads < 1 || fma.Instruction == "" {
		t.Fatalf("FMA peak %+v, %v", fma, err)
	}
	dot, err := MeasurePeak(CeilingBF16Dot, fma.Threads, 50*time.Millisecond)
	if !HasBF16() {
		if err == nil {
			t.Errorf("bf16 dot peak without AVX512_BF16: %+v", dot)
		}
		return
	}
	if err != nil || dot.Instruction != "VDPBF16PS zmm" {
		t.Fatalf("bf16 dot peak %+v, %v", dot, err)
	}
	// A shared machine can slow one of two 50 ms measurements by 2x or more, so only a gross ordering error
	// (the bf16 loop counted at half its FLOP, or not run) is caught here; BenchmarkBF16DotPeak gives the figure.
	if dot.GFLOPs < 0.4*fma.GFLOPs {
		t.Errorf("bf16 dot peak %.0f GFLOP/s, under 0.4x the FMA peak %.0f", dot.GFLOPs, fma.GFLOPs)
	}
}
