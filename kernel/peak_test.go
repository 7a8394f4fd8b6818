package kernel

import (
	"math"
	"testing"
	"time"
)

// TestMeasurePeakCountsItsInstructions: each ceiling's loop counts the FLOP its instructions do (the
// generator emits 4 × 24 independent chains per iteration: VFMADD231PS zmm 2 × 16 lanes, ymm 2 × 8, VDPBF16PS
// zmm 2 × 32 bf16 products), so the bf16 dot ceiling is twice the FMA's where both issue at one rate;
// MeasurePeak times the loop on the threads asked for and returns a finite positive rate, and a CPU without
// the instruction gets an error, not 0. (Timings are not compared: on a shared machine either measurement can
// be starved.)
func TestMeasurePeakCountsItsInstructions(t *testing.T) {
	want := map[string]float64{"VFMADD231PS zmm": 96 * 2 * 16, "VFMADD231PS ymm": 48 * 2 * 8, "VDPBF16PS zmm": 96 * 2 * 32}
	for _, l := range peakLoops {
		if l.flops != want[l.instruction] {
			t.Errorf("%s: %v FLOP per iteration, want %v", l.instruction, l.flops, want[l.instruction])
		}
	}
	for _, c := range []Ceiling{CeilingFMA, CeilingBF16Dot} {
		p, err := MeasurePeak(c, 2, 20*time.Millisecond)
		if _, ok := loopFor(c); !ok {
			if err == nil {
				t.Errorf("%s: no loop on this CPU, no error: %+v", c, p)
			}
			continue
		}
		if err != nil || p.Ceiling != c || p.Threads != 2 || !(p.GFLOPs > 0) || math.IsInf(p.GFLOPs, 0) {
			t.Errorf("%s: %+v, %v", c, p, err)
		}
	}
	if _, ok := loopFor(CeilingBF16Dot); ok != HasBF16() {
		t.Errorf("bf16 dot loop %v, but HasBF16 %v", ok, HasBF16())
	}
}
