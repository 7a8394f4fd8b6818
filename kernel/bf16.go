package kernel

import (
	"math"
	"unsafe"
)

// bfloat16 matrix multiply.
//
// Pool.GemmBF16 computes the same product as Pool.Gemm with both operands
// rounded to bfloat16 (round to nearest even) and the products summed in
// float32. The operands stay float32 in memory: GemmBF16 first converts
// op(A) and op(B) into the pool's bf16 buffers as dword pairs (two bf16 of
// consecutive k in one 32-bit word, the even k in the low half), so that a
// k×… bf16 operand becomes a ⌈k/2⌉×… matrix of 32-bit elements. The float32
// packers then pack those words unchanged and the micro-kernel consumes one
// pair per step (on AVX512_BF16, one VDPBF16PS: 16 lanes × 2 products).
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
//     as zero and a denormal result flushed to a zero of its sign (Intel SDM,
//     VDPBF16PS: "DAZ, FTZ, RNE, MXCSR neither consulted nor updated"); an
//     odd k pairs its last element with a zero;
//   - the block's sum is added to C with one float32 addition (C = sum for
//     the first block unless accumulate), blocks in k order.
//
// The bf16 product of two bf16 values is exact in float32 (8-bit
// significands), so fma here only rounds the sum.

// bf16KC is the KC (in pairs) of every bf16 implementation: the result
// depends on it (see above), so the twin and the assembly must share it.
const bf16KC = 256

// HasBF16 reports whether this CPU runs GemmBF16 with AVX512_BF16
// instructions. Without them GemmBF16 still works, through the pure-Go twin,
// but is tens of times slower than Gemm: callers that want speed (the
// trainer's precision = "bf16") should refuse instead.
func HasBF16() bool { return active.bf16Native }

// RoundBF16 returns x rounded to bfloat16 (nearest even; float32 denormals
// become zeros of their sign), as a float32: the value GemmBF16 multiplies.
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

// cvtPairsGeneric sets dst[j] = bf16(src[2j]) | bf16(src[2j+1])<<16 for
// j < len(dst), with a zero past the end of src.
func cvtPairsGeneric(dst []uint32, src []float32) {
	n := len(src) / 2
	for j := range dst[:n] {
		dst[j] = bf16Pair(src[2*j], src[2*j+1])
	}
	if len(src)%2 == 1 {
		dst[n] = bf16Pair(src[2*n], 0)
	}
}

// cvtInterleaveGeneric sets dst[j] = bf16(lo[j]) | bf16(hi[j])<<16 for
// j < len(lo); a nil hi stands for zeros.
func cvtInterleaveGeneric(dst []uint32, lo, hi []float32) {
	if hi == nil {
		for j, x := range lo {
			dst[j] = bf16Pair(x, 0)
		}
		return
	}
	for j, x := range lo {
		dst[j] = bf16Pair(x, hi[j])
	}
}

