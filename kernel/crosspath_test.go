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

// bitsDiffer returns the first index where a and b differ in their bits, or -1; a NaN matches any NaN
// (sameFloat), never a number. A NaN's payload is not part of a kernel's defined result: where two NaNs meet in
// a product (−0·−Inf times a NaN input in SwiGLUBackward) the hardware keeps its first operand's, and which
// operand comes first in the pure-Go twin is the Go compiler's choice (the race detector's build swaps them).
// A run stops at its first non-finite loss or gradient, or skips that step, so no payload reaches a result.
func bitsDiffer(a, b []float32) int {
	for i := range a {
		if !sameFloat(a[i], b[i]) {
			return i
		}
	}
	return -1
}

// pathLengths are the row lengths on which the kernel paths are compared: every length up to 70 (each loop's
// step and tail; the head sizes 16-64 and the short causal attention rows) and 1000 (vecLengths), the presets'
// widths d (128, 256, 512, 768, 1024) and d_ff (384, 704, 1408, 2048), rows around the 16- and 64-element
// blocks (255), the attention rows of T = 256 and 512, and the vocabularies (4096, 32000).
func pathLengths() []int {
	return append(vecLengths(), 128, 255, 256, 384, 512, 704, 768, 1024, 1408, 2048, 4096, 32000)
}

