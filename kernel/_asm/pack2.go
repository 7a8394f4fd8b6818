package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// AVX2 packers of the 6×16 GEMM (kernel/impl_amd64.go: packAAVX2, packBAVX2).
//
// Each is a copy of the pure-Go packers' values (packCopy, packGather), so it
// equals them bit for bit; the "RoundBF16" variants round every value to
// bf16 as it is packed, as the split bf16 panels need (roundBF16 on a register
// instead of a second pass over the packed block). Only whole panels and
// whole 8-step blocks are packed here; the Go wrappers do the ragged rest.

// bf16RoundConsts are the constants of roundBF16Y, as 32-byte vectors in
// RODATA (so that they can be memory operands) or in registers.
type bf16RoundConsts struct {
	one, bias, keep, expo, sign, quiet Op
}

var bf16RoundTab Mem

// bf16RoundMem returns the constants of roundBF16Y in memory.
func bf16RoundMem() bf16RoundConsts {
	vals := []uint32{1, 0x7FFF, 0xFFFF0000, 0x7F800000, 0x80000000, 0x400000}
	if bf16RoundTab.Symbol.Name == "" {
		bf16RoundTab = GLOBL("bf16RoundAVX2", RODATA|NOPTR)
		for i, v := range vals {
			for l := 0; l < 8; l++ {
				DATA(32*i+4*l, U32(v))
			}
		}
	}
	at := func(i int) Op { return bf16RoundTab.Offset(32 * i) }
	return bf16RoundConsts{at(0), at(1), at(2), at(3), at(4), at(5)}
}

// bf16RoundRegs loads the constants of roundBF16Y into regs (six of them).
func bf16RoundRegs(regs []VecPhysical) bf16RoundConsts {
	m := bf16RoundMem()
	ops := []Op{m.one, m.bias, m.keep, m.expo, m.sign, m.quiet}
	for i, o := range ops {
		VMOVDQU(o, regs[i])
	}
	return bf16RoundConsts{regs[0], regs[1], regs[2], regs[3], regs[4], regs[5]}
}

// roundBF16Y sets out to x rounded to bf16 (kernel.roundBF16: nearest even,
// a zero or denormal to a zero of its sign, a NaN quiet with its top half
// kept), lane by lane; t1 and t2 are clobbered, zero must hold zeros. The
// registers may be xmm or ymm (all of one size).
func roundBF16Y(x, out, t1, t2, zero VecPhysical, c bf16RoundConsts) {
	VPSRLD(U8(16), x, t1)
	VPAND(c.one, t1, t1)
	VPADDD(c.bias, x, out)
	VPADDD(t1, out, out)
	VPAND(c.keep, out, out) // rounded to nearest even
	VPOR(c.quiet, x, t1)
	VPAND(c.keep, t1, t1)       // NaN: quiet, top half kept
	VCMPPS(U8(3), x, x, t2)     // unordered: NaN
	VBLENDVPS(t2, t1, out, out) // NaN lanes take t1
	VPAND(c.expo, x, t1)
	VPCMPEQD(zero, t1, t1) // exponent 0: zero or denormal
	VPAND(c.sign, x, t2)
	VBLENDVPS(t1, t2, out, out) // those take the sign alone
}

