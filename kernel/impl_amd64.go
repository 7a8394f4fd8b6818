package kernel

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:generate go run -C _asm . -out ../kernels_amd64.s -stubs ../kernels_amd64_stubs.go -pkg kernel

// avx512F32Gemm is the AVX-512 float32 GEMM (avx512Impl).
var avx512F32Gemm = gemmImpl{
	desc: "VFMADD231PS zmm 14×32",
	mr:   14, nr: 32,
	mc: 448, kc: 256, nc: 2048,
	kern: gemmKernAVX512_14x32, kernRowA: gemmKernAVX512_14x32_rowA,
	packA: packAAVX512, packB: packBAVX512,
}

// avx512Impl uses a 14×32 zmm micro-kernel: 28 accumulators + 2 B vectors
// (+2 for the next step's B), i.e. all 32 zmm registers; per k step 2 loads
// of B and 28 FMAs with an embedded broadcast of the A element: 30 loads per
// 14 cycles at 2 FMAs/cycle, which the three load ports sustain.
//
// Blocking for Sapphire/Emerald Rapids (48 KiB L1d, 2 MiB L2 per core):
// KC=256 makes the 256×32 B micro-panel 32 KiB, which stays in L1 while the
// 14×256 A micro-panels (14 KiB) stream past it from the packed A block;
// MC=448 makes that block 448 KiB, well inside L2. NC=2048 (2 MiB of packed
// B) only applies to the single-threaded path; Pool.Gemm packs whole-K B
// blocks of up to maxSharedB (4 MiB) instead. Measured on the development
// machine (single thread, alternating configurations): KC=192 is 2-5% slower,
// KC=320 and MC=224 or 896 are within ±2%.
//
// Its BF16 slot is the split-panel kernel (bf16split.go): the float32 kernel
// under MXCSR.FTZ on bf16 values, for AVX-512 CPUs without AVX512_BF16.
var avx512Impl = &impl{
	name: "avx512",
	gemms: [NumPrecisions]gemmImpl{
		F32: avx512F32Gemm,
		BF16: splitBF16(avx512F32Gemm, gemmKernAVX512_14x32_ftz,
			roundAfter(packAAVX512, roundBF16AVX2Tail, true), roundAfter(packBAVX512, roundBF16AVX2Tail, false)),
	},
	dot:   dotAVX512,
	axpy:  axpyAVX512,
	scale: scaleAVX512,
	add:   addAVX512,
	exp:   expAVX512,
	max:   maxAVX512,

	expShiftSum: expShiftSumAVX512,
	swiglu:      swigluAVX512,
	swigluBack:  swigluBackAVX512,
	rmsNormBack: rmsNormBackAVX512,
	adamw:       adamwAVX512,
}

// avx512BF16Impl is avx512Impl plus the AVX512_BF16 GEMM: the 14×32 pair
// kernel (VDPBF16PS with an embedded-broadcast A pair; the float32 kernel's
// register plan, each instruction doing 32 multiply-adds instead of 16) and
// the float32 packers' bf16 twins, which convert with VCVTNE2PS2BF16 as they
// pack. Blocking: KC = 256 pairs keeps the B micro-panel at 32 KiB, as in the
// float32 kernel; A is always packed (no in-place variant).
var avx512BF16Impl = func() *impl {
	c := *avx512Impl
	c.dpbf16 = true
	c.gemms[BF16] = gemmImpl{
		desc: "VDPBF16PS zmm 14×32 (AVX512_BF16)",
		mr:   14, nr: 32,
		mc: 448, kc: bf16KC, nc: 2048,
		kern:  gemmKernBF16AVX512Wrapper,
		packA: packABF16AVX512, packB: packBBF16AVX512,
	}
	return &c
}()

// gemmKernBF16AVX512Wrapper adapts the pair kernel to the float32 kernel
// signature the blocking code calls (the panels hold bf16 pairs).
func gemmKernBF16AVX512Wrapper(k int, a, b, c *float32, ldc int, accum int) {
	gemmKernBF16AVX512_14x32(k, (*uint32)(unsafe.Pointer(a)), (*uint32)(unsafe.Pointer(b)), c, ldc, accum)
}

