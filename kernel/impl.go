package kernel

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

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
	// desc names the micro-kernel for plans and records ("VDPBF16PS zmm 14×32").
	desc  string
	packA packFunc // nil: packAGeneric
	packB packFunc // nil: packBGeneric
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
	// dpbf16 marks the set whose BF16 GEMM runs VDPBF16PS (AVX512_BF16); the others run it on float32 FMAs
	// (split panels) or through the twin.
	dpbf16 bool
}

// genericBF16Gemm is the pure-Go bf16 pair GEMM (the twin of the
// AVX512_BF16 kernel; KC must be bf16KC in every bf16 implementation).
var genericBF16Gemm = gemmImpl{
	desc: "pure-Go bf16 twin 4×4",
	mr:   4, nr: 4,
	mc: 128, kc: bf16KC, nc: 1024,
	kern: gemmKernBF16Generic4x4, packA: packABF16Generic, packB: packBBF16Generic,
}

// genericImpl is the pure-Go implementation, available everywhere.
var genericImpl = &impl{
	name: "generic",
	gemms: [NumPrecisions]gemmImpl{
		F32: {
			desc: "pure-Go 4×4",
			mr:   4, nr: 4,
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

// KernelEnv is the environment variable that forces the kernel set instead of the best one this CPU runs:
// "avx512" (with the AVX512_BF16 GEMM where the CPU has it), "avx512-nobf16" (AVX-512 with bf16 on float32
// FMAs, as on an AVX-512 CPU without AVX512_BF16), "avx2" or "generic". It is read once, when the program
// starts; a set this CPU cannot run leaves the best one in place and is reported by ForcedErr. Every set
// gives the BF16 precision the same bits, so a bf16 run may move between sets (and CPUs); it is for running
// a machine's slower paths (tests, benchmarks that stand in for an older CPU), not for speed.
const KernelEnv = "SMALLINIT_KERNEL"

// active is the implementation used by the exported functions and new pools.
// It is set once, at init, from the CPU features and KernelEnv.
var active, activeErr = chooseImpl(os.Getenv(KernelEnv), available())

// chooseImpl is the set named by a KernelEnv value ("": the best, l[0]) among l, the sets this CPU runs.
func chooseImpl(name string, l []*impl) (*impl, error) {
	if name == "" {
		return l[0], nil
	}
	var names []string
	for _, im := range l {
		n := implKnob(im)
		if n == name {
			return im, nil
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	// "avx512" also names the set without AVX512_BF16 on a CPU that has no other.
	for _, im := range l {
		if im.name == name {
			return im, nil
		}
	}
	return l[0], fmt.Errorf("%s=%q: this CPU runs the kernel sets %s; using %s", KernelEnv, name, strings.Join(names, ", "), implKnob(l[0]))
}

// implKnob is the KernelEnv value that names im.
func implKnob(im *impl) string {
	if im.name == "avx512" && !im.dpbf16 {
		return "avx512-nobf16"
	}
	return im.name
}

// KernelPaths lists the KernelEnv values of the kernel sets this CPU runs, best first.
func KernelPaths() []string {
	var out []string
	for _, im := range available() {
		out = append(out, implKnob(im))
	}
	return out
}

// NativeOn reports whether the kernel path named as KernelEnv names it (one of KernelPaths) runs precision p
// with a kernel of its own rather than p's pure-Go twin: where a run in p may train.
func (p Precision) NativeOn(path string) bool {
	for _, im := range available() {
		if implKnob(im) == path {
			return p < NumPrecisions && im.nativeFor(p)
		}
	}
	return false
}

// ForcedErr reports a KernelEnv value this CPU cannot honour (the best set runs instead); commands refuse
// to run with it, so that a run meant for one kernel path never silently takes another.
func ForcedErr() error { return activeErr }

// Impl names the implementation chosen at init: "avx512", "avx2" or "generic" (with KernelEnv, the one it
// forces).
func Impl() string { return active.name }

// KernelPath names the kernel set chosen at init as KernelEnv does ("avx512", "avx512-nobf16", "avx2",
// "generic"): the record of which path a run's segment computed on.
func KernelPath() string { return implKnob(active) }
