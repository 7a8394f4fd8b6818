package kernel

import "fmt"

// Precision is the arithmetic of a matrix product: how its operands are rounded and which micro-kernel sums
// them. Every precision computes the product Gemm defines (same arguments, same window rules) and is defined
// bit for bit by a pure-Go twin, named in its row of precisions; each kernel set has a slot for it
// (impl.gemms), filled where the set runs the precision in hardware and otherwise left empty, so that the
// twin runs.
//
//	g := pool.In(kernel.BF16) // chosen once, e.g. when a model is given its precision
//	g.Gemm(false, true, m, n, k, a, k, b, k, c, n, false)
//
// A new precision is a constant and a row here (with its twin), its native kernel in the slot of the kernel set
// that has one, and (for training) a row in train's precision table.
type Precision uint8

const (
	// F32 is float32 operands and float32 fused multiply-adds: the reference arithmetic (gemm.go).
	F32 Precision = iota
	// BF16 is operands rounded to bfloat16 (nearest even) and float32 accumulation in VDPBF16PS's order
	// (bf16.go); native on AVX512_BF16.
	BF16
	// NumPrecisions counts the precisions; it sizes the slots.
	NumPrecisions
)

// precisionRow is what the package knows of one precision.
type precisionRow struct {
	name  string    // the precision's name in configs, records and logs (train.precision)
	pairs bool      // the packers pack bf16 pairs: the blocking runs on ⌈k/2⌉ 32-bit steps (gemmArgs.pairs)
	twin  *gemmImpl // the pure-Go kernel that defines its results, run by a kernel set with an empty slot
}

// precisions is the table of precisions, indexed by Precision. F32 has no twin: every kernel set fills its
// F32 slot (the generic set with the pure-Go kernel).
var precisions = [NumPrecisions]precisionRow{
	F32:  {name: "f32"},
	BF16: {name: "bf16", pairs: true, twin: &genericBF16Gemm},
}

// gemmFor is the kernel set's GEMM in precision p: its own kernel, else the precision's twin.
func (im *impl) gemmFor(p Precision) *gemmImpl {
	if im.gemms[p].kern != nil || precisions[p].twin == nil {
		return &im.gemms[p]
	}
	return precisions[p].twin
}

// nativeFor reports whether the kernel set runs precision p with a kernel of its own, not the twin.
func (im *impl) nativeFor(p Precision) bool { return im.gemms[p].kern != nil }

// Precisions lists every precision, F32 first.
func Precisions() []Precision {
	out := make([]Precision, NumPrecisions)
	for i := range out {
		out[i] = Precision(i)
	}
	return out
}

// String is the precision's name ("f32", "bf16"); train's precision table is the one parser of it.
func (p Precision) String() string {
	if p >= NumPrecisions {
		return fmt.Sprintf("precision(%d)", p)
	}
	return precisions[p].name
}

// Native reports whether this CPU runs the precision's products in hardware. A precision that is not native
// still computes its exact results, through its pure-Go twin, but many times slower than F32: callers that
// want speed (the trainer) should refuse it instead.
func (p Precision) Native() bool { return p < NumPrecisions && active.nativeFor(p) }

// Kernel names the micro-kernel that runs the precision's products on the kernel set chosen at init, e.g.
// "VDPBF16PS zmm 14×32 (AVX512_BF16)" or "VFMADD231PS ymm 6×16 on bf16 values (MXCSR.FTZ)": what a plan or a
// run's record says ran it.
func (p Precision) Kernel() string {
	if p >= NumPrecisions {
		return p.String()
	}
	return active.gemmFor(p).desc
}

// Gemmer is a pool's GEMM in one precision (Pool.In): the one entry point of every product, its micro-kernel
// chosen when the Gemmer is made.
type Gemmer struct {
	p     *Pool
	im    *gemmImpl
	pairs bool
}

// In returns the pool's GEMM in precision prec. It panics on a precision outside the table.
func (p *Pool) In(prec Precision) Gemmer {
	if prec >= NumPrecisions {
		panic("kernel.Pool.In: unknown precision " + prec.String())
	}
	return Gemmer{p: p, im: p.impl.gemmFor(prec), pairs: precisions[prec].pairs}
}

// Gemm computes C = op(A)·op(B) or C += op(A)·op(B) in the Gemmer's precision, on all the pool's workers:
// arguments, accumulate and the window rules are Pool.Gemm's.
func (g Gemmer) Gemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	args := gemmArgs{transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate, 0}
	if args.trivial() {
		return
	}
	g.p.gemm(g.im, g.depth(args))
}

// depth is args as the Gemmer's kernel steps through k: bf16 pairs (one 32-bit step each), split pairs (two
// float32 steps each) or, for float32, the values themselves.
func (g Gemmer) depth(args gemmArgs) gemmArgs {
	switch {
	case !g.pairs:
		return args
	case g.im.split:
		return args.splitPairs()
	}
	return args.pairs()
}

// GemmOn is Gemm on the calling goroutine only, with worker w's packing buffers, for use inside a For body
// (see Pool.GemmOn).
func (g Gemmer) GemmOn(w int, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
	if w < 0 || w >= g.p.n {
		panic("kernel.GemmOn: worker index out of range")
	}
	args := gemmArgs{transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate, 0}
	if args.trivial() {
		return
	}
	g.p.gemmSerial(w, g.im, g.depth(args))
}
