// Command asm generates the amd64 assembly of package kernel with avo:
// the GEMM register-tile micro-kernels (AVX-512 and AVX2+FMA) and the SIMD
// vector kernels. It lives in its own module so that avo never becomes a
// dependency of the main module. Run it through `go generate ./kernel/`.
package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var zmm = []VecPhysical{
	Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31,
}

var ymm = []VecPhysical{
	Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15,
}

const kernSig = "func(k int, a, b, c *float32, ldc int, accum int)"

func main() {
	ConstraintExpr("amd64")

	gemmAVX512(14, 2, "packed")
	gemmAVX512(14, 2, "rowA")
	gemmAVX512(14, 2, "ftz")
	gemmAVX2(6, 2, false)
	gemmAVX2(6, 2, true)
	roundBF16AVX2()
	gemmBF16AVX512()
	transPackBF16AVX512()
	copyPackBF16AVX512()

	dotAVX512()
	axpyAVX512()
	scaleAVX512()
	addAVX512()
	maxAVX512()
	expAVX512()
	expShiftSumAVX512()
	swigluAVX512()
	swigluBackAVX512()
	rmsNormBackAVX512()
	adamwAVX512()

	dotAVX2()
	expShiftSumAVX2()
	swigluBackAVX2()
	rmsNormBackAVX2()
	axpyAVX2()
	scaleAVX2()
	addAVX2()
	maxAVX2()
	expAVX2()

	transPackAVX512()
	copyPackAVX512()
	for _, round := range []bool{false, true} {
		copyPackAVX2(16, round)
		copyPackAVX2(6, round)
		transPackAVX2(8, round)
		transPackAVX2(6, round)
	}

	fmaPeak("fmaPeakAVX512", zmm[:24], zmm[30], zmm[31])
	fmaPeak("fmaPeakAVX2", ymm[:12], ymm[14], ymm[15])
	bf16DotPeak("bf16DotPeakAVX512", zmm[:24], zmm[30], zmm[31])

	Generate()
}

