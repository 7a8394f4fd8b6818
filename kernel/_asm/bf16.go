package main

// The AVX512_BF16 kernels. Neither Go's assembler nor avo knows the
// AVX512_BF16 instructions (VDPBF16PS, VCVTNE2PS2BF16), so this file encodes
// them itself and emits them as BYTE directives, each preceded by a comment
// with the Intel-syntax mnemonic. Encoding here (instead of cgo with the C
// compiler's intrinsics) keeps the kernels in the same generated file as the
// others, under the same register plan, with no cgo call overhead per tile
// and no C toolchain in the build. Only the operand forms the kernels use are
// supported: register operands and [base + disp] memory operands with a
// 32-bit broadcast; anything else panics at generation time.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// rawBytes emits b as BYTE directives after a comment naming the instruction.
func rawBytes(mnemonic string, b []byte) {
	Comment(mnemonic)
	for _, x := range b {
		Instruction(&ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(x)}})
	}
}

// evex returns the 4-byte EVEX prefix for a 512-bit instruction in map 0F38
// (mm = 2) with prefix pp (1 = 66, 2 = F3, 3 = F2), W0, no mask: reg is
// ModRM.reg's register (0-31), vvvv the second source (0-31), rmX and rmB the
// extension bits of ModRM.rm (index/base bit 3, or register bits 4 and 3),
// bcst the EVEX.b bit.
func evex(pp byte, reg, vvvv int, rmX, rmB bool, bcst bool) []byte {
	inv := func(b bool) byte {
		if b {
			return 0
		}
		return 1
	}
	p0 := inv(reg&8 != 0)<<7 | inv(rmX)<<6 | inv(rmB)<<5 | inv(reg&16 != 0)<<4 | 2
	p1 := byte(0)<<7 | byte(^vvvv&15)<<3 | 1<<2 | pp
	var b byte
	if bcst {
		b = 1
	}
	p2 := byte(0)<<7 | 2<<5 | b<<4 | inv(vvvv&16 != 0)<<3
	return []byte{0x62, p0, p1, p2}
}

func vecIndex(v VecPhysical) int {
	if v.Size() != 64 {
		panic("bf16 encoder: only zmm registers")
	}
	return int(v.PhysicalIndex())
}

// vdpbf16psBcst emits VDPBF16PS acc, src1, dword ptr [base + disp]{1to16}:
// acc.fp32[i] += src1.bf16[2i+1]·m.bf16[1], then += src1.bf16[2i]·m.bf16[0]
// (EVEX.512.F3.0F38.W0 52 /r with EVEX.b = 1; disp8 is scaled by 4).
func vdpbf16psBcst(m Mem, src1, acc VecPhysical) {
	base, ok := m.Base.(Physical)
	if !ok || m.Index != nil || m.Disp%4 != 0 {
		panic("bf16 encoder: memory operand must be [base + 4·n]")
	}
	bi := int(base.PhysicalIndex())
	if bi&7 == 4 || bi&7 == 5 {
		panic("bf16 encoder: base register needs SIB or forced disp (RSP, RBP, R12, R13 unsupported)")
	}
	r, v := vecIndex(acc), vecIndex(src1)
	enc := evex(2, r, v, false, bi&8 != 0, true)
	enc = append(enc, 0x52)
	d8 := m.Disp / 4
	switch {
	case m.Disp == 0:
		enc = append(enc, byte(0<<6|(r&7)<<3|bi&7))
	case d8 >= -128 && d8 <= 127:
		enc = append(enc, byte(1<<6|(r&7)<<3|bi&7), byte(int8(d8)))
	default:
		enc = append(enc, byte(2<<6|(r&7)<<3|bi&7))
		d := uint32(int32(m.Disp))
		enc = append(enc, byte(d), byte(d>>8), byte(d>>16), byte(d>>24))
	}
	rawBytes(fmt.Sprintf("VDPBF16PS zmm%d, zmm%d, dword ptr [%s%+d]{1to16}", r, v, base.Asm(), m.Disp), enc)
}

// vcvtne2ps2bf16 emits VCVTNE2PS2BF16 dst, hi, lo (EVEX.512.F2.0F38.W0 72 /r):
// dst.bf16[i] = bf16(lo.fp32[i]) for i < 16 and bf16(hi.fp32[i-16]) for
// i >= 16, rounded to nearest even.
func vcvtne2ps2bf16(lo, hi, dst VecPhysical) {
	r, v, m := vecIndex(dst), vecIndex(hi), vecIndex(lo)
	enc := evex(3, r, v, m&16 != 0, m&8 != 0, false)
	enc = append(enc, 0x72, byte(3<<6|(r&7)<<3|m&7))
	rawBytes(fmt.Sprintf("VCVTNE2PS2BF16 zmm%d, zmm%d, zmm%d", r, v, m), enc)
}