// packABF16AVX512 is packABF16Generic with the AVX-512 bf16 packers: the
// pairs with both values inside k go through the assembly (16×16 transposes
// for row-major A, interleaved row copies for transposed A); the last pair
// of an odd k and the steps past the last 16-pair block, through the twin.
func packABF16AVX512(im *gemmImpl, a *gemmArgs, dst []float32, ic, mc, pc, kc int) {
	mr := im.mr
	d, kr := u32View(dst), a.kf-2*pc
	if a.transA {
		pairCopyAVX512(a.a[2*pc*a.lda+ic:], a.lda, kr, kc, mc, d, mr)
		return
	}
	nblk := min(kc, kr/2) / 16 // blocks of pairs with both values inside k
	for q0 := 0; q0 < mc; q0 += mr {
		rows := min(mr, mc-q0)
		pd := d[q0*kc : q0*kc+mr*kc]
		i0 := ic + q0
		if nblk > 0 {
			var ptrs [16]*float32
			for r := range ptrs {
				if r < rows {
					ptrs[r] = &a.a[(i0+r)*a.lda+2*pc]
				} else {
					ptrs[r] = &zeroRow[0]
				}
			}
			transPackBF16AVX512(&ptrs, nblk, &pd[0], mr, 1<<mr-1)
		}
		if s0 := 16 * nblk; s0 < kc {
			pairGather(a.a[i0*a.lda+2*(pc+s0):], a.lda, kr-2*s0, kc-s0, rows, pd[s0*mr:], mr, kc*mr)
		}
	}
}

// packBBF16AVX512 is packBBF16Generic with the AVX-512 bf16 packers (NR = 32).
func packBBF16AVX512(im *gemmImpl, a *gemmArgs, dst []float32, j0, nc, pc, kc int) {
	const nr = 32
	d, kr := u32View(dst), a.kf-2*pc
	if !a.transB {
		pairCopyAVX512(a.b[2*pc*a.ldb+j0:], a.ldb, kr, kc, nc, d, nr)
		return
	}
	nblk := min(kc, kr/2) / 16
	for q0 := 0; q0 < nc; q0 += nr {
		cols := min(nr, nc-q0)
		pd := d[q0*kc : q0*kc+nr*kc]
		j := j0 + q0
		if nblk > 0 {
			for h := 0; h < nr; h += 16 {
				var ptrs [16]*float32
				for r := range ptrs {
					if h+r < cols {
						ptrs[r] = &a.b[(j+h+r)*a.ldb+2*pc]
					} else {
						ptrs[r] = &zeroRow[0]
					}
				}
				transPackBF16AVX512(&ptrs, nblk, &pd[h], nr, 0xFFFF)
			}
		}
		if s0 := 16 * nblk; s0 < kc {
			pairGather(a.b[j*a.ldb+2*(pc+s0):], a.ldb, kr-2*s0, kc-s0, cols, pd[s0*nr:], nr, kc*nr)
		}
	}
}

// pairCopyAVX512 is pairCopy (panel stride kc·w) through copyPackBF16AVX512 for the pairs with both values
// inside k, and through the twin for the last pair of an odd k.
func pairCopyAVX512(src []float32, lds, kr, kc, cols int, d []uint32, w int) {
	full := min(kc, kr/2)
	panels := ceilDiv(cols, w)
	last := cols - (panels-1)*w
	if full > 0 {
		copyPackBF16AVX512(&src[0], lds, full, panels, &d[0], w, kc*w, 1<<w-1, 1<<last-1)
	}
	if full < kc {
		pairCopy(src[2*full*lds:], lds, kr-2*full, kc-full, cols, d[full*w:], w, kc*w)
	}
}

// avx2F32Gemm is the AVX2 float32 GEMM (avx2Impl).
var avx2F32Gemm = gemmImpl{
	desc: "VFMADD231PS ymm 6×16",
	mr:   6, nr: 16,
	mc: 192, kc: 256, nc: 2048,
	kern: gemmKernAVX2_6x16, packA: packAAVX2, packB: packBAVX2,
}

// avx2Impl uses a 6×16 ymm micro-kernel (12 accumulators, Haswell..Zen 3);
// its BF16 slot is the same kernel under MXCSR.FTZ on split bf16 panels
// (bf16split.go), packed by the AVX2 packers' rounding variants.
var avx2Impl = &impl{
	name: "avx2",
	gemms: [NumPrecisions]gemmImpl{
		F32:  avx2F32Gemm,
		BF16: splitBF16(avx2F32Gemm, gemmKernAVX2_6x16_ftz, packABF16AVX2, packBBF16AVX2),
	},
	dot:   dotAVX2,
	axpy:  axpyAVX2,
	scale: scaleAVX2,
	add:   addAVX2,
	exp:   expAVX2Tail,
	max:   maxAVX2,

	// dot and the fused row kernels but SwiGLU are the AVX-512 kernels' arithmetic on ymm pairs (_asm/rows16.go);
	// SwiGLU composed of expAVX2 and Go, and AdamW's pure-Go twin, already give the AVX-512 bits.
	expShiftSum: expShiftSumAVX2,
	swiglu:      swigluWith(expAVX2Tail),
	swigluBack:  swigluBackAVX2,
	rmsNormBack: rmsNormBackAVX2,
}