// gemmAVX512 emits an mr×(16·nv) micro-kernel: mr·nv zmm accumulators, nv zmm
// loads of the packed B row per k step, and one embedded-broadcast FMA per
// (row, vector) reading the A element straight from memory. With rowA the A
// operand is not packed: row r of the tile is read from a + r·lda (row-major
// A, only for mr = 14), which saves packing A when it is used by few B panels.
// With ftz the k loop runs with MXCSR.FTZ set (see ftzOn): the kernel of the
// BF16 precision on split bf16 panels (kernel/bf16split.go).
func gemmAVX512(mr, nv int, mode string) {
	rowA := mode == "rowA"
	ftz := mode == "ftz"
	nr := 16 * nv
	name := fmt.Sprintf("gemmKernAVX512_%dx%d", mr, nr)
	sig := kernSig
	if rowA {
		sig = "func(k int, a *float32, lda int, b, c *float32, ldc int, accum int)"
	}
	if mode != "packed" {
		name += "_" + mode
	}

	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	switch {
	case rowA:
		Doc(fmt.Sprintf("%s is gemmKernAVX512_%dx%d reading A unpacked: row r of the tile is a[r*lda:], lda in elements.", name, mr, nr))
	case ftz:
		Doc(fmt.Sprintf("%s is gemmKernAVX512_%dx%d for bf16 split panels: its fused multiply-adds run under", name, mr, nr),
			"MXCSR.FTZ (a tiny result, below 2^-126 after rounding, flushed to a zero of its sign; the C update is not)",
			"and each pair of k steps odd first; k must be even.")
	default:
		Doc(fmt.Sprintf("%s computes the %d×%d tile C = A·B (accum == 0) or C += A·B (accum != 0)", name, mr, nr),
			fmt.Sprintf("from a packed A micro-panel (k steps of %d values) and a packed B micro-panel (k steps of %d values).", mr, nr),
			"ldc is in elements.")
	}
	if mr*nv+2*nv > 32 {
		panic("too many registers")
	}
	acc := func(r, v int) VecPhysical { return zmm[r*nv+v] }
	bregs := [2][]VecPhysical{zmm[32-2*nv : 32-nv], zmm[32-nv:]}

	k, a, b, c, ldc, accum := RSI, RAX, RBX, RCX, RDX, R8
	Load(Param("k"), k)
	Load(Param("a"), a)
	Load(Param("b"), b)
	Load(Param("c"), c)
	Load(Param("ldc"), ldc)
	Load(Param("accum"), accum)
	SHLQ(U8(2), ldc)
	var mxcsr Mem
	if ftz {
		mxcsr = ftzOn(R9)
	}

	// aAt returns the address of A(row r, step s) relative to the current
	// k position.
	var aAt func(r, s int) Mem
	var aBases []Register
	if rowA {
		if mr != 14 {
			panic("rowA needs mr = 14")
		}
		l, l3, a5, a10 := RDI, R9, R13, R14
		Load(Param("lda"), l)
		SHLQ(U8(2), l)
		LEAQ(Mem{Base: l, Index: l, Scale: 2}, l3)
		LEAQ(Mem{Base: a, Index: l, Scale: 4}, a5)
		ADDQ(l, a5)
		LEAQ(Mem{Base: a5, Index: l, Scale: 4}, a10)
		ADDQ(l, a10)
		type addr struct {
			base, index Register
			scale       uint8
		}
		rows := []addr{
			{a, nil, 0}, {a, l, 1}, {a, l, 2}, {a, l3, 1}, {a, l, 4}, {a5, nil, 0}, {a, l3, 2},
			{a5, l, 2}, {a, l, 8}, {a5, l, 4}, {a10, nil, 0}, {a5, l3, 2}, {a, l3, 4}, {a5, l, 8},
		}
		aAt = func(r, s int) Mem {
			m := Mem{Base: rows[r].base, Disp: 4 * s}
			if rows[r].index != nil {
				m.Index, m.Scale = rows[r].index, rows[r].scale
			}
			return m
		}
		aBases = []Register{a, a5, a10}
	} else {
		aAt = func(r, s int) Mem { return Mem{Base: a, Disp: 4 * (s*mr + r)} }
		aBases = []Register{a}
	}
	advanceA := func(steps int) {
		for _, r := range aBases {
			switch {
			case rowA:
				ADDQ(U32(4*steps), r)
			default:
				ADDQ(U32(4*mr*steps), r)
			}
		}
	}

	Comment("Prefetch the C tile.")
	MOVQ(c, R10)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			PREFETCHT0(Mem{Base: R10, Disp: 64 * v})
		}
		PREFETCHT0(Mem{Base: R10, Disp: 64*nv - 4})
		ADDQ(ldc, R10)
	}
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VPXORD(acc(r, v), acc(r, v), acc(r, v))
		}
	}
	step := func(s int) {
		bs := bregs[s%2]
		for v := 0; v < nv; v++ {
			VMOVUPS(Mem{Base: b, Disp: 4 * (s*nr + 16*v)}, bs[v])
		}
		for r := 0; r < mr; r++ {
			for v := 0; v < nv; v++ {
				VFMADD231PS_BCST(aAt(r, s), bs[v], acc(r, v))
			}
		}
	}
	const unroll = 4
	order := stepOrder(ftz)
	MOVQ(k, R10)
	SHRQ(U8(2), R10)
	ANDQ(U8(unroll-1), k)
	JZ(LabelRef("loop4check"))
	if ftz {
		// k is even: one pair of steps, odd first.
		step(1)
		step(0)
		advanceA(2)
		ADDQ(U32(2*4*nr), b)
	} else {
		Label("loop1")
		step(0)
		advanceA(1)
		ADDQ(U32(4*nr), b)
		DECQ(k)
		JNZ(LabelRef("loop1"))
	}
	Label("loop4check")
	TESTQ(R10, R10)
	JZ(LabelRef("store"))
	// R11 walks the rows of the next tile down (the macro-kernel's next
	// call), prefetching one row per unrolled iteration while R12 lasts.
	IMUL3Q(U32(mr), ldc, R11)
	ADDQ(c, R11)
	MOVQ(U32(mr), R12)
	Label("loop4")
	for i, s := range order {
		step(s)
		if i == 0 {
			TESTQ(R12, R12)
			JZ(LabelRef("nopf"))
			PREFETCHT0(Mem{Base: R11})
			PREFETCHT0(Mem{Base: R11, Disp: 64})
			PREFETCHT0(Mem{Base: R11, Disp: 4*nr - 4})
			ADDQ(ldc, R11)
			DECQ(R12)
			Label("nopf")
		}
	}
	advanceA(unroll)
	ADDQ(U32(4*nr*unroll), b)
	DECQ(R10)
	JNZ(LabelRef("loop4"))

	Label("store")
	if ftz {
		LDMXCSR(mxcsr)
	}
	TESTQ(accum, accum)
	JZ(LabelRef("storeset"))
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VADDPS(Mem{Base: c, Disp: 64 * v}, acc(r, v), acc(r, v))
			VMOVUPS(acc(r, v), Mem{Base: c, Disp: 64 * v})
		}
		if r < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
	Label("storeset")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VMOVUPS(acc(r, v), Mem{Base: c, Disp: 64 * v})
		}
		if r < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}