// bf16FMA is one accumulation step of VDPBF16PS: acc + a·b rounded once to
// float32 (nearest even), denormal inputs read as zero, a denormal result
// flushed to a zero of its sign. a and b are bf16 values (as float32), so
// a·b is exact in float64 and the float64 sum rounds to the same float32 as
// a fused float32 operation would (the sum is exact in float64 whenever the
// float32 rounding could depend on its last bits).
func bf16FMA(acc, a, b float32) float32 {
	acc, a, b = daz(acc), daz(a), daz(b)
	r := float32(float64(acc) + float64(a)*float64(b))
	if u := math.Float32bits(r); u&0x7F800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return r
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

// bf16Buffers are one worker's converted operands.
type bf16Buffers struct {
	a, b []uint32
}

// GemmBF16 is Gemm with op(A) and op(B) rounded to bfloat16 and the products
// summed in float32, the result defined exactly as described in the bf16
// section of the package (bf16.go). Arguments, accumulate and the window
// rules are Gemm's. The operands are converted into the pool's buffers
// (about m·k + k·n half-words), which grow once and are then reused, so
// GemmBF16 too allocates nothing per call in steady state. Without
// AVX512_BF16 (HasBF16 false) it runs the pure-Go twin.
func (p *Pool) GemmBF16(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	args := gemmArgs{transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate}
	if args.trivial() {
		return
	}
	p.gemm(&p.impl.gemmBF16, p.convertBF16(&p.scratch[0].bf, args, p.parallel() && float64(m)*float64(n)*float64(k) >= parallelMinWork))
}

// GemmOnBF16 is GemmBF16 on the calling goroutine with worker w's buffers,
// for use inside a For body (see GemmOn).
func (p *Pool) GemmOnBF16(w int, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if w < 0 || w >= p.n {
		panic("kernel.GemmOnBF16: worker index out of range")
	}
	args := gemmArgs{transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate}
	if args.trivial() {
		return
	}
	p.gemmSerial(w, &p.impl.gemmBF16, p.convertBF16(&p.scratch[w].bf, args, false))
}

// convertBF16 converts op(A) and op(B) of args into bf's buffers as pair
// matrices and returns the arguments of the equivalent ⌈k/2⌉-deep product on
// them. op(A) with k contiguous (A not transposed) becomes m rows of k2
// pairs; with k across rows (A transposed) k2 rows of m pairs, still
// transposed; likewise for B. With parallel the rows are spread over the
// pool's workers (the conversion is memory-bound and, serial, would cost a
// fair part of a small product).
func (p *Pool) convertBF16(bf *bf16Buffers, a gemmArgs, parallel bool) gemmArgs {
	k2 := (a.k + 1) / 2
	bf.a = growU32(bf.a, a.m*k2)
	bf.b = growU32(bf.b, a.n*k2)
	ops := [2]bf16Operand{
		{dst: bf.a, src: a.a, ld: a.lda, kRows: a.transA, other: a.m, k: a.k},
		{dst: bf.b, src: a.b, ld: a.ldb, kRows: !a.transB, other: a.n, k: a.k},
	}
	na, nb := ops[0].rows(), ops[1].rows()
	if parallel {
		p.cvt = ops
		p.For(na+nb, max(1, (na+nb)/(8*p.n)), p.cvtFn)
		p.cvt = [2]bf16Operand{}
	} else {
		ops[0].convert(p.impl, 0, na)
		ops[1].convert(p.impl, 0, nb)
	}
	out := a
	out.k = k2
	out.a, out.lda = f32View(bf.a), k2
	if a.transA {
		out.lda = a.m
	}
	out.b, out.ldb = f32View(bf.b), k2
	if !a.transB {
		out.ldb = a.n
	}
	return out
}

// bf16Operand is one operand of a GemmBF16 being converted: a k-deep operand
// with `other` rows or columns. With kRows false it is `other` rows of k
// contiguous values (stride ld) and dst becomes other×k2 pairs; with kRows
// true it is k rows of `other` values and dst becomes k2×other pairs.
type bf16Operand struct {
	dst      []uint32
	src      []float32
	ld       int
	kRows    bool
	other, k int
}

// rows is the number of destination rows.
func (o *bf16Operand) rows() int {
	if o.kRows {
		return (o.k + 1) / 2
	}
	return o.other
}

// convert fills destination rows [lo, hi).
func (o *bf16Operand) convert(im *impl, lo, hi int) {
	k, k2, ld, other := o.k, (o.k+1)/2, o.ld, o.other
	if !o.kRows {
		for r := lo; r < hi; r++ {
			im.cvtPairs(o.dst[r*k2:(r+1)*k2], o.src[r*ld:r*ld+k])
		}
		return
	}
	for s := lo; s < hi; s++ {
		lo := o.src[2*s*ld : 2*s*ld+other]
		var hi []float32
		if 2*s+1 < k {
			hi = o.src[(2*s+1)*ld : (2*s+1)*ld+other]
		}
		im.cvtInterleave(o.dst[s*other:(s+1)*other], lo, hi)
	}
}

// convertRange is the For body of a parallel conversion: items [0, rows of
// A) are A's destination rows, the rest B's.
func (p *Pool) convertRange(_, lo, hi int) {
	na := p.cvt[0].rows()
	if lo < na {
		p.cvt[0].convert(p.impl, lo, min(hi, na))
	}
	if hi > na {
		p.cvt[1].convert(p.impl, max(lo, na)-na, hi-na)
	}
}

// f32View is dst as the float32 slice the packers read (they copy 32-bit
// words unchanged).
func f32View(dst []uint32) []float32 {
	if len(dst) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&dst[0])), len(dst))
}

// growU32 is growAligned for the bf16 pair buffers.
func growU32(buf []uint32, n int) []uint32 {
	if cap(buf) >= n {
		return buf[:n]
	}
	f := growAligned(nil, n)
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), n)
}
