package kernel

import (
	"math"
	"unsafe"
)

// bfloat16 matrix multiply.
//
// The BF16 precision (Pool.In(BF16)) computes the same product as Pool.Gemm with both operands
// rounded to bfloat16 (round to nearest even) and the products summed in
// float32. The operands stay float32 in memory: the bf16 packers convert them
// while packing, into panels of dword pairs (two bf16 of consecutive k in one
// 32-bit word, the even k in the low half), so that a k-deep product becomes
// a ⌈k/2⌉-deep one on 32-bit elements, blocked exactly like the float32 one
// (gemmArgs.k counts pairs, gemmArgs.kf values). The micro-kernel consumes
// one pair per step (on AVX512_BF16, one VDPBF16PS: 16 lanes × 2 products).
// Converting inside the packers, instead of in a pass over each operand
// before packing, saves that pass's memory traffic (about 15% of a bf16
// training step of the small preset).
//
// The result of every element is defined exactly, by the pure-Go twin
// (gemmKernBF16Generic4x4 with bf16FMA), and the assembly reproduces it bit
// for bit (TestGemmBF16MatchesTwin):
//
//   - operands: x ↦ bf16(x), round to nearest even; a float32 denormal
//     becomes a zero of its sign; NaN stays a quiet NaN (roundBF16);
//   - for each KC block of pairs (KC = 256 pairs = 512 k) an accumulator
//     starts at 0 and takes, pair by pair, acc = fma(acc, a₁, b₁) then
//     acc = fma(acc, a₀, b₀) (odd k first: VDPBF16PS's order), each a float32
//     fused multiply-add rounded to nearest even, with denormal inputs read
//     as zero and a tiny result (below 2^-126 once rounded to 24 bits with
//     an unbounded exponent) flushed to a zero of its sign (Intel SDM,
//     VDPBF16PS: "DAZ, FTZ, RNE, MXCSR neither consulted nor updated"; x86
//     detects tininess after rounding); an odd k pairs its last element with
//     a zero;
//   - the block's sum is added to C with one float32 addition (C = sum for
//     the first block unless accumulate), blocks in k order.
//
// The bf16 product of two bf16 values is exact in float32 (8-bit
// significands), so fma here only rounds the sum.

// bf16KC is the KC (in pairs) of every bf16 implementation: the result
// depends on it (see above), so the twin and the assembly must share it.
const bf16KC = 256

// HasBF16 reports whether the BF16 precision runs on AVX512_BF16 (VDPBF16PS,
// twice the float32 FMA rate). Without it the BF16 products run on float32
// FMAs (AVX2 or AVX-512: BF16.Native() still true, the float32 speed) or, on
// a CPU with neither, through the pure-Go twin; the bits are the same.
func HasBF16() bool { return active.dpbf16 }

// RoundBF16 returns x rounded to bfloat16 (nearest even; float32 denormals
// become zeros of their sign), as a float32: the value a BF16 product multiplies.
func RoundBF16(x float32) float32 {
	return math.Float32frombits(uint32(roundBF16(x)) << 16)
}

// roundBF16 is VCVTNE2PS2BF16's conversion of one value (Intel SDM,
// convert_fp32_to_bfloat16): NaN keeps its top 16 bits with the quiet bit
// set, zero and denormal become a zero of their sign, everything else is
// rounded to nearest even by adding 0x7FFF plus the kept part's lowest bit.
func roundBF16(x float32) uint16 {
	u := math.Float32bits(x)
	switch exp := u >> 23 & 0xFF; {
	case exp == 0xFF && u&0x7FFFFF != 0:
		return uint16(u>>16) | 0x40
	case exp == 0:
		return uint16(u>>16) & 0x8000
	}
	return uint16((u + 0x7FFF + (u >> 16 & 1)) >> 16)
}

// bf16Pair packs two values into one dword, lo in the low half.
func bf16Pair(lo, hi float32) uint32 { return uint32(roundBF16(lo)) | uint32(roundBF16(hi))<<16 }

// bf16FMA is one accumulation step of VDPBF16PS: acc + a·b rounded once to
// float32 (nearest even), denormal inputs read as zero, a tiny result flushed
// to a zero of its sign. Tiny is x86's tininess after rounding (Intel SDM
// vol. 1, 4.9.1.5, the rule MXCSR.FTZ follows): the exact result rounded to
// float32's 24 bits with an unbounded exponent is below 2^-126, so a result
// just under 2^-126 that a denormal rounding would carry up to 2^-126 is
// flushed too (TestBF16FlushesAfterRounding: VDPBF16PS does so). a and b are
// bf16 values (as float32), so a·b is exact in float64 and the float64 sum
// rounds to the same float32 as a fused float32 operation would (the sum is
// exact in float64 whenever the float32 rounding could depend on its last
// bits, and always when it is tiny).
func bf16FMA(acc, a, b float32) float32 {
	acc, a, b = daz(acc), daz(a), daz(b)
	s := float64(acc) + float64(a)*float64(b)
	if m := math.Abs(s); m < 0x1p-126 {
		// Scaled by 2^64, the value is a normal float32 whenever its
		// rounding could reach 2^-126, so float32 rounds it to 24 bits.
		if float32(m*0x1p64) >= 0x1p-62 {
			return float32(math.Copysign(0x1p-126, s))
		}
		return float32(math.Copysign(0, s))
	}
	return float32(s)
}

func daz(x float32) float32 {
	if u := math.Float32bits(x); u&0x7F800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return x
}

