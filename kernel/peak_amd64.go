package kernel

import "golang.org/x/sys/cpu"

// availablePeakLoops lists the ceilings' loops this CPU runs (the assembly of _asm's fmaPeak and bf16DotPeak)
// on the kernel path chosen at init: with KernelEnv forcing "avx2" on an AVX-512 CPU, the ymm loop only, so
// that a forced path's model FLOP/s are read against its own ceiling.
func availablePeakLoops() []peakLoop {
	var l []peakLoop
	avx512 := cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW && active.name == "avx512"
	if avx512 {
		l = append(l, peakLoop{CeilingFMA, "VFMADD231PS zmm", 96 * 32, fmaPeakAVX512})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA && active.name != "generic" {
		l = append(l, peakLoop{CeilingFMA, "VFMADD231PS ymm", 48 * 16, fmaPeakAVX2})
	}
	if avx512 && cpu.X86.HasAVX512BF16 && active.dpbf16 {
		l = append(l, peakLoop{CeilingBF16Dot, "VDPBF16PS zmm", 96 * 64, bf16DotPeakAVX512})
	}
	return l
}
