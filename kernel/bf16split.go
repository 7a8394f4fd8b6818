package kernel

// bf16 products on float32 FMA units (split panels).
//
// A CPU without VDPBF16PS computes the BF16 precision's exact results with
// float32 fused multiply-adds: the product of two bf16 values is exact in
// float32, so fma(acc, a, b) on the bf16 values is the twin's bf16FMA as long
// as the units flush tiny results the way VDPBF16PS does, which MXCSR.FTZ
// does (x86 detects tininess after rounding, as VDPBF16PS; see bf16FMA). The
// split packers are the float32 packers followed by a pass that rounds the
// packed block to bf16 in place (roundBF16AVX2): panel step s holds bf16(value
// s), and an odd k's missing last value is a zero step. (The AVX2 packers round
// as they pack instead: packABF16AVX2, packBBF16AVX2.) The float32
// micro-kernel's bf16 variant (gemmKernAVX2_6x16_ftz, gemmKernAVX512_14x32_ftz)
// runs under FTZ and takes each pair of steps odd first (VDPBF16PS's order),
// so it performs exactly the twin's fused multiply-adds in the twin's order,
// and KC = 2·bf16KC values keeps its block sums. Inputs need no DAZ: a bf16
// operand is never denormal (roundBF16 flushes them) and, under FTZ, neither
// is an accumulator. TestGemmBF16 checks every split kernel against the twin
// bit for bit.
//
// The panels hold twice the bytes of pair panels (one float32 per value, as
// float32 panels do), so the split kernels have the float32 kernels' speed,
// not VDPBF16PS's.

// splitPairs returns validated args as the product on split bf16 panels: k
// is the depth rounded up to even (a zero step pads an odd depth), kf the
// depth in values.
func (a gemmArgs) splitPairs() gemmArgs {
	a.kf = a.k
	a.k = 2 * ((a.k + 1) / 2)
	return a
}

// splitBF16 is the split-panel bf16 gemmImpl of a float32 one: f32's tile and
// blocking with KC = 2·bf16KC values, kern its bf16 micro-kernel (FTZ, odd
// steps first), and packA and packB, f32's packers with each value rounded
// to bf16 (roundAfter, or packers that round as they pack), behind
// splitPacker.
func splitBF16(f32 gemmImpl, kern gemmKernel, packA, packB packFunc) gemmImpl {
	return gemmImpl{
		desc: f32.desc + " on bf16 values (MXCSR.FTZ)",
		mr:   f32.mr, nr: f32.nr,
		mc: f32.mc, kc: 2 * bf16KC, nc: f32.nc,
		kern:  kern,
		packA: splitPacker(packA, true),
		packB: splitPacker(packB, false),
		split: true,
	}
}

// splitPacker turns a rounding packer (the float32 packer's panels, each value
// rounded to bf16) into a split bf16 one: a block with all its values inside
// kf is packed by it; the last block of an odd kf, by splitPackGeneric.
func splitPacker(pack packFunc, isA bool) packFunc {
	return func(im *gemmImpl, a *gemmArgs, dst []float32, i0, ni, pc, kc int) {
		if pc+kc > a.kf {
			w := im.nr
			if isA {
				w = im.mr
			}
			splitPackGeneric(a, isA, dst, i0, ni, pc, kc, w)
			return
		}
		pack(im, a, dst, i0, ni, pc, kc)
	}
}

// roundAfter is the rounding packer of a float32 one: f32's panels, rounded
// to bf16 in place by round.
func roundAfter(f32 packFunc, round func([]float32), isA bool) packFunc {
	return func(im *gemmImpl, a *gemmArgs, dst []float32, i0, ni, pc, kc int) {
		w := im.nr
		if isA {
			w = im.mr
		}
		f32(im, a, dst, i0, ni, pc, kc)
		round(dst[:ceilDiv(ni, w)*w*kc])
	}
}

// roundBF16Generic rounds every element of d to bf16 in place (RoundBF16).
func roundBF16Generic(d []float32) {
	for i, x := range d {
		d[i] = RoundBF16(x)
	}
}

// splitPackGeneric packs steps [pc, pc+kc) (values; pc and kc even) of rows
// (isA: of op(A)) or columns (of op(B)) [i0, i0+ni) into split panels of w,
// each value rounded to bf16, zero past kf or past ni.
func splitPackGeneric(a *gemmArgs, isA bool, dst []float32, i0, ni, pc, kc, w int) {
	src, ld, kAcross := a.a, a.lda, a.transA
	if !isA {
		src, ld, kAcross = a.b, a.ldb, !a.transB
	}
	for q := 0; q*w < ni; q++ {
		d := dst[q*kc*w : (q+1)*kc*w]
		for s := 0; s < kc; s++ {
			p := pc + s
			for r := 0; r < w; r++ {
				v := float32(0)
				if i := q*w + r; i < ni && p < a.kf {
					if kAcross {
						v = src[p*ld+i0+i]
					} else {
						v = src[(i0+i)*ld+p]
					}
				}
				d[s*w+r] = RoundBF16(v)
			}
		}
	}
}