// packText opens the AVX2 packer named by base, w and round (base, the width, and the bf16 suffix) with
// signature sig and the doc line doc (a format of the name, the packed value and w), the value being what,
// or bf16(what) with round.
func packText(base string, w int, round bool, sig, doc, what string) {
	name := fmt.Sprintf("%s%dAVX2", base, w)
	if round {
		name = fmt.Sprintf("%s%dRoundBF16AVX2", base, w)
		what = "bf16(" + what + ")"
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(fmt.Sprintf(doc, name, what, w))
}

// copyPackAVX2 emits the row-copying packer of whole panels w wide (6: op(A)
// of a transposed A, 16: B not transposed), in copyPackAVX512's order: steps
// in groups of 8, each group spread over all panels, so that the source is
// read row by row.
func copyPackAVX2(w int, round bool) {
	packText("copyPack", w, round, "func(src *float32, lds int, kc int, panels int, dst *float32)",
		"%s sets dst[q*kc*w + kk*w + c] = %s for kk < kc, q < panels, c < w = %d.", "src[kk*lds + q*w + c]")
	src, lds, kc, qn0, dst := RSI, RBX, RCX, R8, RDI
	ps, g, qn, srcq, dstq, s, d, n := R9, R10, R11, R12, R13, RAX, RDX, R14
	Load(Param("src"), src)
	Load(Param("lds"), lds)
	Load(Param("kc"), kc)
	Load(Param("panels"), qn0)
	Load(Param("dst"), dst)
	SHLQ(U8(2), lds)
	MOVQ(kc, ps)
	IMUL3Q(U32(4*w), ps, ps)
	TESTQ(qn0, qn0)
	JZ(LabelRef("done"))
	var c bf16RoundConsts
	if round {
		c = bf16RoundRegs(ymm[10:16])
		VPXOR(Y9, Y9, Y9)
	}
	Label("group")
	TESTQ(kc, kc)
	JZ(LabelRef("done"))
	MOVQ(U32(8), g)
	CMPQ(kc, g)
	CMOVQLT(kc, g)
	MOVQ(src, srcq)
	MOVQ(dst, dstq)
	MOVQ(qn0, qn)
	Label("panel")
	MOVQ(srcq, s)
	MOVQ(dstq, d)
	MOVQ(g, n)
	Label("row")
	switch w {
	case 16:
		VMOVUPS(Mem{Base: s}, Y0)
		VMOVUPS(Mem{Base: s, Disp: 32}, Y1)
		if round {
			roundBF16Y(Y0, Y2, Y4, Y5, Y9, c)
			roundBF16Y(Y1, Y3, Y4, Y5, Y9, c)
			VMOVUPS(Y2, Mem{Base: d})
			VMOVUPS(Y3, Mem{Base: d, Disp: 32})
		} else {
			VMOVUPS(Y0, Mem{Base: d})
			VMOVUPS(Y1, Mem{Base: d, Disp: 32})
		}
	case 6:
		// Exactly 6 values each way (4 + 2): a wider store would overwrite
		// the next panel, written already in this group's order.
		VMOVUPS(Mem{Base: s}, X0)
		VMOVQ(Mem{Base: s, Disp: 16}, X1)
		if round {
			VINSERTF128(U8(1), X1, Y0, Y0)
			roundBF16Y(Y0, Y2, Y4, Y5, Y9, c)
			VMOVUPS(X2, Mem{Base: d})
			VEXTRACTF128(U8(1), Y2, X3)
			VMOVQ(X3, Mem{Base: d, Disp: 16})
		} else {
			VMOVUPS(X0, Mem{Base: d})
			VMOVQ(X1, Mem{Base: d, Disp: 16})
		}
	default:
		panic("copyPackAVX2: w must be 6 or 16")
	}
	ADDQ(lds, s)
	ADDQ(U32(4*w), d)
	DECQ(n)
	JNZ(LabelRef("row"))
	ADDQ(U32(4*w), srcq)
	ADDQ(ps, dstq)
	DECQ(qn)
	JNZ(LabelRef("panel"))
	MOVQ(g, s)
	IMULQ(lds, s)
	ADDQ(s, src)
	MOVQ(g, s)
	IMUL3Q(U32(4*w), s, s)
	ADDQ(s, dst)
	SUBQ(g, kc)
	JMP(LabelRef("group"))
	Label("done")
	VZEROUPPER()
	RET()
}

// transPackAVX2 emits the transposing packer (op(A) panels of a row-major A,
// w = 6; B panels of a transposed B, each 8-column half, w = 8): per block of
// 8 steps, 8 source rows (rows[r] advanced by 8 floats a block) are loaded as
// 8 vectors that each hold a 4-step piece of row r (low lane) and of row r+4
// (high lane), transposed within the lanes (4×4) and stored as 8 panel rows
// of w values. With w = 6 the rows are 24 bytes apart: each store but the
// block's last writes 8 values, of which the next one overwrites 2.
func transPackAVX2(w int, round bool) {
	packText("transPack", w, round, "func(rows *[8]*float32, nblk int, dst *float32, dstStride int)",
		"%s sets dst[kk*dstStride + r] = %s for kk < 8·nblk and r < %d.", "rows[r][kk]")
	if w != 6 && w != 8 {
		panic("transPackAVX2: w must be 6 or 8")
	}
	rows, off, nblk, dst, stride := RSI, RSI, R12, RDI, R13
	p := []GPPhysical{RAX, RBX, RCX, RDX, R8, R9, R10, R11}
	Load(Param("rows"), rows)
	for r, pr := range p {
		MOVQ(Mem{Base: rows, Disp: 8 * r}, pr)
	}
	Load(Param("nblk"), nblk)
	Load(Param("dst"), dst)
	Load(Param("dstStride"), stride)
	SHLQ(U8(2), stride)
	XORQ(off, off)
	TESTQ(nblk, nblk)
	JZ(LabelRef("done"))
	var c bf16RoundConsts
	if round {
		c = bf16RoundMem()
	}
	Label("block")
	if round {
		VPXOR(Y11, Y11, Y11)
	}
	// v[h*4+i]: steps 4h..4h+3 of rows i (low lane) and i+4 (high lane).
	for h := 0; h < 2; h++ {
		for i := 0; i < 4; i++ {
			v := ymm[4*h+i]
			dstReg := v
			if round {
				dstReg = Y8
			}
			VMOVUPS(Mem{Base: p[i], Index: off, Scale: 1, Disp: 16 * h}, dstReg.AsX())
			VINSERTF128(U8(1), Mem{Base: p[i+4], Index: off, Scale: 1, Disp: 16 * h}, dstReg, dstReg)
			if round {
				roundBF16Y(Y8, v, Y9, Y10, Y11, c)
			}
		}
	}
	for i := 0; i < 8; i++ {
		PREFETCHT0(Mem{Base: p[i], Index: off, Scale: 1, Disp: 256})
	}
	// 4×4 transposes within the lanes: column 4h+j ends in ymm[4h+j].
	for h := 0; h < 2; h++ {
		r := ymm[4*h : 4*h+4]
		t := ymm[8+4*h : 12+4*h]
		VUNPCKLPS(r[1], r[0], t[0])
		VUNPCKHPS(r[1], r[0], t[1])
		VUNPCKLPS(r[3], r[2], t[2])
		VUNPCKHPS(r[3], r[2], t[3])
		VSHUFPS(U8(0x44), t[2], t[0], r[0])
		VSHUFPS(U8(0xEE), t[2], t[0], r[1])
		VSHUFPS(U8(0x44), t[3], t[1], r[2])
		VSHUFPS(U8(0xEE), t[3], t[1], r[3])
	}
	for kk := 0; kk < 8; kk++ {
		col := ymm[kk]
		if w == 6 && kk == 7 {
			VMOVUPS(col.AsX(), Mem{Base: dst})
			VEXTRACTF128(U8(1), col, X8)
			VMOVQ(X8, Mem{Base: dst, Disp: 16})
		} else {
			VMOVUPS(col, Mem{Base: dst})
		}
		ADDQ(stride, dst)
	}
	ADDQ(U8(32), off)
	DECQ(nblk)
	JNZ(LabelRef("block"))
	Label("done")
	VZEROUPPER()
	RET()
}
