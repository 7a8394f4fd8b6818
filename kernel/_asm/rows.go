package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The fused row kernels of the model (softmax and cross-entropy exponentials, SwiGLU forward and backward,
// RMSNorm backward): each walks its rows 16 lanes at a time with a masked tail, so that a row costs one pass
// over memory instead of the several passes of composed vector kernels.

// expConstsAVX512 broadcasts the clamps, Cephes constants and 1.0 into Z16..Z27 for expBodyAVX512.
func expConstsAVX512() {
	consts := []float64{128, -150, expLog2e, expC1, expC2, expP0, expP1, expP2, expP3, expP4, expP5, 1}
	for i, cst := range consts {
		MOVL(U32(f32bits(cst)), EAX)
		VPBROADCASTD(EAX, zmm[16+i])
	}
}

// expOne is the register expConstsAVX512 leaves 1.0 in.
var expOne = Z27

// expBodyAVX512 writes exp(x) into y (x is clobbered; t and z are temporaries), with the constants of
// expConstsAVX512.
func expBodyAVX512(x, t, y, z VecPhysical) {
	hi, lo, log2e, c1, c2 := Z16, Z17, Z18, Z19, Z20
	p := zmm[21:27]
	VMINPS(x, hi, x) // NaN in x survives: MINPS returns its second source on NaN
	VMAXPS(x, lo, x)
	VMULPS(log2e, x, t)
	VRNDSCALEPS(U8(8), t, t)
	VFNMADD231PS(c1, t, x)
	VFNMADD231PS(c2, t, x)
	VMOVAPS(p[0], y)
	for i := 1; i < 6; i++ {
		VFMADD213PS(p[i], x, y)
	}
	VMULPS(x, x, z)
	VFMADD213PS(x, z, y)
	VADDPS(expOne, y, y)
	VSCALEFPS(t, y, y)
}

// rowLoop16 emits a loop over n elements, 16 lanes at a time then a masked tail (mask in K1); body gets
// masked = true for the tail and must use K1 on its loads and stores then. ptrs advance by 64 bytes a step.
func rowLoop16(prefix string, n Register, ptrs []Register, body func(masked bool)) {
	rowLoop(prefix, n, ptrs, tailMask, body)
}

// rowLoop is rowLoop16 with the tail's masks set by masks (n in [1, 15] left).
func rowLoop(prefix string, n Register, ptrs []Register, masks func(), body func(masked bool)) {
	Label(prefix + "loop")
	CMPQ(n, U8(16))
	JB(LabelRef(prefix + "tail"))
	body(false)
	for _, p := range ptrs {
		ADDQ(U8(64), p)
	}
	SUBQ(U8(16), n)
	JMP(LabelRef(prefix + "loop"))
	Label(prefix + "tail")
	TESTQ(n, n)
	JZ(LabelRef(prefix + "done"))
	masks()
	body(true)
	Label(prefix + "done")
}

// load16 loads 16 floats (or the K1 lanes, the rest zero) from p into z.
func load16(p Register, z VecPhysical, masked bool) {
	if masked {
		VMOVUPS_Z(Mem{Base: p}, K1, z)
		return
	}
	VMOVUPS(Mem{Base: p}, z)
}

// store16 stores z (or its K1 lanes) to p.
func store16(z VecPhysical, p Register, masked bool) {
	if masked {
		VMOVUPS(z, K1, Mem{Base: p})
		return
	}
	VMOVUPS(z, Mem{Base: p})
}

func expShiftSumAVX512() {
	TEXT("expShiftSumAVX512", NOSPLIT, "func(dst, src []float32, shift, scale float32) float32")
	Pragma("noescape")
	Doc("expShiftSumAVX512 sets dst[i] = exp((src[i] − shift)·scale) for i < len(src) and returns their sum.")
	d, s, n := RDI, RSI, RCX
	Load(Param("dst").Base(), d)
	Load(Param("src").Base(), s)
	Load(Param("src").Len(), n)
	Load(Param("shift"), X8) // MOVSS reaches only X0..X15
	VBROADCASTSS(X8, Z28)
	Load(Param("scale"), X9)
	VBROADCASTSS(X9, Z29)
	VPXORD(Z30, Z30, Z30)
	expConstsAVX512()
	rowLoop16("", n, []Register{d, s}, func(masked bool) {
		load16(s, Z0, masked)
		VSUBPS(Z28, Z0, Z0)
		VMULPS(Z29, Z0, Z0)
		expBodyAVX512(Z0, Z1, Z2, Z3)
		if masked {
			VADDPS(Z2, Z30, K1, Z30)
		} else {
			VADDPS(Z2, Z30, Z30)
		}
		store16(Z2, d, masked)
	})
	VMOVAPS(Z30, Z0)
	hsumZ0()
	Store(X0, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func swigluAVX512() {
	TEXT("swigluAVX512", NOSPLIT, "func(act, sig, g, u []float32)")
	Pragma("noescape")
	Doc("swigluAVX512 sets sig[i] = σ(g[i]) = 1/(1 + exp(−g[i])) and act[i] = g[i]·sig[i]·u[i] for i < len(g).")
	a, sg, g, u, n := RDI, RSI, RDX, R8, RCX
	Load(Param("act").Base(), a)
	Load(Param("sig").Base(), sg)
	Load(Param("g").Base(), g)
	Load(Param("u").Base(), u)
	Load(Param("g").Len(), n)
	VPXORD(Z28, Z28, Z28)
	expConstsAVX512()
	rowLoop16("", n, []Register{a, sg, g, u}, func(masked bool) {
		load16(g, Z4, masked)
		VSUBPS(Z4, Z28, Z0) // −g
		expBodyAVX512(Z0, Z1, Z2, Z3)
		VADDPS(expOne, Z2, Z2)
		VDIVPS(Z2, expOne, Z2) // σ(g)
		store16(Z2, sg, masked)
		load16(u, Z5, masked)
		VMULPS(Z2, Z4, Z4)
		VMULPS(Z5, Z4, Z4)
		store16(Z4, a, masked)
	})
	VZEROUPPER()
	RET()
}

func swigluBackAVX512() {
	TEXT("swigluBackAVX512", NOSPLIT, "func(dg, du, dact, g, u, sig []float32)")
	Pragma("noescape")
	Doc("swigluBackAVX512 sets du[i] = dact[i]·g[i]·s and dg[i] = dact[i]·u[i]·(s + g[i]·s·(1 − s)), s = sig[i],",
		"for i < len(g).")
	dg, du, da, g, u, sg, n := RDI, RSI, RDX, R8, R9, R10, RCX
	Load(Param("dg").Base(), dg)
	Load(Param("du").Base(), du)
	Load(Param("dact").Base(), da)
	Load(Param("g").Base(), g)
	Load(Param("u").Base(), u)
	Load(Param("sig").Base(), sg)
	Load(Param("g").Len(), n)
	MOVL(U32(f32bits(1)), EAX)
	VPBROADCASTD(EAX, Z31)
	rowLoop16("", n, []Register{dg, du, da, g, u, sg}, func(masked bool) {
		load16(sg, Z0, masked) // s
		load16(g, Z1, masked)
		load16(da, Z2, masked)
		load16(u, Z3, masked)
		VMULPS(Z0, Z1, Z1) // gs = g·s
		VMULPS(Z1, Z2, Z4) // du = dact·gs
		store16(Z4, du, masked)
		VSUBPS(Z0, Z31, Z5)     // 1 − s
		VFMADD213PS(Z0, Z1, Z5) // s + gs·(1 − s)
		VMULPS(Z3, Z2, Z6)      // dact·u
		VMULPS(Z5, Z6, Z6)
		store16(Z6, dg, masked)
	})
	VZEROUPPER()
	RET()
}

func rmsNormBackAVX512() {
	TEXT("rmsNormBackAVX512", NOSPLIT, "func(dx, dy, x, g, dg []float32, rstd, invN float32)")
	Pragma("noescape")
	Doc("rmsNormBackAVX512 adds one RMSNorm row's gradients: with x̂ = x·rstd and m = invN·Σ g⊙dy⊙x̂,",
		"dg += dy⊙x̂ and dx += rstd·(g⊙dy − x̂·m), over len(x) elements.")
	dx, dy, x, g, dg, n := RDI, RSI, RDX, R8, R9, RCX
	load := func() {
		Load(Param("dy").Base(), dy)
		Load(Param("x").Base(), x)
		Load(Param("g").Base(), g)
		Load(Param("x").Len(), n)
	}
	Load(Param("rstd"), X8) // MOVSS reaches only X0..X15
	VBROADCASTSS(X8, Z28)
	Load(Param("dg").Base(), dg)
	load()
	VPXORD(Z30, Z30, Z30)
	rowLoop16("p1", n, []Register{dy, x, g, dg}, func(masked bool) {
		load16(x, Z0, masked)
		VMULPS(Z28, Z0, Z0) // x̂
		load16(dy, Z1, masked)
		load16(g, Z2, masked)
		VMULPS(Z1, Z2, Z2)       // g⊙dy
		VFMADD231PS(Z0, Z2, Z30) // Σ g⊙dy⊙x̂ (masked lanes are 0)
		load16(dg, Z3, masked)
		VFMADD231PS(Z0, Z1, Z3)
		store16(Z3, dg, masked)
	})
	VMOVAPS(Z30, Z0)
	hsumZ0()
	Load(Param("invN"), X1)
	VMULSS(X1, X0, X0)
	VBROADCASTSS(X0, Z29) // m
	Load(Param("dx").Base(), dx)
	load()
	rowLoop16("p2", n, []Register{dx, dy, x, g}, func(masked bool) {
		load16(x, Z0, masked)
		VMULPS(Z28, Z0, Z0) // x̂
		load16(dy, Z1, masked)
		load16(g, Z2, masked)
		VMULPS(Z1, Z2, Z2)        // g⊙dy
		VFNMADD231PS(Z29, Z0, Z2) // g⊙dy − x̂·m
		load16(dx, Z3, masked)
		VFMADD231PS(Z2, Z28, Z3)
		store16(Z3, dx, masked)
	})
	VZEROUPPER()
	RET()
}