// gemmAVX2 emits an mr×(8·nv) AVX2+FMA micro-kernel with ymm accumulators and
// explicit VBROADCASTSS of the packed A values; with ftz, its k loop runs
// under MXCSR.FTZ (see ftzOn).
func gemmAVX2(mr, nv int, ftz bool) {
	nr := 8 * nv
	name := fmt.Sprintf("gemmKernAVX2_%dx%d", mr, nr)
	if ftz {
		name += "_ftz"
	}
	TEXT(name, NOSPLIT, kernSig)
	Pragma("noescape")
	if ftz {
		Doc(fmt.Sprintf("%s is gemmKernAVX2_%dx%d for bf16 split panels: its fused multiply-adds run under", name, mr, nr),
			"MXCSR.FTZ (a tiny result, below 2^-126 after rounding, flushed to a zero of its sign; the C update is not)",
			"and each pair of k steps odd first; k must be even.")
	} else {
		Doc(fmt.Sprintf("%s is the AVX2+FMA %d×%d micro-kernel; see gemmKernAVX512_14x32 for the contract.", name, mr, nr))
	}
	if mr*nv+nv+2 > 16 {
		panic("too many registers")
	}
	acc := func(r, v int) VecPhysical { return ymm[r*nv+v] }
	bs := ymm[mr*nv : mr*nv+nv]
	as := ymm[14:16]

	k, a, b, c, ldc, accum := RSI, RAX, RBX, RCX, RDX, R8
	Load(Param("k"), k)
	Load(Param("a"), a)
	Load(Param("b"), b)
	Load(Param("c"), c)
	Load(Param("ldc"), ldc)
	Load(Param("accum"), accum)
	SHLQ(U8(2), ldc)
	var mxcsr Mem
	if ftz {
		mxcsr = ftzOn(R11)
	}
	MOVQ(c, R9)
	for r := 0; r < mr; r++ {
		PREFETCHT0(Mem{Base: R9})
		PREFETCHT0(Mem{Base: R9, Disp: 4*nr - 4})
		ADDQ(ldc, R9)
	}
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VXORPS(acc(r, v), acc(r, v), acc(r, v))
		}
	}
	step := func(s int) {
		for v := 0; v < nv; v++ {
			VMOVUPS(Mem{Base: b, Disp: 4 * (s*nr + 8*v)}, bs[v])
		}
		for r := 0; r < mr; r++ {
			ar := as[r%2]
			VBROADCASTSS(Mem{Base: a, Disp: 4 * (s*mr + r)}, ar)
			for v := 0; v < nv; v++ {
				VFMADD231PS(bs[v], ar, acc(r, v))
			}
		}
	}
	const unroll = 4
	MOVQ(k, R10)
	SHRQ(U8(2), R10)
	ANDQ(U8(unroll-1), k)
	JZ(LabelRef("loop4check"))
	if ftz {
		// k is even: one pair of steps, odd first.
		step(1)
		step(0)
		ADDQ(U32(2*4*mr), a)
		ADDQ(U32(2*4*nr), b)
	} else {
		Label("loop1")
		step(0)
		ADDQ(U32(4*mr), a)
		ADDQ(U32(4*nr), b)
		DECQ(k)
		JNZ(LabelRef("loop1"))
	}
	Label("loop4check")
	TESTQ(R10, R10)
	JZ(LabelRef("store"))
	Label("loop4")
	for _, s := range stepOrder(ftz) {
		step(s)
	}
	ADDQ(U32(4*mr*unroll), a)
	ADDQ(U32(4*nr*unroll), b)
	DECQ(R10)
	JNZ(LabelRef("loop4"))

	Label("store")
	if ftz {
		LDMXCSR(mxcsr)
	}
	TESTQ(accum, accum)
	JZ(LabelRef("storeset"))
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VADDPS(Mem{Base: c, Disp: 32 * v}, acc(r, v), acc(r, v))
			VMOVUPS(acc(r, v), Mem{Base: c, Disp: 32 * v})
		}
		if r < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
	Label("storeset")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VMOVUPS(acc(r, v), Mem{Base: c, Disp: 32 * v})
		}
		if r < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}

// stepOrder is the order of the four unrolled k steps: in k order, or, for
// the bf16 kernels on split panels (ftz), each pair's odd step first, the
// order of VDPBF16PS's two multiply-adds (k, a split panel's step count, is
// then even).
func stepOrder(ftz bool) []int {
	if ftz {
		return []int{1, 0, 3, 2}
	}
	return []int{0, 1, 2, 3}
}

// ftzOn saves MXCSR in a local slot, whose address it returns for the
// LDMXCSR that restores it, and sets its FTZ bit (15), clobbering tmp. On
// x86 FTZ flushes a result whose rounding with an unbounded exponent is below
// the smallest normal float32 (tininess after rounding), which is what
// VDPBF16PS does (bf16FMA). An assembly function is never preempted
// asynchronously, and a signal handler runs with a fresh MXCSR that the
// kernel restores on return, so no other Go code sees the bit; every kernel
// that sets it restores it before its C update (a plain float32 addition).
func ftzOn(tmp GPPhysical) Mem {
	slot := AllocLocal(8)
	STMXCSR(slot)
	MOVL(slot, tmp.As32())
	ORL(U32(0x8000), tmp.As32())
	MOVL(tmp.As32(), slot.Offset(4))
	LDMXCSR(slot.Offset(4))
	return slot
}

// tailMask sets K1 to the low CX bits (CX in [1,15]); clobbers AX.
func tailMask() {
	MOVL(U32(1), EAX)
	SHLL(CL, EAX)
	DECL(EAX)
	KMOVW(EAX, K1)
}

// hsumZ0 reduces Z0 to its lane sum in X0.
func hsumZ0() {
	VEXTRACTF64X4(U8(1), Z0, Y1)
	VADDPS(Y1, Y0, Y0)
	hsumY0()
}

func hsumY0() {
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPS(X1, X0, X0)
	VPERMILPS(U8(0xEE), X0, X1)
	VADDPS(X1, X0, X0)
	VPERMILPS(U8(0x01), X0, X1)
	VADDSS(X1, X0, X0)
}