func bf16Lo(w uint32) float32 { return math.Float32frombits(w << 16) }
func bf16Hi(w uint32) float32 { return math.Float32frombits(w &^ 0xFFFF) }

// gemmKernBF16Generic4x4 is the pure-Go bf16 micro-kernel that defines the
// results (see the package's bf16 section): a and b are packed pair panels
// (4 dwords per step each), read through the float32 kernel signature.
func gemmKernBF16Generic4x4(k int, a, b, c *float32, ldc int, accum int) {
	as := unsafe.Slice((*uint32)(unsafe.Pointer(a)), 4*k)
	bs := unsafe.Slice((*uint32)(unsafe.Pointer(b)), 4*k)
	var t [4][4]float32
	for s := 0; s < k; s++ {
		ar, br := as[4*s:4*s+4], bs[4*s:4*s+4]
		for i, aw := range ar {
			for j, bw := range br {
				v := bf16FMA(t[i][j], bf16Hi(aw), bf16Hi(bw))
				t[i][j] = bf16FMA(v, bf16Lo(aw), bf16Lo(bw))
			}
		}
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	for i := range t {
		row := cs[i*ldc : i*ldc+4]
		for j, v := range t[i] {
			if accum != 0 {
				v += row[j]
			}
			row[j] = v
		}
	}
}

// pairs returns validated args as the ⌈k/2⌉-deep product on bf16 pairs that
// the bf16 packers and kernels run: k counts pairs, kf keeps the depth in
// values (an odd kf pairs its last value with a zero).
func (a gemmArgs) pairs() gemmArgs {
	a.kf = a.k
	a.k = (a.k + 1) / 2
	return a
}

// packABF16Generic is the bf16 packAGeneric: pairs [pc, pc+kc) of rows
// [ic, ic+mc) of op(A) into MR-row panels of kc steps, panel q holding for
// each step s the MR pairs of rows ic+q·MR+r (zero beyond row mc).
func packABF16Generic(im *gemmImpl, a *gemmArgs, dst []float32, ic, mc, pc, kc int) {
	d, kr := u32View(dst), a.kf-2*pc
	if a.transA {
		pairCopy(a.a[2*pc*a.lda+ic:], a.lda, kr, kc, mc, d, im.mr, kc*im.mr)
	} else {
		pairGather(a.a[ic*a.lda+2*pc:], a.lda, kr, kc, mc, d, im.mr, kc*im.mr)
	}
}

// packBBF16Generic is the bf16 packBGeneric: pairs [pc, pc+kc) of columns
// [j0, j0+nc) of op(B) into NR-column panels (zero beyond column nc).
func packBBF16Generic(im *gemmImpl, a *gemmArgs, dst []float32, j0, nc, pc, kc int) {
	d, kr := u32View(dst), a.kf-2*pc
	if a.transB {
		pairGather(a.b[j0*a.ldb+2*pc:], a.ldb, kr, kc, nc, d, im.nr, kc*im.nr)
	} else {
		pairCopy(a.b[2*pc*a.ldb+j0:], a.ldb, kr, kc, nc, d, im.nr, kc*im.nr)
	}
}

// pairCopy packs `steps` pairs of a block whose k runs across rows (value k
// of column c at src[k*lds+c], kr values left in k) into panels of w columns
// ps dwords apart: dst[q*ps + s*w + c] = pair(src[2s*lds+q*w+c],
// src[(2s+1)*lds+q*w+c]), the second value zero when 2s+1 >= kr, and zero
// pairs past cols.
func pairCopy(src []float32, lds, kr, steps, cols int, dst []uint32, w, ps int) {
	for q := 0; q*w < cols; q++ {
		cw := min(w, cols-q*w)
		for s := 0; s < steps; s++ {
			d := dst[q*ps+s*w : q*ps+s*w+w]
			lo := src[2*s*lds+q*w : 2*s*lds+q*w+cw]
			if 2*s+1 < kr {
				hi := src[(2*s+1)*lds+q*w : (2*s+1)*lds+q*w+cw]
				for c, x := range lo {
					d[c] = bf16Pair(x, hi[c])
				}
			} else {
				for c, x := range lo {
					d[c] = bf16Pair(x, 0)
				}
			}
			clear(d[cw:])
		}
	}
}

// pairGather packs `steps` pairs of a block whose k runs along memory (value
// k of column c at src[c*lds+k], kr values left in k) into panels of w
// columns ps dwords apart: dst[q*ps + s*w + r] = pair(src[(q*w+r)*lds+2s],
// src[(q*w+r)*lds+2s+1]), the second value zero when 2s+1 >= kr, and zero
// pairs past cols.
func pairGather(src []float32, lds, kr, steps, cols int, dst []uint32, w, ps int) {
	for q := 0; q*w < cols; q++ {
		cw := min(w, cols-q*w)
		for r := 0; r < w; r++ {
			if r >= cw {
				for s := 0; s < steps; s++ {
					dst[q*ps+s*w+r] = 0
				}
				continue
			}
			row := src[(q*w+r)*lds:]
			for s := 0; s < steps; s++ {
				hi := float32(0)
				if 2*s+1 < kr {
					hi = row[2*s+1]
				}
				dst[q*ps+s*w+r] = bf16Pair(row[2*s], hi)
			}
		}
	}
}

// u32View is a packing buffer as the dwords the bf16 packers write.
func u32View(dst []float32) []uint32 {
	if len(dst) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), len(dst))
}
