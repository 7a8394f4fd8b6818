package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// AVX2 kernels in the AVX-512 kernels' arithmetic.
//
// Each kernel here computes, bit for bit, what its AVX-512 namesake does: a
// zmm register of the AVX-512 kernel is a pair of ymm registers (lanes 0-7,
// lanes 8-15), each zmm instruction the same instruction on both halves with
// the operands in the same order (so that even a NaN's payload is the same),
// the loops step by 16 (dot's main loop by 64) exactly as the AVX-512 loops do,
// a masked tail is VMASKMOVPS loads and stores under two lane masks (masked
// lanes read as zero, as with zeroing masking), and the horizontal sum adds
// the high half to the low one before hsumY0, as hsumZ0 does. So a float32
// training step computes the same bits on the AVX2 and the AVX-512 paths
// (kernel.TestAVX2MatchesAVX512).

// iotaAVX2 holds the int32 lane indices 0..15, for the tail masks.
var iotaAVX2 Mem

func iota16() Mem {
	if iotaAVX2.Symbol.Name == "" {
		iotaAVX2 = GLOBL("iota16AVX2", RODATA|NOPTR)
		for i := 0; i < 16; i++ {
			DATA(4*i, U32(i))
		}
	}
	return iotaAVX2
}

// maskLo and maskHi hold the lane masks of a 16-lane tail (lanes < n).
var maskLo, maskHi = Y14, Y15

// tailMasks16 sets maskLo and maskHi from n (in [1, 15]).
func tailMasks16(n GPPhysical) {
	it := iota16()
	VMOVD(n.As32(), X15)
	VPBROADCASTD(X15, maskHi)
	VPCMPGTD(it, maskHi, maskLo)
	VPCMPGTD(it.Offset(32), maskHi, maskHi)
}

// rowLoop16AVX2 is rowLoop16 on ymm pairs: body handles 16 elements (masked:
// the n < 16 left, under maskLo/maskHi) at the pointers, then they advance.
func rowLoop16AVX2(prefix string, n GPPhysical, ptrs []Register, body func(masked bool)) {
	rowLoop(prefix, n, ptrs, func() { tailMasks16(n) }, body)
}

// half16 is one ymm half of a 16-lane vector: its offset and tail mask.
type half16 struct {
	disp int
	mask VecPhysical
}

var halves = [2]half16{{0, maskLo}, {32, maskHi}}

func (h half16) load(p Register, y VecPhysical, masked bool) {
	if masked {
		VMASKMOVPS(Mem{Base: p, Disp: h.disp}, h.mask, y)
		return
	}
	VMOVUPS(Mem{Base: p, Disp: h.disp}, y)
}

func (h half16) store(y VecPhysical, p Register, masked bool) {
	if masked {
		VMASKMOVPS(y, h.mask, Mem{Base: p, Disp: h.disp})
		return
	}
	VMOVUPS(y, Mem{Base: p, Disp: h.disp})
}

// hsumPair reduces the 16-lane vector (lo, hi) to its lane sum in X0 as hsumZ0 does.
func hsumPair(lo, hi VecPhysical) {
	VADDPS(hi, lo, Y0)
	hsumY0()
}