// roundBF16AVX2Tail rounds d to bf16 in place: roundBF16AVX2 on the
// multiple-of-8 prefix, the rest in Go.
func roundBF16AVX2Tail(d []float32) {
	n8 := len(d) &^ 7
	roundBF16AVX2(d[:n8])
	roundBF16Generic(d[n8:])
}

// expAVX2Tail runs expAVX2 on the multiple-of-8 prefix and the rest through
// an 8-element stack buffer.
func expAVX2Tail(dst, src []float32) {
	n8 := len(src) &^ 7
	expAVX2(dst[:n8], src[:n8])
	if r := len(src) - n8; r > 0 {
		var buf [8]float32
		copy(buf[:], src[n8:])
		expAVX2(buf[:], buf[:])
		copy(dst[n8:len(src)], buf[:r])
	}
}

// available lists the implementations this CPU can run, best first.
func available() []*impl {
	var l []*impl
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW {
		if cpu.X86.HasAVX512BF16 {
			l = append(l, avx512BF16Impl)
		}
		l = append(l, avx512Impl)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		l = append(l, avx2Impl)
	}
	return append(l, genericImpl)
}

// zeroRow is the source of the missing rows of edge panels in the
// transposing packers; it must be at least KC long (2·KC for bf16 pairs).
var zeroRow [1024]float32

// packAAVX512 is packAGeneric with the AVX-512 packers: 16×16 register
// transposes for row-major A, masked row copies for transposed A.
func packAAVX512(im *gemmImpl, a *gemmArgs, dst []float32, ic, mc, pc, kc int) {
	mr := im.mr
	if a.transA {
		panels := ceilDiv(mc, mr)
		last := mc - (panels-1)*mr
		copyPackAVX512(&a.a[pc*a.lda+ic], a.lda, kc, panels, &dst[0], mr, 1<<mr-1, 1<<last-1)
		return
	}
	for q0 := 0; q0 < mc; q0 += mr {
		rows := min(mr, mc-q0)
		d := dst[q0*kc : q0*kc+mr*kc]
		i0 := ic + q0
		var ptrs [16]*float32
		for r := range ptrs {
			if r < rows {
				ptrs[r] = &a.a[(i0+r)*a.lda+pc]
			} else {
				ptrs[r] = &zeroRow[0]
			}
		}
		nblk := kc / 16
		if nblk > 0 {
			transPackAVX512(&ptrs, nblk, &d[0], mr, 1<<mr-1)
		}
		for kk := 16 * nblk; kk < kc; kk++ {
			for r := 0; r < mr; r++ {
				v := float32(0)
				if r < rows {
					v = a.a[(i0+r)*a.lda+pc+kk]
				}
				d[kk*mr+r] = v
			}
		}
	}
}

// packBAVX512 is packBGeneric with the AVX-512 packers (NR = 32).
func packBAVX512(im *gemmImpl, a *gemmArgs, dst []float32, j0, nc, pc, kc int) {
	const nr = 32
	if !a.transB {
		panels := ceilDiv(nc, nr)
		last := nc - (panels-1)*nr
		copyPackAVX512(&a.b[pc*a.ldb+j0], a.ldb, kc, panels, &dst[0], nr, 1<<nr-1, 1<<last-1)
		return
	}
	for q0 := 0; q0 < nc; q0 += nr {
		cols := min(nr, nc-q0)
		d := dst[q0*kc : q0*kc+nr*kc]
		j := j0 + q0
		nblk := kc / 16
		for h := 0; h < nr; h += 16 {
			var ptrs [16]*float32
			for r := range ptrs {
				if h+r < cols {
					ptrs[r] = &a.b[(j+h+r)*a.ldb+pc]
				} else {
					ptrs[r] = &zeroRow[0]
				}
			}
			if nblk > 0 {
				transPackAVX512(&ptrs, nblk, &d[h], nr, 0xFFFF)
			}
		}
		for kk := 16 * nblk; kk < kc; kk++ {
			for c := 0; c < nr; c++ {
				v := float32(0)
				if c < cols {
					v = a.b[(j+c)*a.ldb+pc+kk]
				}
				d[kk*nr+c] = v
			}
		}
	}
}

// The AVX2 packers of the 6×16 GEMM: packAGeneric and packBGeneric through
// the assembly (row copies of whole panels; 8×8 transposes of 8-step blocks),
// the ragged last panel of a row copy and the steps past the last 8-step block
// of a transpose in Go. Each packs the same values as the twin; the BF16
// variants round each to bf16 as they pack (the split panels' values, which
// splitPacker's twin defines as the float32 panels rounded in place).

func packAAVX2(im *gemmImpl, a *gemmArgs, dst []float32, ic, mc, pc, kc int) {
	packAAVX2Round(a, dst, ic, mc, pc, kc, false)
}

func packBAVX2(im *gemmImpl, a *gemmArgs, dst []float32, j0, nc, pc, kc int) {
	packBAVX2Round(a, dst, j0, nc, pc, kc, false)
}