// gemmBF16AVX512 emits the 14×32 bf16 micro-kernel: the float32 kernel's
// register plan (28 zmm accumulators, 2+2 B vectors) with VDPBF16PS in place
// of VFMADD231PS. One k step is one bf16 pair: the packed A panel holds, per
// step, 14 dwords (row r's bf16 pair), the packed B panel 32 dwords (column
// c's pair); each VDPBF16PS broadcasts one A dword and adds two products to
// 16 accumulators.
func gemmBF16AVX512() {
	const mr, nv = 14, 2
	const nr = 16 * nv
	name := "gemmKernBF16AVX512_14x32"
	TEXT(name, NOSPLIT, "func(k int, a, b *uint32, c *float32, ldc int, accum int)")
	Pragma("noescape")
	Doc(name+" computes the 14×32 tile C = A·B (accum == 0) or C += A·B (accum != 0) from packed",
		"bf16 pair panels: A has k steps of 14 dwords, B k steps of 32 dwords (each dword two bf16,",
		"the even k in the low half). Per step and element: c += a.hi·b.hi, then c += a.lo·b.lo,",
		"each a float32 FMA (VDPBF16PS: denormal inputs read as 0, denormal results flushed to 0).",
		"The tile's sum starts at 0 and is added to C at the end, like the float32 kernel's.")
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
				vdpbf16psBcst(Mem{Base: a, Disp: 4 * (s*mr + r)}, bs[v], acc(r, v))
			}
		}
	}
	const unroll = 4
	MOVQ(k, R10)
	SHRQ(U8(2), R10)
	ANDQ(U8(unroll-1), k)
	JZ(LabelRef("loop4check"))
	Label("loop1")
	step(0)
	ADDQ(U32(4*mr), a)
	ADDQ(U32(4*nr), b)
	DECQ(k)
	JNZ(LabelRef("loop1"))
	Label("loop4check")
	TESTQ(R10, R10)
	JZ(LabelRef("store"))
	IMUL3Q(U32(mr), ldc, R11)
	ADDQ(c, R11)
	MOVQ(U32(mr), R12)
	Label("loop4")
	for s := 0; s < unroll; s++ {
		step(s)
		if s == 0 {
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
	ADDQ(U32(4*mr*unroll), a)
	ADDQ(U32(4*nr*unroll), b)
	DECQ(R10)
	JNZ(LabelRef("loop4"))

	Label("store")
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

// cvtPairsBF16AVX512 emits the pairing converter for operands whose k runs
// along memory: dst[j] = bf16(src[2j]) | bf16(src[2j+1])<<16.
func cvtPairsBF16AVX512() {
	TEXT("cvtPairsBF16AVX512", NOSPLIT, "func(dst []uint32, src []float32)")
	Pragma("noescape")
	Doc("cvtPairsBF16AVX512 sets dst[j] = bf16(src[2j]) | bf16(src[2j+1])<<16 (VCVTNE2PS2BF16, round to",
		"nearest even) for j < len(src)/32·16; the Go wrapper converts the rest.")
	d, s, n := RDI, RSI, RCX
	Load(Param("dst").Base(), d)
	Load(Param("src").Base(), s)
	Load(Param("src").Len(), n)
	SHRQ(U8(5), n)
	JZ(LabelRef("done"))
	Label("loop")
	VMOVUPS(Mem{Base: s}, Z0)
	VMOVUPS(Mem{Base: s, Disp: 64}, Z1)
	vcvtne2ps2bf16(Z0, Z1, Z2)
	VMOVUPS(Z2, Mem{Base: d})
	ADDQ(U8(128), s)
	ADDQ(U8(64), d)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// cvtInterleaveBF16AVX512 emits the interleaving converter for operands whose
// k runs across rows: dst[j] = bf16(lo[j]) | bf16(hi[j])<<16.
func cvtInterleaveBF16AVX512() {
	TEXT("cvtInterleaveBF16AVX512", NOSPLIT, "func(dst []uint32, lo, hi []float32)")
	Pragma("noescape")
	Doc("cvtInterleaveBF16AVX512 sets dst[j] = bf16(lo[j]) | bf16(hi[j])<<16 (VCVTNE2PS2BF16 and a",
		"VPERMW interleave) for j < len(lo)/16·16; the Go wrapper converts the rest.")
	tab := GLOBL("bf16interleave", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U16(i))
		DATA(4*i+2, U16(16+i))
	}
	d, lo, hi, n := RDI, RSI, RDX, RCX
	Load(Param("dst").Base(), d)
	Load(Param("lo").Base(), lo)
	Load(Param("hi").Base(), hi)
	Load(Param("lo").Len(), n)
	SHRQ(U8(4), n)
	JZ(LabelRef("done"))
	VMOVDQU16(tab, Z3)
	Label("loop")
	VMOVUPS(Mem{Base: lo}, Z0)
	VMOVUPS(Mem{Base: hi}, Z1)
	vcvtne2ps2bf16(Z0, Z1, Z2)
	VPERMW(Z2, Z3, Z2)
	VMOVUPS(Z2, Mem{Base: d})
	ADDQ(U8(64), lo)
	ADDQ(U8(64), hi)
	ADDQ(U8(64), d)
	DECQ(n)
	JNZ(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
