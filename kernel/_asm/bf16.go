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

// vdpbf16ps emits VDPBF16PS acc, src1, src2 with register operands (EVEX.512.F3.0F38.W0 52 /r, ModRM.mod = 3):
// acc.fp32[i] += src1.bf16[2i+1]·src2.bf16[2i+1] + src1.bf16[2i]·src2.bf16[2i].
func vdpbf16ps(src2, src1, acc VecPhysical) {
	r, v, m := vecIndex(acc), vecIndex(src1), vecIndex(src2)
	enc := evex(2, r, v, m&16 != 0, m&8 != 0, false)
	enc = append(enc, 0x52, byte(3<<6|(r&7)<<3|m&7))
	rawBytes(fmt.Sprintf("VDPBF16PS zmm%d, zmm%d, zmm%d", r, v, m), enc)
}

// bf16DotPeak emits a loop of 4·len(acc) independent VDPBF16PS chains, for measuring the bf16 dot-product
// throughput of the machine (BenchmarkBF16DotPeak, kernel.MeasurePeak): each instruction is 32 products and
// 32 additions into float32, 64 FLOP, the ceiling of the bf16 matmuls as the FMA's 32 is of the float32 ones.
func bf16DotPeak(name string, acc []VecPhysical, x, y VecPhysical) {
	TEXT(name, NOSPLIT, "func(iters int)")
	Doc(fmt.Sprintf("%s runs iters × %d independent VDPBF16PS (bf16 dot-product peak measurement).", name, 4*len(acc)))
	Load(Param("iters"), RCX)
	for _, r := range append(acc, x, y) {
		VPXORD(r, r, r)
	}
	Label("loop")
	for i := 0; i < 4; i++ {
		for _, r := range acc {
			vdpbf16ps(y, x, r)
		}
	}
	DECQ(RCX)
	JNZ(LabelRef("loop"))
	VZEROUPPER()
	RET()
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

// transPackBF16AVX512 emits the pairing packer for operands whose k runs
// along memory (row-major op(A), transposed B): the float32 transposing
// packer (transPackAVX512) with each row's 32 floats converted to 16 bf16
// pairs on load, so that a block of 16 pairs × 16 rows becomes 16 steps of
// 16 dwords. Converting inside the packer saves the separate conversion pass
// over the operand (and its writes).
func transPackBF16AVX512() {
	TEXT("transPackBF16AVX512", NOSPLIT, "func(rows *[16]*float32, nblk int, dst *uint32, dstStride int, mask int)")
	Pragma("noescape")
	Doc("transPackBF16AVX512 sets dst[s*dstStride+r] = bf16(rows[r][2s]) | bf16(rows[r][2s+1])<<16",
		"(VCVTNE2PS2BF16, round to nearest even) for s < 16·nblk and the lanes r of mask.")
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
		t0, t1 := zmm[16+2*(r%8)], zmm[17+2*(r%8)]
		MOVQ(Mem{Base: rows, Disp: 8 * r}, p)
		VMOVUPS(Mem{Base: p, Index: off, Scale: 1}, t0)
		VMOVUPS(Mem{Base: p, Index: off, Scale: 1, Disp: 64}, t1)
		PREFETCHT0(Mem{Base: p, Index: off, Scale: 1, Disp: 512})
		PREFETCHT0(Mem{Base: p, Index: off, Scale: 1, Disp: 576})
		vcvtne2ps2bf16(t0, t1, zmm[r])
	}
	transpose16x16(dst, stride)
	ADDQ(U8(128), off)
	DECQ(nblk)
	JNZ(LabelRef("block"))
	Label("done")
	VZEROUPPER()
	RET()
}

// copyPackBF16AVX512 emits the interleaving packer for operands whose k runs
// across rows (transposed A, row-major B): the float32 row-copying packer
// (copyPackAVX512) reading two source rows per step, 2s and 2s+1, and
// storing their bf16 values interleaved as pairs (VCVTNE2PS2BF16, then a
// VPERMW that puts row 2s+1's value of each column above row 2s's).
func copyPackBF16AVX512() {
	TEXT("copyPackBF16AVX512", NOSPLIT, "func(src *float32, lds int, kc int, panels int, dst *uint32, w int, pstride int, fullMask int, lastMask int)")
	Pragma("noescape")
	Doc("copyPackBF16AVX512 sets dst[q*pstride + s*w + c] = bf16(src[2s*lds + q*w + c]) | bf16(src[(2s+1)*lds + q*w + c])<<16",
		"for s < kc, q < panels, c < w (w <= 32). fullMask is (1<<w)-1; in the last panel only the lanes of",
		"lastMask are read, the others are set to 0.")
	tab := GLOBL("bf16pairs", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U16(i))
		DATA(4*i+2, U16(16+i))
	}
	r := loadPackRegs()
	Load(Param("pstride"), r.ps)
	r.loadMasks()
	s, d, lds, wb := r.s, r.d, r.lds, r.wb
	VMOVDQU16(tab, Z6)
	SHLQ(U8(2), lds)
	SHLQ(U8(2), wb)
	SHLQ(U8(2), r.ps)
	// Panels of at most 16 columns (A's MR = 14) need one vector per row: a loop of its own skips the
	// second half's loads, conversion and store, which would all be masked out.
	CMPQ(wb, U8(64))
	JLE(LabelRef("group16"))
	row := func(halves int) func() {
		return func() {
			VMOVUPS_Z(Mem{Base: s}, K1, Z0)
			VMOVUPS_Z(Mem{Base: s, Index: lds, Scale: 1}, K1, Z2)
			if halves == 2 {
				VMOVUPS_Z(Mem{Base: s, Disp: 64}, K2, Z1)
				VMOVUPS_Z(Mem{Base: s, Index: lds, Scale: 1, Disp: 64}, K2, Z3)
			}
			vcvtne2ps2bf16(Z0, Z2, Z4)
			VPERMW(Z4, Z6, Z4)
			VMOVUPS(Z4, K3, Mem{Base: d})
			if halves == 2 {
				vcvtne2ps2bf16(Z1, Z3, Z5)
				VPERMW(Z5, Z6, Z5)
				VMOVUPS(Z5, K4, Mem{Base: d, Disp: 64})
			}
		}
	}
	r.loop("32", 4, 2, row(2))
	r.loop("16", 4, 2, row(1))
	Label("done")
	VZEROUPPER()
	RET()
}
