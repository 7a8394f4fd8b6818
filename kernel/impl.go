package kernel

// gemmKernel computes an mr×nr tile of C from a packed A micro-panel (k steps
// of mr values) and a packed B micro-panel (k steps of nr values):
// C = A·B when accum == 0, C += A·B otherwise. ldc is in elements.
type gemmKernel func(k int, a, b, c *float32, ldc int, accum int)

// gemmKernelInPlace is a gemmKernel reading A from the matrix itself: a
// points at the tile's first element and lda is A's row stride.
type gemmKernelInPlace func(k int, a *float32, lda int, b, c *float32, ldc int, accum int)

// gemmImpl is one micro-kernel with its register tile and cache blocking.
type gemmImpl struct {
	mr, nr     int // register tile
	mc, kc, nc int // cache blocks (mc multiple of mr, nc multiple of nr)
	kern       gemmKernel
	// kernRowA, if not nil, is kern reading row-major A in place (no
	// packing). It is used when A is not transposed and each A block meets at
	// most rowAMaxPanels B panels, so that packing A would not pay for itself.
	// (A transposed variant, reading a row of Aᵀ per k step, was slower than
	// packing: each step starts a new cache line the stride prefetcher misses.)
	kernRowA gemmKernelInPlace
	packA    packFunc // nil: packAGeneric
	packB    packFunc // nil: packBGeneric
	// split marks a BF16 kernel on split panels (bf16split.go): each bf16 pair is two float32 steps, so the
	// blocking counts values (gemmArgs.splitPairs), not pairs (gemmArgs.pairs).
	split bool
}

// packFunc packs a block of op(A) (rows i0.., columns p0..) or op(B) (rows
// p0.., columns i0..) into panels; see packAGeneric and packBGeneric.
type packFunc func(im *gemmImpl, a *gemmArgs, dst []float32, i0, ni, p0, kc int)

// impl is one complete set of kernels. The package uses the one chosen at
// init (active); tests run every entry of available().
type impl struct {
	name string
	// gemms holds the set's GEMM micro-kernel, packers and blocking per Precision (precision.go): gemms[F32]
	// the float32 one (always filled), gemms[BF16] the bf16 pair kernel where the CPU has one (bf16.go). An
	// empty slot runs the precision's pure-Go twin (impl.gemmFor).
	gemms [NumPrecisions]gemmImpl
	dot   func(x, y []float32) float32
	axpy  func(alpha float32, x, y []float32)
	scale func(alpha float32, x []float32)
	add   func(dst, x []float32)
	exp   func(dst, src []float32)
	max   func(x []float32) float32
	// Fused row kernels (rows.go); nil entries fall back to the generic ones.
	expShiftSum func(dst, src []float32, shift, scale float32) float32
	swiglu      func(act, sig, g, u []float32)
	swigluBack  func(dg, du, dact, g, u, sig []float32)
	rmsNormBack func(dx, dy, x, g, dg []float32, rstd, invN float32)
	// adamw is the AdamW element update (adamw.go); nil: adamwGeneric.
	adamw func(p, g, m, v []float32, k [9]float32)
}

// genericBF16Gemm is the pure-Go bf16 pair GEMM (the twin of the
// AVX512_BF16 kernel; KC must be bf16KC in every bf16 implementation).
var genericBF16Gemm = gemmImpl{
	mr: 4, nr: 4,
	mc: 128, kc: bf16KC, nc: 1024,
	kern: gemmKernBF16Generic4x4, packA: packABF16Generic, packB: packBBF16Generic,
}

// genericImpl is the pure-Go implementation, available everywhere.
var genericImpl = &impl{
	name: "generic",
	gemms: [NumPrecisions]gemmImpl{
		F32: {
			mr: 4, nr: 4,
			mc: 128, kc: 256, nc: 1024,
			kern: gemmKernGeneric4x4, packA: packAGeneric, packB: packBGeneric,
		},
	},
	dot:   dotGeneric,
	axpy:  axpyGeneric,
	scale: scaleGeneric,
	add:   addGeneric,
	exp:   expGeneric,
	max:   maxGeneric,

	expShiftSum: expShiftSumGeneric,
	swiglu:      swigluGeneric,
	swigluBack:  swigluBackGeneric,
	rmsNormBack: rmsNormBackGeneric,
}

// active is the implementation used by the exported functions and new pools.
// It is set once, at init, from the CPU features.
var active = available()[0]

// Impl names the implementation chosen for this CPU at init: "avx512",
// "avx2" or "generic".
func Impl() string { return active.name }