func dotAVX2() {
	TEXT("dotAVX2", NOSPLIT, "func(x, y []float32) float32")
	Pragma("noescape")
	Doc("dotAVX2 returns Σ x[i]·y[i] over len(x) elements (len(y) >= len(x)), in dotAVX512's order.")
	x, y, n := RSI, RDI, RCX
	Load(Param("x").Base(), x)
	Load(Param("y").Base(), y)
	Load(Param("x").Len(), n)
	// Accumulator i of dotAVX512 is (Y(2i), Y(2i+1)).
	for i := 0; i < 8; i++ {
		VXORPS(ymm[i], ymm[i], ymm[i])
	}
	Label("loop64")
	CMPQ(n, U8(64))
	JB(LabelRef("loop16"))
	for i := 0; i < 8; i++ {
		t := ymm[8+i%4]
		VMOVUPS(Mem{Base: x, Disp: 32 * i}, t)
		VFMADD231PS(Mem{Base: y, Disp: 32 * i}, t, ymm[i])
	}
	ADDQ(U32(256), x)
	ADDQ(U32(256), y)
	SUBQ(U8(64), n)
	JMP(LabelRef("loop64"))
	Label("loop16")
	CMPQ(n, U8(16))
	JB(LabelRef("tail"))
	for h := 0; h < 2; h++ {
		VMOVUPS(Mem{Base: x, Disp: 32 * h}, ymm[8+h])
		VFMADD231PS(Mem{Base: y, Disp: 32 * h}, ymm[8+h], ymm[h])
	}
	ADDQ(U8(64), x)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("reduce"))
	tailMasks16(n)
	for h, hf := range halves {
		hf.load(x, ymm[8+h], true)
		hf.load(y, ymm[10+h], true)
		VFMADD231PS(ymm[10+h], ymm[8+h], ymm[2+h]) // accumulator 1
	}
	Label("reduce")
	for h := 0; h < 2; h++ {
		VADDPS(ymm[2+h], ymm[h], ymm[h])
		VADDPS(ymm[6+h], ymm[4+h], ymm[4+h])
		VADDPS(ymm[4+h], ymm[h], ymm[h])
	}
	hsumPair(Y0, Y1)
	Store(X0, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// expTab is the exponential's constant table once emitted.
var expTab Mem

// expConstAVX2 returns the exponential's constant table (each entry 8 lanes): 0 hi, 1 lo, 2 log2e, 3 c1,
// 4 c2, 5-10 the polynomial, 11 one, 12 the exponent bias 127.
func expConstAVX2() func(i int) Mem {
	if expTab.Symbol.Name != "" {
		return func(i int) Mem { return expTab.Offset(32 * i) }
	}
	tab := GLOBL("expconstAVX2", RODATA|NOPTR)
	expTab = tab
	vals := []uint32{f32bits(88.8), f32bits(-104), f32bits(expLog2e), f32bits(expC1), f32bits(expC2),
		f32bits(expP0), f32bits(expP1), f32bits(expP2), f32bits(expP3), f32bits(expP4), f32bits(expP5), f32bits(1), 127}
	for i, v := range vals {
		for l := 0; l < 8; l++ {
			DATA(32*i+4*l, U32(v))
		}
	}
	return func(i int) Mem { return tab.Offset(32 * i) }
}

// expRegsAVX2 are the registers of one exponential: x (argument, clobbered), y (result), t, z, s1, s2
// (scratch), and the constants the body keeps in registers (hi, lo, log2e, c1, c2, bias: table entries 0-4
// and 12); a nil c2 or bias is read from the table.
type expRegsAVX2 struct {
	x, t, y, z, s1, s2          VecPhysical
	hi, lo, log2e, c1, c2, bias VecPhysical
}

// expBodyAVX2 sets r.y = exp(r.x) on 8 lanes (the scalar twin is exp32).
func expBodyAVX2(r expRegsAVX2, cst func(int) Mem) {
	VMINPS(r.x, r.hi, r.x)
	VMAXPS(r.x, r.lo, r.x)
	VMULPS(r.log2e, r.x, r.t)
	VROUNDPS(U8(0), r.t, r.t)
	VFNMADD231PS(r.c1, r.t, r.x)
	VFNMADD231PS(regOr(r.c2, cst(4)), r.t, r.x)
	VMOVUPS(cst(5), r.y)
	for i := 6; i <= 10; i++ {
		VFMADD213PS(cst(i), r.x, r.y)
	}
	VMULPS(r.x, r.x, r.z)
	VFMADD213PS(r.x, r.z, r.y)
	VADDPS(cst(11), r.y, r.y)
	VCVTPS2DQ(r.t, r.s1)
	VPSRAD(U8(1), r.s1, r.s2)
	VPSUBD(r.s2, r.s1, r.s1)
	VPADDD(regOr(r.bias, cst(12)), r.s2, r.s2)
	VPADDD(regOr(r.bias, cst(12)), r.s1, r.s1)
	VPSLLD(U8(23), r.s2, r.s2)
	VPSLLD(U8(23), r.s1, r.s1)
	VMULPS(r.s2, r.y, r.y)
	VMULPS(r.s1, r.y, r.y)
}

// regOr is r, or m where r is nil.
func regOr(r VecPhysical, m Mem) Op {
	if r == nil {
		return m
	}
	return r
}

func expShiftSumAVX2() {
	TEXT("expShiftSumAVX2", NOSPLIT, "func(dst, src []float32, shift, scale float32) float32")
	Pragma("noescape")
	Doc("expShiftSumAVX2 is expShiftSumAVX512 on ymm pairs: dst[i] = exp((src[i] − shift)·scale), and their sum",
		"in expShiftSumAVX512's order.")
	d, s, n := RDI, RSI, RCX
	cst := expConstAVX2()
	Load(Param("dst").Base(), d)
	Load(Param("src").Base(), s)
	Load(Param("src").Len(), n)
	Load(Param("shift"), X12)
	VBROADCASTSS(X12, Y12)
	Load(Param("scale"), X13)
	VBROADCASTSS(X13, Y13)
	acc := [2]VecPhysical{Y10, Y11}
	VXORPS(Y10, Y10, Y10)
	VXORPS(Y11, Y11, Y11)
	r := expRegsAVX2{x: Y0, t: Y1, y: Y2, z: Y3, s1: Y4, s2: Y5, hi: Y6, lo: Y7, log2e: Y8, c1: Y9}
	VMOVUPS(cst(0), r.hi)
	VMOVUPS(cst(1), r.lo)
	VMOVUPS(cst(2), r.log2e)
	VMOVUPS(cst(3), r.c1)
	rowLoop16AVX2("", n, []Register{d, s}, func(masked bool) {
		for h, hf := range halves {
			hf.load(s, Y0, masked)
			VSUBPS(Y12, Y0, Y0)
			VMULPS(Y13, Y0, Y0)
			expBodyAVX2(r, cst)
			if masked {
				VANDPS(hf.mask, Y2, Y3) // the masked lanes add +0: the sum's lanes are never −0
				VADDPS(Y3, acc[h], acc[h])
			} else {
				VADDPS(Y2, acc[h], acc[h])
			}
			hf.store(Y2, d, masked)
		}
	})
	hsumPair(Y10, Y11)
	Store(X0, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func swigluBackAVX2() {
	TEXT("swigluBackAVX2", NOSPLIT, "func(dg, du, dact, g, u, sig []float32)")
	Pragma("noescape")
	Doc("swigluBackAVX2 is swigluBackAVX512 on ymm pairs (the same fused multiply-add).")
	dg, du, da, g, u, sg, n := RDI, RSI, RDX, R8, R9, R10, RCX
	Load(Param("dg").Base(), dg)
	Load(Param("du").Base(), du)
	Load(Param("dact").Base(), da)
	Load(Param("g").Base(), g)
	Load(Param("u").Base(), u)
	Load(Param("sig").Base(), sg)
	Load(Param("g").Len(), n)
	MOVL(U32(f32bits(1)), EAX)
	VMOVD(EAX, X13)
	VPBROADCASTD(X13, Y13)
	rowLoop16AVX2("", n, []Register{dg, du, da, g, u, sg}, func(masked bool) {
		for _, hf := range halves {
			hf.load(sg, Y0, masked)
			hf.load(g, Y1, masked)
			hf.load(da, Y2, masked)
			hf.load(u, Y3, masked)
			VMULPS(Y0, Y1, Y1)
			VMULPS(Y1, Y2, Y4)
			hf.store(Y4, du, masked)
			VSUBPS(Y0, Y13, Y5)
			VFMADD213PS(Y0, Y1, Y5)
			VMULPS(Y3, Y2, Y6)
			VMULPS(Y5, Y6, Y6)
			hf.store(Y6, dg, masked)
		}
	})
	VZEROUPPER()
	RET()
}

func rmsNormBackAVX2() {
	TEXT("rmsNormBackAVX2", NOSPLIT, "func(dx, dy, x, g, dg []float32, rstd, invN float32)")
	Pragma("noescape")
	Doc("rmsNormBackAVX2 is rmsNormBackAVX512 on ymm pairs (the same sum order and fused multiply-adds).")
	dx, dy, x, g, dg, n := RDI, RSI, RDX, R8, R9, RCX
	load := func() {
		Load(Param("dy").Base(), dy)
		Load(Param("x").Base(), x)
		Load(Param("g").Base(), g)
		Load(Param("x").Len(), n)
	}
	Load(Param("rstd"), X10)
	VBROADCASTSS(X10, Y10)
	Load(Param("dg").Base(), dg)
	load()
	acc := [2]VecPhysical{Y12, Y13}
	VXORPS(Y12, Y12, Y12)
	VXORPS(Y13, Y13, Y13)
	rowLoop16AVX2("p1", n, []Register{dy, x, g, dg}, func(masked bool) {
		for h, hf := range halves {
			hf.load(x, Y0, masked)
			VMULPS(Y10, Y0, Y0)
			hf.load(dy, Y1, masked)
			hf.load(g, Y2, masked)
			VMULPS(Y1, Y2, Y2)
			VFMADD231PS(Y0, Y2, acc[h])
			hf.load(dg, Y3, masked)
			VFMADD231PS(Y0, Y1, Y3)
			hf.store(Y3, dg, masked)
		}
	})
	hsumPair(Y12, Y13)
	Load(Param("invN"), X1)
	VMULSS(X1, X0, X0)
	VBROADCASTSS(X0, Y11)
	Load(Param("dx").Base(), dx)
	load()
	rowLoop16AVX2("p2", n, []Register{dx, dy, x, g}, func(masked bool) {
		for _, hf := range halves {
			hf.load(x, Y0, masked)
			VMULPS(Y10, Y0, Y0)
			hf.load(dy, Y1, masked)
			hf.load(g, Y2, masked)
			VMULPS(Y1, Y2, Y2)
			VFNMADD231PS(Y11, Y0, Y2)
			hf.load(dx, Y3, masked)
			VFMADD231PS(Y2, Y10, Y3)
			hf.store(Y3, dx, masked)
		}
	})
	VZEROUPPER()
	RET()
}

func roundBF16AVX2() {
	TEXT("roundBF16AVX2", NOSPLIT, "func(x []float32)")
	Pragma("noescape")
	Doc("roundBF16AVX2 rounds x[i] to bfloat16 in place (roundBF16: nearest even, a denormal to a zero of its sign,",
		"NaN quiet), for i < len(x) rounded down to a multiple of 8 (the Go wrapper does the rest).")
	x, n := RSI, RCX
	Load(Param("x").Base(), x)
	Load(Param("x").Len(), n)
	SHRQ(U8(3), n)
	JZ(LabelRef("done"))
	c := bf16RoundRegs(ymm[10:16])
	VPXOR(Y9, Y9, Y9)
	Label("loop")
	VMOVDQU(Mem{Base: x}, Y0)
	roundBF16Y(Y0, Y2, Y1, Y3, Y9, c)
	VMOVDQU(Y2, Mem{Base: x})
	ADDQ(U8(32), x)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
