package kernel

import "golang.org/x/sys/cpu"

// availablePeakLoops lists the ceilings' loops this CPU runs (the assembly of _asm's fmaPeak and bf16DotPeak).
func availablePeakLoops() []peakLoop {
	var l []peakLoop
	avx512 := cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW
	if avx512 {
		l = append(l, peakLoop{CeilingFMA, "VFMADD231PS zmm", 96 * 32, fmaPeakAVX512})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		l = append(l, peakLoop{CeilingFMA, "VFMADD231PS ymm", 48 * 16, fmaPeakAVX2})
	}
	if avx512 && cpu.X86.HasAVX512BF16 {
		l = append(l, peakLoop{CeilingBF16Dot, "VDPBF16PS zmm", 96 * 64, bf16DotPeakAVX512})
	}
	return l
}