func packABF16AVX2(im *gemmImpl, a *gemmArgs, dst []float32, ic, mc, pc, kc int) {
	packAAVX2Round(a, dst, ic, mc, pc, kc, true)
}

func packBBF16AVX2(im *gemmImpl, a *gemmArgs, dst []float32, j0, nc, pc, kc int) {
	packBAVX2Round(a, dst, j0, nc, pc, kc, true)
}

// packAAVX2Round is packAGeneric for MR = 6, with each value rounded to bf16 when round is set.
func packAAVX2Round(a *gemmArgs, dst []float32, ic, mc, pc, kc int, round bool) {
	if a.transA {
		copyPanelsAVX2(a.a[pc*a.lda+ic:], a.lda, kc, mc, dst, 6, round)
		return
	}
	gatherPanelsAVX2(a.a[ic*a.lda+pc:], a.lda, kc, mc, dst, 6, round)
}

// packBAVX2Round is packBGeneric for NR = 16, with each value rounded to bf16 when round is set.
func packBAVX2Round(a *gemmArgs, dst []float32, j0, nc, pc, kc int, round bool) {
	if a.transB {
		gatherPanelsAVX2(a.b[j0*a.ldb+pc:], a.ldb, kc, nc, dst, 16, round)
		return
	}
	copyPanelsAVX2(a.b[pc*a.ldb+j0:], a.ldb, kc, nc, dst, 16, round)
}

// gatherPanelsAVX2 is packGather for w = 6 or 16 (rounded to bf16 when round is set): each panel's 8-step
// blocks through the assembly, 8 source rows at a time (a row past cols reads zeroRow), the steps past
// the last block through gatherTail.
func gatherPanelsAVX2(src []float32, lds, kc, cols int, dst []float32, w int, round bool) {
	nblk := kc / 8
	for q0 := 0; q0 < cols; q0 += w {
		n := min(w, cols-q0)
		d := dst[q0*kc : q0*kc+w*kc]
		s := src[q0*lds:]
		for h := 0; nblk > 0 && h < w; h += 8 {
			ptrs := [8]*float32{&zeroRow[0], &zeroRow[0], &zeroRow[0], &zeroRow[0], &zeroRow[0], &zeroRow[0], &zeroRow[0], &zeroRow[0]}
			for r := 0; r < 8 && h+r < n; r++ {
				ptrs[r] = &s[(h+r)*lds]
			}
			switch {
			case w == 16 && round:
				transPack8RoundBF16AVX2(&ptrs, nblk, &d[h], w)
			case w == 16:
				transPack8AVX2(&ptrs, nblk, &d[h], w)
			case w == 6 && round:
				transPack6RoundBF16AVX2(&ptrs, nblk, &d[h], w)
			case w == 6:
				transPack6AVX2(&ptrs, nblk, &d[h], w)
			default:
				panic("kernel: gatherPanelsAVX2 packs panels of 6 or 16")
			}
		}
		gatherTail(s, lds, 8*nblk, kc, n, d, w, round)
	}
}

// gatherTail is packGather's steps [kk0, kc) of one panel of w: d[kk*w+r] = src[r*lds+kk] for r < rows, 0
// for the rest of the w, each rounded to bf16 when round is set.
func gatherTail(src []float32, lds, kk0, kc, rows int, d []float32, w int, round bool) {
	for kk := kk0; kk < kc; kk++ {
		for r := 0; r < w; r++ {
			v := float32(0)
			if r < rows {
				v = src[r*lds+kk]
			}
			if round {
				v = RoundBF16(v)
			}
			d[kk*w+r] = v
		}
	}
}

// copyPanelsAVX2 is packCopy for w = 6 or 16 (rounded to bf16 when round is set): the whole panels through
// the assembly, a ragged last one through packCopy.
func copyPanelsAVX2(src []float32, lds, kc, cols int, dst []float32, w int, round bool) {
	full := cols / w
	if full > 0 {
		switch {
		case w == 16 && round:
			copyPack16RoundBF16AVX2(&src[0], lds, kc, full, &dst[0])
		case w == 16:
			copyPack16AVX2(&src[0], lds, kc, full, &dst[0])
		case w == 6 && round:
			copyPack6RoundBF16AVX2(&src[0], lds, kc, full, &dst[0])
		case w == 6:
			copyPack6AVX2(&src[0], lds, kc, full, &dst[0])
		default:
			panic("kernel: copyPanelsAVX2 packs panels of 6 or 16")
		}
	}
	if r := cols - full*w; r > 0 {
		last := dst[full*kc*w : (full+1)*kc*w]
		packCopy(src[full*w:], lds, kc, r, last, w)
		if round {
			roundBF16Generic(last)
		}
	}
}