// vectorKernelsMatch checks that kernel set im gives ref's bits in every vector and row kernel of a training
// step (dot, axpy, scale, add, exp, max, the fused row kernels, AdamW) on pathLengths, with special values where
// the kernel is elementwise.
func vectorKernelsMatch(t *testing.T, rng *rand.Rand, ref, im *impl) {
	t.Helper()
	name := implKnob(im) + " vs " + implKnob(ref)
	for _, n := range pathLengths() {
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
		// Denormals, zeros of both signs and tiny products (fma32's slow path, sums that underflow to −0).
		xs, ys := specialSlice(rng, n, false), specialSlice(rng, n, false)
		check("dot (special values)", [2][]float32{{ref.dot(xs, ys)}, {im.dot(xs, ys)}})
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
		// RMSNorm backward from dx, dg = acc: on finite rows, and on special values.
		rmsNormBack := func(what string, acc, dy, x []float32) {
			invN := 1 / float32(max(n, 1))
			check("rmsNormBack dx"+what, two(func(k *impl, d []float32) {
				copy(d, acc)
				k.rmsNormBack(d, dy, x, gf, make([]float32, n), 0.9, invN)
			}))
			check("rmsNormBack dg"+what, two(func(k *impl, d []float32) {
				copy(d, acc)
				k.rmsNormBack(make([]float32, n), dy, x, gf, d, 0.9, invN)
			}))
		}
		rmsNormBack("", yf, dyf, xf)
		rmsNormBack(" (special values)", ys, ys, xs)
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
}

// TestAVX2MatchesAVX512 is the float32 side of moving a run between SIMD kernel paths: every kernel of a
// training step (vectorKernelsMatch, and the float32 and bf16 GEMMs on the model's shapes at full size and on
// ragged ones) gives the same bits on each SIMD path this CPU runs as on its best one. (The pure-Go set's side
// is TestGenericKernelsMatchSIMD and TestGenericGemmMatchesSIMD.)
func TestAVX2MatchesAVX512(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	ref := available()[0]
	for _, im := range available()[1:] {
		if im == genericImpl {
			continue
		}
		name := implKnob(im) + " vs " + implKnob(ref)
		vectorKernelsMatch(t, rng, ref, im)
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

// TestGenericKernelsMatchSIMD is the pure-Go set's side of moving a float32 run between kernel paths (its
// GEMM's is TestGenericGemmMatchesSIMD): its vector and row kernels, the twins that define the results, give
// the bits of every SIMD path this CPU runs.
func TestGenericKernelsMatchSIMD(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	if available()[0] == genericImpl {
		t.Skip("this CPU runs no SIMD kernel set to compare the pure-Go kernels with")
	}
	for _, im := range available() {
		if im != genericImpl {
			vectorKernelsMatch(t, rng, im, genericImpl)
		}
	}
}

// TestGenericGemmMatchesSIMD is the pure-Go float32 GEMM's side of moving a run between kernel paths: with
// fma32 in its micro-kernel it gives the bits of the best SIMD set this CPU runs on every GEMM shape class of
// the model (the training step's six layouts and depths with the row count cut to 61, on all workers, and the
// attention heads' products on one, GemmOn), on ragged shapes in every layout, and on operands with denormal,
// tiny and huge values, whose products and sums take fma32's slow path.
func TestGenericGemmMatchesSIMD(t *testing.T) {
	ref := available()[0]
	if ref == genericImpl {
		t.Skip("this CPU runs no SIMD kernel set to compare the pure-Go GEMM with")
	}
	rng := rand.New(rand.NewPCG(73, 74))
	type run struct {
		name           string
		transA, transB bool
		m, n, k        int
		a, b           []float32
		lda, ldb, ldc  int
		on             bool
	}
	var runs []run
	for _, sh := range BenchShapes() {
		m := 61
		lda, ldb := sh.K, sh.N
		if sh.TransA {
			lda = m
		}
		if sh.TransB {
			ldb = sh.K
		}
		runs = append(runs, run{sh.Name + " (M=61)", sh.TransA, sh.TransB, m, sh.N, sh.K, randSlice(rng, m*sh.K), randSlice(rng, sh.K*sh.N), lda, ldb, sh.N, false})
	}
	for _, sh := range attentionShapes {
		lda, ldb := sh.K, sh.N
		if sh.TransA {
			lda = sh.M
		}
		if sh.TransB {
			ldb = sh.K
		}
		runs = append(runs, run{sh.Name, sh.TransA, sh.TransB, sh.M, sh.N, sh.K, randSlice(rng, sh.M*sh.K), randSlice(rng, sh.K*sh.N), lda, ldb, sh.N, true})
	}
	for _, gc := range []gemmCase{{m: 300, n: 70, k: 600, padA: 1}, {m: 257, n: 129, k: 520, padC: 3}, {m: 33, n: 100, k: 17}, {m: 5, n: 7, k: 3}} {
		for layout := 0; layout < 4; layout++ {
			tA, tB := layout&2 != 0, layout&1 != 0
			o := newOperands(rng, gc, tA, tB)
			name := fmt.Sprintf("%dx%dx%d tA=%v tB=%v", gc.m, gc.n, gc.k, tA, tB)
			runs = append(runs, run{name, tA, tB, o.m, o.n, o.k, o.a, o.b, o.lda, o.ldb, o.ldc, false})
			special := run{name + " special values", tA, tB, o.m, o.n, o.k,
				specialSlice(rng, len(o.a), false), specialSlice(rng, len(o.b), false), o.lda, o.ldb, o.ldc, false}
			runs = append(runs, special)
		}
	}
	// Double rounding: products that put the float64 sum on a float32 midpoint (on the normal and the denormal
	// grid), which only fma32's slow path rounds right, in every layout.
	for _, denormal := range []bool{false, true} {
		opA, opB := doubleRoundingOperands(rng, 43, 37, denormal)
		for layout := 0; layout < 4; layout++ {
			tA, tB := layout&2 != 0, layout&1 != 0
			a, lda, b, ldb := opA, 2, opB, 37
			if tA {
				a, lda = transposed(opA, 43, 2), 43
			}
			if tB {
				b, ldb = transposed(opB, 2, 37), 2
			}
			runs = append(runs, run{fmt.Sprintf("double rounding denormal=%v tA=%v tB=%v", denormal, tA, tB), tA, tB, 43, 37, 2, a, b, lda, ldb, 37, false})
		}
	}
	for _, r := range runs {
		for _, accumulate := range []bool{false, true} {
			c0 := randSlice(rng, (r.m-1)*r.ldc+r.n)
			var cs [2][]float32
			for i, k := range []*impl{ref, genericImpl} {
				p := newPoolImpl(2, k)
				cs[i] = append([]float32(nil), c0...)
				if r.on {
					p.GemmOn(1, r.transA, r.transB, r.m, r.n, r.k, r.a, r.lda, r.b, r.ldb, cs[i], r.ldc, accumulate)
				} else {
					p.Gemm(r.transA, r.transB, r.m, r.n, r.k, r.a, r.lda, r.b, r.ldb, cs[i], r.ldc, accumulate)
				}
				p.Close()
			}
			if i := bitsDiffer(cs[0], cs[1]); i >= 0 {
				t.Errorf("generic vs %s %s acc=%v: C[%d] %v (%#08x), want %v (%#08x)", implKnob(ref), r.name, accumulate,
					i, cs[1][i], math.Float32bits(cs[1][i]), cs[0][i], math.Float32bits(cs[0][i]))
			}
		}
	}
}

// doubleRoundingOperands returns op(A) (m×2) and op(B) (2×n) whose product's every element is c_i + p_i with
// p_i just off half an ulp of c_i, so that the float64 sum c_i + p_i rounds onto a float32 midpoint: row i of A
// is (c_i, ±h_i·(1+2^-20)), B's rows are 1 and 1-2^-20 (h_i half an ulp of c_i); with denormal, c_i is a
// denormal near 2^-127 and A's and B's second entries are 2^-75·(1+2^-20) and 2^-75·(1-2^-20).
func doubleRoundingOperands(rng *rand.Rand, m, n int, denormal bool) (a, b []float32) {
	d := float32(math.Ldexp(1, -20))
	a, b = make([]float32, 2*m), make([]float32, 2*n)
	for i := 0; i < m; i++ {
		var c, x float32
		if denormal {
			c = float32(math.Ldexp(float64(1<<22+2*rng.IntN(1<<20)+1), -149))
			x = float32(math.Ldexp(1, -75)) * (1 + d)
		} else {
			c = float32(1+rng.Float64()) * float32(math.Ldexp(1, rng.IntN(60)-30))
			_, e := math.Frexp(float64(c))
			x = float32(math.Ldexp(1, e-25)) * (1 + d)
		}
		if rng.IntN(2) == 0 {
			c, x = -c, -x
		}
		a[2*i], a[2*i+1] = c, x
	}
	second := 1 - d
	if denormal {
		second = float32(math.Ldexp(1, -75)) * (1 - d)
	}
	for j := 0; j < n; j++ {
		b[j], b[n+j] = 1, second
	}
	return a, b
}

// transposed returns the rows×cols row-major matrix x transposed (cols×rows).
func transposed(x []float32, rows, cols int) []float32 {
	out := make([]float32, len(x))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = x[i*cols+j]
		}
	}
	return out
}
