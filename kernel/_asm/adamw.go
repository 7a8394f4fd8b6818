package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// adamwAVX512 emits the AdamW element update on 16 lanes, operation for
// operation the pure-Go adamwGeneric (kernel/adamw.go: every product and sum
// rounded on its own, no fused multiply-add, the square root correctly
// rounded), so that the two agree bit for bit on finite values. The
// coefficients arrive as an array by value (kernel.AdamWCoeffs order), so that
// nothing escapes through the function value that calls it.
func adamwAVX512() {
	TEXT("adamwAVX512", NOSPLIT, "func(p, g, m, v []float32, k [9]float32)")
	Pragma("noescape")
	Doc("adamwAVX512 is adamwGeneric on 16 lanes (masked tail): the AdamW update of p, m and v from g, k the coefficients.")
	p, g, m, v, n := RDI, RSI, R8, R9, RCX
	Load(Param("p").Base(), p)
	Load(Param("g").Base(), g)
	Load(Param("m").Base(), m)
	Load(Param("v").Base(), v)
	Load(Param("p").Len(), n)
	// Z16 … Z24: scale, b1, 1−b1, b2, 1−b2, decay, step size, √(bias correction 2), eps.
	for i := 0; i < 9; i++ {
		Load(Param("k").Index(i), X0)
		VBROADCASTSS(X0, zmm[16+i])
	}
	scale, b1, omb1, b2, omb2, decay, step, bc2, eps := zmm[16], zmm[17], zmm[18], zmm[19], zmm[20], zmm[21], zmm[22], zmm[23], zmm[24]
	body := func(masked bool) {
		load := func(base Register, z VecPhysical) {
			if masked {
				VMOVUPS_Z(Mem{Base: base}, K1, z)
			} else {
				VMOVUPS(Mem{Base: base}, z)
			}
		}
		store := func(z VecPhysical, base Register) {
			if masked {
				VMOVUPS(z, K1, Mem{Base: base})
			} else {
				VMOVUPS(z, Mem{Base: base})
			}
		}
		load(g, Z0)
		VMULPS(scale, Z0, Z0) // gi = g·scale
		load(m, Z1)
		VMULPS(b1, Z1, Z1)   // b1·m
		VMULPS(omb1, Z0, Z2) // (1−b1)·gi
		VADDPS(Z2, Z1, Z1)   // mi
		store(Z1, m)
		load(v, Z3)
		VMULPS(b2, Z3, Z3)   // b2·v
		VMULPS(omb2, Z0, Z4) // (1−b2)·gi
		VMULPS(Z0, Z4, Z4)   // ·gi
		VADDPS(Z4, Z3, Z3)   // vi
		store(Z3, v)
		VSQRTPS(Z3, Z5)
		VDIVPS(bc2, Z5, Z5) // √vi / √bc2
		VADDPS(eps, Z5, Z5) // + eps
		VMULPS(step, Z1, Z6)
		VDIVPS(Z5, Z6, Z6) // step·mi / denominator
		load(p, Z7)
		VMULPS(decay, Z7, Z7)
		VSUBPS(Z6, Z7, Z7) // p·decay − …
		store(Z7, p)
	}
	Label("loop16")
	CMPQ(n, U8(16))
	JB(LabelRef("tail"))
	body(false)
	for _, r := range []Register{p, g, m, v} {
		ADDQ(U8(64), r)
	}
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	tailMask()
	body(true)
	Label("done")
	VZEROUPPER()
	RET()
}