func dotAVX512() {
	TEXT("dotAVX512", NOSPLIT, "func(x, y []float32) float32")
	Pragma("noescape")
	Doc("dotAVX512 returns Σ x[i]·y[i] over len(x) elements (len(y) >= len(x)).")
	x, y, n := RSI, RDI, RCX
	Load(Param("x").Base(), x)
	Load(Param("y").Base(), y)
	Load(Param("x").Len(), n)
	for i := 0; i < 4; i++ {
		VPXORD(zmm[i], zmm[i], zmm[i])
	}
	Label("loop64")
	CMPQ(n, U8(64))
	JB(LabelRef("loop16"))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: x, Disp: 64 * i}, zmm[4+i])
		VFMADD231PS(Mem{Base: y, Disp: 64 * i}, zmm[4+i], zmm[i])
	}
	ADDQ(U32(256), x)
	ADDQ(U32(256), y)
	SUBQ(U8(64), n)
	JMP(LabelRef("loop64"))
	Label("loop16")
	CMPQ(n, U8(16))
	JB(LabelRef("tail"))
	VMOVUPS(Mem{Base: x}, Z4)
	VFMADD231PS(Mem{Base: y}, Z4, Z0)
	ADDQ(U8(64), x)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("reduce"))
	tailMask()
	VMOVUPS_Z(Mem{Base: x}, K1, Z4)
	VMOVUPS_Z(Mem{Base: y}, K1, Z5)
	VFMADD231PS(Z5, Z4, Z1)
	Label("reduce")
	VADDPS(Z1, Z0, Z0)
	VADDPS(Z3, Z2, Z2)
	VADDPS(Z2, Z0, Z0)
	hsumZ0()
	Store(X0, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// elementwise emits the usual 64/16/masked loop structure over n = len(first
// slice) elements; body(ptrOff, regs, mask) handles len(regs) vectors.
func elementwiseAVX512(n Register, ptrs []Register, body func(disp int, z VecPhysical, masked bool)) {
	Label("loop64")
	CMPQ(n, U8(64))
	JB(LabelRef("loop16"))
	for i := 0; i < 4; i++ {
		body(64*i, zmm[i], false)
	}
	for _, p := range ptrs {
		ADDQ(U32(256), p)
	}
	SUBQ(U8(64), n)
	JMP(LabelRef("loop64"))
	Label("loop16")
	CMPQ(n, U8(16))
	JB(LabelRef("tail"))
	body(0, Z0, false)
	for _, p := range ptrs {
		ADDQ(U8(64), p)
	}
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	tailMask()
	body(0, Z0, true)
	Label("done")
	VZEROUPPER()
	RET()
}

func axpyAVX512() {
	TEXT("axpyAVX512", NOSPLIT, "func(alpha float32, x, y []float32)")
	Pragma("noescape")
	Doc("axpyAVX512 computes y[i] += alpha·x[i] for i < len(x).")
	x, y, n := RSI, RDI, RCX
	Load(Param("alpha"), X8)
	VBROADCASTSS(X8, Z8)
	Load(Param("x").Base(), x)
	Load(Param("y").Base(), y)
	Load(Param("x").Len(), n)
	elementwiseAVX512(n, []Register{x, y}, func(d int, z VecPhysical, masked bool) {
		if masked {
			VMOVUPS_Z(Mem{Base: x}, K1, Z0)
			VMOVUPS_Z(Mem{Base: y}, K1, Z1)
			VFMADD231PS(Z0, Z8, Z1)
			VMOVUPS(Z1, K1, Mem{Base: y})
			return
		}
		VMOVUPS(Mem{Base: x, Disp: d}, z)
		VFMADD213PS(Mem{Base: y, Disp: d}, Z8, z)
		VMOVUPS(z, Mem{Base: y, Disp: d})
	})
}

func scaleAVX512() {
	TEXT("scaleAVX512", NOSPLIT, "func(alpha float32, x []float32)")
	Pragma("noescape")
	Doc("scaleAVX512 computes x[i] *= alpha.")
	x, n := RSI, RCX
	Load(Param("alpha"), X8)
	VBROADCASTSS(X8, Z8)
	Load(Param("x").Base(), x)
	Load(Param("x").Len(), n)
	elementwiseAVX512(n, []Register{x}, func(d int, z VecPhysical, masked bool) {
		if masked {
			VMOVUPS_Z(Mem{Base: x}, K1, Z0)
			VMULPS(Z8, Z0, Z0)
			VMOVUPS(Z0, K1, Mem{Base: x})
			return
		}
		VMULPS(Mem{Base: x, Disp: d}, Z8, z)
		VMOVUPS(z, Mem{Base: x, Disp: d})
	})
}

func addAVX512() {
	TEXT("addAVX512", NOSPLIT, "func(dst, x []float32)")
	Pragma("noescape")
	Doc("addAVX512 computes dst[i] += x[i] for i < len(x).")
	d, x, n := RDI, RSI, RCX
	Load(Param("dst").Base(), d)
	Load(Param("x").Base(), x)
	Load(Param("x").Len(), n)
	elementwiseAVX512(n, []Register{d, x}, func(o int, z VecPhysical, masked bool) {
		if masked {
			VMOVUPS_Z(Mem{Base: x}, K1, Z0)
			VMOVUPS_Z(Mem{Base: d}, K1, Z1)
			VADDPS(Z0, Z1, Z1)
			VMOVUPS(Z1, K1, Mem{Base: d})
			return
		}
		VMOVUPS(Mem{Base: d, Disp: o}, z)
		VADDPS(Mem{Base: x, Disp: o}, z, z)
		VMOVUPS(z, Mem{Base: d, Disp: o})
	})
}

func maxAVX512() {
	TEXT("maxAVX512", NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc("maxAVX512 returns the largest element of x, or -Inf when x is empty.")
	x, n := RSI, RCX
	Load(Param("x").Base(), x)
	Load(Param("x").Len(), n)
	MOVL(U32(0xFF800000), EAX)
	VPBROADCASTD(EAX, Z0)
	for i := 1; i < 4; i++ {
		VMOVAPS(Z0, zmm[i])
	}
	Label("loop64")
	CMPQ(n, U8(64))
	JB(LabelRef("loop16"))
	for i := 0; i < 4; i++ {
		VMAXPS(Mem{Base: x, Disp: 64 * i}, zmm[i], zmm[i])
	}
	ADDQ(U32(256), x)
	SUBQ(U8(64), n)
	JMP(LabelRef("loop64"))
	Label("loop16")
	CMPQ(n, U8(16))
	JB(LabelRef("tail"))
	VMAXPS(Mem{Base: x}, Z1, Z1)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("reduce"))
	tailMask()
	VMAXPS(Mem{Base: x}, Z2, K1, Z2)
	Label("reduce")
	VMAXPS(Z1, Z0, Z0)
	VMAXPS(Z3, Z2, Z2)
	VMAXPS(Z2, Z0, Z0)
	VEXTRACTF64X4(U8(1), Z0, Y1)
	VMAXPS(Y1, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0xEE), X0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0x01), X0, X1)
	VMAXSS(X1, X0, X0)
	Store(X0, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// Cephes expf: exp(x) = 2^n · exp(r), x = n·ln2 + r, |r| <= ln2/2, with the
// Cody-Waite split ln2 = expC1 + expC2 and a degree-7 polynomial for exp(r).
const (
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375
	expC2    = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

func f32bits(f float64) uint32 { return math.Float32bits(float32(f)) }

func expAVX512() {
	TEXT("expAVX512", NOSPLIT, "func(dst, src []float32)")
	Pragma("noescape")
	Doc("expAVX512 computes dst[i] = exp(src[i]) for i < len(src); 2^n is applied with VSCALEFPS,",
		"which gives +Inf on overflow and gradual underflow to 0.")
	d, s, n := RDI, RSI, RCX
	Load(Param("dst").Base(), d)
	Load(Param("src").Base(), s)
	Load(Param("src").Len(), n)
	expConstsAVX512()
	body := expBodyAVX512
	Label("loop32")
	CMPQ(n, U8(32))
	JB(LabelRef("loop16"))
	VMOVUPS(Mem{Base: s}, Z0)
	VMOVUPS(Mem{Base: s, Disp: 64}, Z4)
	body(Z0, Z1, Z2, Z3)
	body(Z4, Z5, Z6, Z7)
	VMOVUPS(Z2, Mem{Base: d})
	VMOVUPS(Z6, Mem{Base: d, Disp: 64})
	ADDQ(U8(128), s)
	ADDQ(U8(128), d)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop16")
	CMPQ(n, U8(16))
	JB(LabelRef("tail"))
	VMOVUPS(Mem{Base: s}, Z0)
	body(Z0, Z1, Z2, Z3)
	VMOVUPS(Z2, Mem{Base: d})
	ADDQ(U8(64), s)
	ADDQ(U8(64), d)
	SUBQ(U8(16), n)
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	tailMask()
	VMOVUPS_Z(Mem{Base: s}, K1, Z0)
	body(Z0, Z1, Z2, Z3)
	VMOVUPS(Z2, K1, Mem{Base: d})
	Label("done")
	VZEROUPPER()
	RET()
}

// elementwiseAVX2 is the 32/8/scalar loop skeleton of the AVX2 kernels.
func elementwiseAVX2(n Register, ptrs []Register, body func(disp int, y VecPhysical), scalar func()) {
	Label("loop32")
	CMPQ(n, U8(32))
	JB(LabelRef("loop8"))
	for i := 0; i < 4; i++ {
		body(32*i, ymm[i])
	}
	for _, p := range ptrs {
		ADDQ(U8(128), p)
	}
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop8")
	CMPQ(n, U8(8))
	JB(LabelRef("tail"))
	body(0, Y0)
	for _, p := range ptrs {
		ADDQ(U8(32), p)
	}
	SUBQ(U8(8), n)
	JMP(LabelRef("loop8"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	scalar()
	for _, p := range ptrs {
		ADDQ(U8(4), p)
	}
	DECQ(n)
	JMP(LabelRef("tail"))
	Label("done")
	VZEROUPPER()
	RET()
}

func axpyAVX2() {
	TEXT("axpyAVX2", NOSPLIT, "func(alpha float32, x, y []float32)")
	Pragma("noescape")
	Doc("axpyAVX2 computes y[i] += alpha·x[i] for i < len(x).")
	x, y, n := RSI, RDI, RCX
	Load(Param("alpha"), X8)
	VBROADCASTSS(X8, Y8)
	Load(Param("x").Base(), x)
	Load(Param("y").Base(), y)
	Load(Param("x").Len(), n)
	elementwiseAVX2(n, []Register{x, y}, func(d int, z VecPhysical) {
		VMOVUPS(Mem{Base: x, Disp: d}, z)
		VFMADD213PS(Mem{Base: y, Disp: d}, Y8, z)
		VMOVUPS(z, Mem{Base: y, Disp: d})
	}, func() {
		VMOVSS(Mem{Base: x}, X0)
		VFMADD213SS(Mem{Base: y}, X8, X0)
		VMOVSS(X0, Mem{Base: y})
	})
}

func scaleAVX2() {
	TEXT("scaleAVX2", NOSPLIT, "func(alpha float32, x []float32)")
	Pragma("noescape")
	Doc("scaleAVX2 computes x[i] *= alpha.")
	x, n := RSI, RCX
	Load(Param("alpha"), X8)
	VBROADCASTSS(X8, Y8)
	Load(Param("x").Base(), x)
	Load(Param("x").Len(), n)
	elementwiseAVX2(n, []Register{x}, func(d int, z VecPhysical) {
		VMULPS(Mem{Base: x, Disp: d}, Y8, z)
		VMOVUPS(z, Mem{Base: x, Disp: d})
	}, func() {
		VMULSS(Mem{Base: x}, X8, X0)
		VMOVSS(X0, Mem{Base: x})
	})
}

func addAVX2() {
	TEXT("addAVX2", NOSPLIT, "func(dst, x []float32)")
	Pragma("noescape")
	Doc("addAVX2 computes dst[i] += x[i] for i < len(x).")
	d, x, n := RDI, RSI, RCX
	Load(Param("dst").Base(), d)
	Load(Param("x").Base(), x)
	Load(Param("x").Len(), n)
	elementwiseAVX2(n, []Register{d, x}, func(o int, z VecPhysical) {
		VMOVUPS(Mem{Base: d, Disp: o}, z)
		VADDPS(Mem{Base: x, Disp: o}, z, z)
		VMOVUPS(z, Mem{Base: d, Disp: o})
	}, func() {
		VMOVSS(Mem{Base: d}, X0)
		VADDSS(Mem{Base: x}, X0, X0)
		VMOVSS(X0, Mem{Base: d})
	})
}

func maxAVX2() {
	TEXT("maxAVX2", NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc("maxAVX2 returns the largest element of x, or -Inf when x is empty.")
	x, n := RSI, RCX
	Load(Param("x").Base(), x)
	Load(Param("x").Len(), n)
	MOVL(U32(0xFF800000), EAX)
	MOVD(EAX, X0)
	VBROADCASTSS(X0, Y0)
	for i := 1; i < 4; i++ {
		VMOVAPS(Y0, ymm[i])
	}
	VMOVAPS(X0, X8)
	Label("loop32")
	CMPQ(n, U8(32))
	JB(LabelRef("loop8"))
	for i := 0; i < 4; i++ {
		VMAXPS(Mem{Base: x, Disp: 32 * i}, ymm[i], ymm[i])
	}
	ADDQ(U8(128), x)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop8")
	CMPQ(n, U8(8))
	JB(LabelRef("tail"))
	VMAXPS(Mem{Base: x}, Y1, Y1)
	ADDQ(U8(32), x)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop8"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("reduce"))
	VMAXSS(Mem{Base: x}, X8, X8)
	ADDQ(U8(4), x)
	DECQ(n)
	JMP(LabelRef("tail"))
	Label("reduce")
	VMAXPS(Y1, Y0, Y0)
	VMAXPS(Y3, Y2, Y2)
	VMAXPS(Y2, Y0, Y0)
	VEXTRACTF128(U8(1), Y0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0xEE), X0, X1)
	VMAXPS(X1, X0, X0)
	VPERMILPS(U8(0x01), X0, X1)
	VMAXSS(X1, X0, X0)
	VMAXSS(X8, X0, X0)
	Store(X0, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func expAVX2() {
	TEXT("expAVX2", NOSPLIT, "func(dst, src []float32)")
	Pragma("noescape")
	Doc("expAVX2 computes dst[i] = exp(src[i]) for i < len(src) rounded down to a multiple of 8",
		"(the Go wrapper handles the tail). 2^n is applied as two factors 2^(n>>1)·2^(n-(n>>1)),",
		"so that x in [-104, 88.8] never needs a denormal or infinite scale.")
	cst := expConstAVX2()
	d, s, n := RDI, RSI, RCX
	Load(Param("dst").Base(), d)
	Load(Param("src").Base(), s)
	Load(Param("src").Len(), n)
	SHRQ(U8(3), n)
	JZ(LabelRef("done"))
	VMOVUPS(cst(0), Y15)
	VMOVUPS(cst(1), Y14)
	VMOVUPS(cst(2), Y13)
	VMOVUPS(cst(3), Y12)
	VMOVUPS(cst(4), Y11)
	VMOVUPS(cst(12), Y10)
	Label("loop8")
	VMOVUPS(Mem{Base: s}, Y0)
	expBodyAVX2(expRegsAVX2{x: Y0, t: Y1, y: Y2, z: Y3, s1: Y4, s2: Y5, hi: Y15, lo: Y14,
		log2e: Y13, c1: Y12, c2: Y11, bias: Y10}, cst)
	VMOVUPS(Y2, Mem{Base: d})
	ADDQ(U8(32), s)
	ADDQ(U8(32), d)
	DECQ(n)
	JNZ(LabelRef("loop8"))
	Label("done")
	VZEROUPPER()
	RET()
}

// fmaPeak emits a loop of 4·len(acc) independent FMA chains, for measuring
// the FMA throughput of the machine (BenchmarkFMAPeak).
func fmaPeak(name string, acc []VecPhysical, x, y VecPhysical) {
	TEXT(name, NOSPLIT, "func(iters int)")
	Doc(fmt.Sprintf("%s runs iters × %d independent VFMADD231PS (FMA peak measurement).", name, 4*len(acc)))
	Load(Param("iters"), RCX)
	for _, r := range append(acc, x, y) {
		if r.Size() == 64 {
			VPXORD(r, r, r)
		} else {
			VXORPS(r, r, r)
		}
	}
	Label("loop")
	for i := 0; i < 4; i++ {
		for _, r := range acc {
			VFMADD231PS(x, y, r)
		}
	}
	DECQ(RCX)
	JNZ(LabelRef("loop"))
	VZEROUPPER()
	RET()
}

// transPackAVX512 emits the transposing packer: 16 source rows (given by a
// pointer array, so that missing rows can point at zeros) are read 16
// columns at a time, transposed in registers (unpck/shufps/shuff32x4, four
// stages) and written as 16-element output rows of stride dstStride under a
// store mask. It serves A (not transposed, MR <= 16 rows) and Bᵀ (two
// 16-row halves of a 32-wide panel).
func transPackAVX512() {
	TEXT("transPackAVX512", NOSPLIT, "func(rows *[16]*float32, nblk int, dst *float32, dstStride int, mask int)")
	Pragma("noescape")
	Doc("transPackAVX512 sets dst[kk*dstStride+r] = rows[r][kk] for kk < 16·nblk and the lanes r of mask.")
	rows, nblk, dst, stride, off, p := RSI, RCX, RDI, RDX, R8, R9
	Load(Param("rows"), rows)
	Load(Param("nblk"), nblk)
	Load(Param("dst"), dst)
	Load(Param("dstStride"), stride)
	Load(Param("mask"), RAX)
	KMOVW(EAX, K1)
	SHLQ(U8(2), stride)
	XORQ(off, off)
	TESTQ(nblk, nblk)
	JZ(LabelRef("done"))
	Label("block")
	for r := 0; r < 16; r++ {
		MOVQ(Mem{Base: rows, Disp: 8 * r}, p)
		VMOVUPS(Mem{Base: p, Index: off, Scale: 1}, zmm[r])
		PREFETCHT0(Mem{Base: p, Index: off, Scale: 1, Disp: 512})
	}
	transpose16x16(dst, stride)
	ADDQ(U8(64), off)
	DECQ(nblk)
	JNZ(LabelRef("block"))
	Label("done")
	VZEROUPPER()
	RET()
}

// transpose16x16 emits the 16×16 dword transpose of zmm0-15 (row r in zmm r)
// and stores column c at dst + c·stride under mask K1, advancing dst by
// 16·stride. It uses all 32 zmm registers.
func transpose16x16(dst, stride Register) {
	// Stage 1: interleave row pairs.
	for i := 0; i < 8; i++ {
		VUNPCKLPS(zmm[2*i+1], zmm[2*i], zmm[16+2*i])
		VUNPCKHPS(zmm[2*i+1], zmm[2*i], zmm[16+2*i+1])
	}
	// Stage 2: within each group of 4 rows, u[g][j] holds column 4L+j of the
	// group's rows in 128-bit lane L.
	u := func(g, j int) VecPhysical { return zmm[4*g+j] }
	for g := 0; g < 4; g++ {
		t := zmm[16+4*g : 16+4*g+4]
		VSHUFPS(U8(0x44), t[2], t[0], u(g, 0))
		VSHUFPS(U8(0xEE), t[2], t[0], u(g, 1))
		VSHUFPS(U8(0x44), t[3], t[1], u(g, 2))
		VSHUFPS(U8(0xEE), t[3], t[1], u(g, 3))
	}
	// Stage 3: pair groups (0,1) and (2,3) on 128-bit lanes.
	v := func(h, j, s int) VecPhysical { return zmm[16+8*h+2*j+s] }
	for h := 0; h < 2; h++ {
		for j := 0; j < 4; j++ {
			VSHUFF32X4(U8(0x88), u(2*h+1, j), u(2*h, j), v(h, j, 0))
			VSHUFF32X4(U8(0xDD), u(2*h+1, j), u(2*h, j), v(h, j, 1))
		}
	}
	// Stage 4: column c = 4·lane + j.
	col := make([]VecPhysical, 16)
	for j := 0; j < 4; j++ {
		col[j] = zmm[j]
		col[8+j] = zmm[4+j]
		col[4+j] = zmm[8+j]
		col[12+j] = zmm[12+j]
		VSHUFF32X4(U8(0x88), v(1, j, 0), v(0, j, 0), col[j])
		VSHUFF32X4(U8(0xDD), v(1, j, 0), v(0, j, 0), col[8+j])
		VSHUFF32X4(U8(0x88), v(1, j, 1), v(0, j, 1), col[4+j])
		VSHUFF32X4(U8(0xDD), v(1, j, 1), v(0, j, 1), col[12+j])
	}
	for c := 0; c < 16; c++ {
		VMOVUPS(col[c], K1, Mem{Base: dst})
		ADDQ(stride, dst)
	}
}

// copyPackAVX512 emits the row-copying packer (op(A) panels for A
// transposed, B panels for B not transposed): source row kk holds the block's
// columns contiguously, panel q gets columns [q·w, q·w+w) of each row. Rows
// are taken in groups of 8 and each group is spread over all panels, so the
// source is read row by row (a column-panel-at-a-time order would read one
// short piece of every row at the same offset, which with power-of-two
// strides keeps hitting the same few L1 sets).
func copyPackAVX512() {
	TEXT("copyPackAVX512", NOSPLIT, "func(src *float32, lds int, kc int, panels int, dst *float32, w int, fullMask int, lastMask int)")
	Pragma("noescape")
	Doc("copyPackAVX512 sets dst[q*kc*w + kk*w + c] = src[kk*lds + q*w + c] for kk < kc, q < panels, c < w (w <= 32).",
		"fullMask is (1<<w)-1; in the last panel only the lanes of lastMask are read, the others are set to 0.")
	r := loadPackRegs()
	r.loadMasks()
	s, d := r.s, r.d
	SHLQ(U8(2), r.lds)
	SHLQ(U8(2), r.wb)
	MOVQ(r.kc, r.ps)
	IMULQ(r.wb, r.ps)
	r.loop("", 8, 1, func() {
		VMOVUPS_Z(Mem{Base: s}, K1, Z0)
		VMOVUPS_Z(Mem{Base: s, Disp: 64}, K2, Z1)
		VMOVUPS(Z0, K3, Mem{Base: d})
		VMOVUPS(Z1, K4, Mem{Base: d, Disp: 64})
	})
	Label("done")
	VZEROUPPER()
	RET()
}

// packRegs are the registers of the row-copying packers' loop (copyPackAVX512, copyPackBF16AVX512).
type packRegs struct {
	src, lds, kc, dst, ps, wb, g, qn, srcq, dstq, s, d, n Register
}

// loadPackRegs assigns the row-copying packers' registers and loads their common arguments (src, lds, kc,
// dst and w, the last into wb).
func loadPackRegs() packRegs {
	r := packRegs{src: RSI, lds: RBX, kc: RCX, dst: RDI, ps: R8, wb: R9, g: R10, qn: R11, srcq: R12, dstq: R13, s: RAX, d: R14, n: RDX}
	Load(Param("src"), r.src)
	Load(Param("lds"), r.lds)
	Load(Param("kc"), r.kc)
	Load(Param("dst"), r.dst)
	Load(Param("w"), r.wb)
	return r
}

// loadMasks sets K3/K4 to the low and high 16 bits of fullMask and K5/K6 to those of lastMask (through s,
// which must be RAX).
func (r packRegs) loadMasks() {
	Load(Param("fullMask"), r.s)
	KMOVW(EAX, K3)
	SHRQ(U8(16), r.s)
	KMOVW(EAX, K4)
	Load(Param("lastMask"), r.s)
	KMOVW(EAX, K5)
	SHRQ(U8(16), r.s)
	KMOVW(EAX, K6)
}

// loop emits the row-copying packers' loop: steps (kc of them) in groups of up to `group`, each group spread
// over all panels so that the source is read row by row; a step reads `rows` source rows (lds apart) at s and
// writes one panel row at d (wb bytes). K1/K2 are set to the full masks K3/K4, or in the last panel to K5/K6,
// before row runs. Labels get sfx, so that one function can hold several loops; all leave through "done".
func (r packRegs) loop(sfx string, group, rows int, row func()) {
	Label("group" + sfx)
	TESTQ(r.kc, r.kc)
	JZ(LabelRef("done"))
	MOVQ(U32(group), r.g)
	CMPQ(r.kc, r.g)
	CMOVQLT(r.kc, r.g)
	MOVQ(r.src, r.srcq)
	MOVQ(r.dst, r.dstq)
	Load(Param("panels"), r.qn)
	KMOVW(K3, K1)
	KMOVW(K4, K2)
	Label("panel" + sfx)
	CMPQ(r.qn, U8(1))
	JNE(LabelRef("rows" + sfx))
	KMOVW(K5, K1)
	KMOVW(K6, K2)
	Label("rows" + sfx)
	MOVQ(r.srcq, r.s)
	MOVQ(r.dstq, r.d)
	MOVQ(r.g, r.n)
	Label("row" + sfx)
	row()
	for i := 0; i < rows; i++ {
		ADDQ(r.lds, r.s)
	}
	ADDQ(r.wb, r.d)
	DECQ(r.n)
	JNZ(LabelRef("row" + sfx))
	ADDQ(r.wb, r.srcq)
	ADDQ(r.ps, r.dstq)
	DECQ(r.qn)
	JNZ(LabelRef("panel" + sfx))
	MOVQ(r.g, r.s)
	IMULQ(r.lds, r.s)
	for i := 0; i < rows; i++ {
		ADDQ(r.s, r.src)
	}
	MOVQ(r.g, r.s)
	IMULQ(r.wb, r.s)
	ADDQ(r.s, r.dst)
	SUBQ(r.g, r.kc)
	JMP(LabelRef("group" + sfx))
}
