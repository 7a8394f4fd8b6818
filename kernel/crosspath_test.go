package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// crossSlice is randSlice with, at random places, values a kernel treats specially or rounds differently in
// another order: large and tiny magnitudes, zeros of both signs, exponent arguments past the clamps, ±Inf, NaN.
func crossSlice(rng *rand.Rand, n int) []float32 {
	s := randSlice(rng, n)
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -3e-38, 1e20, -90, 89, -104.5, 200,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for i := range s {
		switch rng.IntN(10) {
		case 0:
			s[i] = specials[rng.IntN(len(specials))]
		case 1:
			s[i] *= 1e4
		}
	}
	return s
}

// bitsDiffer returns the first index where a and b differ in their bits, or -1.
func bitsDiffer(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestAVX2MatchesAVX512 is the float32 side of moving a run between kernel paths: every kernel of a training
// step (the float32 and bf16 GEMMs, on the model's shapes at full size and on ragged ones, dot, axpy, scale, add, exp, max, the fused row kernels, AdamW) gives the
// same bits on each SIMD path this CPU runs as on its best one, on lengths around every loop's step and tail,
// with special values. (The pure-Go set is not among them: its float32 GEMM, dot, axpy and row kernels round
// every product instead of fusing it, and sum in other orders; docs/performance.md.)
func TestAVX2MatchesAVX512(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	ref := available()[0]
	for _, im := range available()[1:] {
		if im == genericImpl {
			continue
		}
		name := implKnob(im) + " vs " + implKnob(ref)
		lengths := append(vecLengths(), 255, 256, 768, 1000, 1408, 4096)
		for _, n := range lengths {
			x, y, g, u, dy := crossSlice(rng, n), crossSlice(rng, n), crossSlice(rng, n), crossSlice(rng, n), crossSlice(rng, n)
			check := func(what string, r [2][]float32) {
				t.Helper()
				if a, b := r[0], r[1]; bitsDiffer(a, b) >= 0 {
					i := bitsDiffer(a, b)
					t.Errorf("%s n=%d %s: element %d %#08x, want %#08x", name, n, what, i, math.Float32bits(b[i]), math.Float32bits(a[i]))
				}
			}
			two := func(f func(*impl, []float32)) [2][]float32 {
				a, b := make([]float32, n), make([]float32, n)
				f(ref, a)
				f(im, b)
				return [2][]float32{a, b}
			}
			// Finite inputs for the reductions (a NaN anywhere makes any order's sum NaN, which says nothing).
			xf, yf := randSlice(rng, n), randSlice(rng, n)
			check("dot", [2][]float32{{ref.dot(xf, yf)}, {im.dot(xf, yf)}})
			check("axpy", two(func(k *impl, d []float32) { copy(d, y); k.axpy(0.37, x, d) }))
			check("scale", two(func(k *impl, d []float32) { copy(d, x); k.scale(-1.7, d) }))
			check("add", two(func(k *impl, d []float32) { copy(d, x); k.add(d, y) }))
			check("exp", two(func(k *impl, d []float32) { k.exp(d, x) }))
			check("max", [2][]float32{{ref.max(xf)}, {im.max(xf)}})
			var s1, s2 float32
			e := two(func(k *impl, d []float32) {
				s := k.expShiftSum(d, xf, 1.5, 0.3)
				if k == ref {
					s1 = s
				} else {
					s2 = s
				}
			})
			check("expShiftSum", e)
			check("expShiftSum's sum", [2][]float32{{s1}, {s2}})
			check("swiglu σ", two(func(k *impl, d []float32) { k.swiglu(make([]float32, n), d, g, u) }))
			check("swiglu act", two(func(k *impl, d []float32) { k.swiglu(d, make([]float32, n), g, u) }))
			sig := make([]float32, n)
			for i := range sig {
				sig[i] = float32(rng.Float64())
			}
			check("swigluBack dg", two(func(k *impl, d []float32) { k.swigluBack(d, make([]float32, n), dy, g, u, sig) }))
			check("swigluBack du", two(func(k *impl, d []float32) { k.swigluBack(make([]float32, n), d, dy, g, u, sig) }))
			gf, dyf := randSlice(rng, n), randSlice(rng, n)
			check("rmsNormBack dx", two(func(k *impl, d []float32) {
				copy(d, yf)
				k.rmsNormBack(d, dyf, xf, gf, make([]float32, n), 0.9, 1/float32(max(n, 1)))
			}))
			check("rmsNormBack dg", two(func(k *impl, d []float32) {
				copy(d, yf)
				k.rmsNormBack(make([]float32, n), dyf, xf, gf, d, 0.9, 1/float32(max(n, 1)))
			}))
			kk := [9]float32{0.7, 0.9, 0.1, 0.95, 0.05, 1 - 3e-5, 3e-3, 0.2, 1e-8}
			adamw := func(k *impl, p, g, m, v []float32) {
				if k.adamw == nil {
					adamwGeneric(p, g, m, v, kk)
					return
				}
				k.adamw(p, g, m, v, kk)
			}
			check("adamw", two(func(k *impl, d []float32) {
				copy(d, xf)
				m, v := append([]float32(nil), yf...), make([]float32, n)
				for i := range v {
					v[i] = yf[i] * yf[i]
				}
				adamw(k, d, gf, m, v)
			}))
		}
		// The model's own shapes at full size: the training step's products on all workers, the attention
		// heads' on one (GemmOn), in both precisions.
		for _, sh := range append(BenchShapes(), attentionShapes...) {
			on := sh.M*sh.N*sh.K < parallelMinWork*4
			a, b := randSlice(rng, sh.M*sh.K), randSlice(rng, sh.K*sh.N)
			lda, ldb := sh.K, sh.N
			if sh.TransA {
				lda = sh.M
			}
			if sh.TransB {
				ldb = sh.K
			}
			for _, prec := range Precisions() {
				var cs [2][]float32
				for i, k := range []*impl{ref, im} {
					p := newPoolImpl(2, k)
					cs[i] = make([]float32, sh.M*sh.N)
					if on {
						p.In(prec).GemmOn(1, sh.TransA, sh.TransB, sh.M, sh.N, sh.K, a, lda, b, ldb, cs[i], sh.N, false)
					} else {
						p.In(prec).Gemm(sh.TransA, sh.TransB, sh.M, sh.N, sh.K, a, lda, b, ldb, cs[i], sh.N, false)
					}
					p.Close()
				}
				if i := bitsDiffer(cs[0], cs[1]); i >= 0 {
					t.Errorf("%s %v %s: C[%d] %v, want %v", name, prec, sh.Name, i, cs[1][i], cs[0][i])
				}
			}
		}
		// The GEMMs: both precisions, every layout, shapes crossing the tiles, KC and the in-place A kernel.
		for _, gc := range []gemmCase{{m: 300, n: 70, k: 600, padA: 1}, {m: 64, n: 32, k: 256}, {m: 256, n: 32, k: 256},
			{m: 257, n: 257, k: 1000, padC: 3}, {m: 33, n: 100, k: 17}, {m: 4, n: 1500, k: 70}} {
			for layout := 0; layout < 4; layout++ {
				tA, tB := layout&2 != 0, layout&1 != 0
				o := newOperands(rng, gc, tA, tB)
				for _, prec := range Precisions() {
					var cs [2][]float32
					for i, k := range []*impl{ref, im} {
						p := newPoolImpl(2, k)
						cs[i] = make([]float32, (o.m-1)*o.ldc+o.n)
						p.In(prec).Gemm(tA, tB, o.m, o.n, o.k, o.a, o.lda, o.b, o.ldb, cs[i], o.ldc, false)
						p.Close()
					}
					check := fmt.Sprintf("%s %v gemm %dx%dx%d tA=%v tB=%v", name, prec, gc.m, gc.n, gc.k, tA, tB)
					if i := bitsDiffer(cs[0], cs[1]); i >= 0 {
						t.Errorf("%s: C[%d] %v, want %v", check, i, cs[1][i], cs[0][i])
					}
				}
			}
		}
	}
}
