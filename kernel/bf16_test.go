package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestRoundBF16(t *testing.T) {
	for _, tc := range []struct {
		in   uint32
		want uint16
		what string
	}{
		{0x3F800000, 0x3F80, "1 exact"},
		{0x3F808000, 0x3F80, "tie to even (down)"},
		{0x3F818000, 0x3F82, "tie to even (up)"},
		{0x3F808001, 0x3F81, "above the tie"},
		{0x3F807FFF, 0x3F80, "below the tie"},
		{0xBF808001, 0xBF81, "negative"},
		{0x7F7FFFFF, 0x7F80, "largest float32 rounds to +Inf"},
		{0x7F800000, 0x7F80, "+Inf"},
		{0xFF800000, 0xFF80, "-Inf"},
		{0x7F800001, 0x7FC0, "signalling NaN becomes quiet"},
		{0xFFC12345, 0xFFC1, "quiet NaN keeps its top bits"},
		{0x00000001, 0x0000, "denormal to +0"},
		{0x807FFFFF, 0x8000, "denormal to -0"},
		{0x00800000, 0x0080, "smallest normal"},
		{0x80000000, 0x8000, "-0"},
	} {
		if got := roundBF16(math.Float32frombits(tc.in)); got != tc.want {
			t.Errorf("%s: roundBF16(%#08x) = %#04x, want %#04x", tc.what, tc.in, got, tc.want)
		}
	}
	if got := RoundBF16(1.00390625); got != 1 {
		t.Errorf("RoundBF16(1+2^-8) = %v, want 1 (tie to even)", got)
	}
}

// specialSlice is randSlice with, at random places, the values the
// conversion and the FTZ/DAZ rules treat specially: float32 denormals, ties,
// tiny values whose products are denormal, zeros of both signs, ±Inf, NaN
// (only with withNaN).
func specialSlice(rng *rand.Rand, n int, withNaN bool) []float32 {
	s := randSlice(rng, n)
	specials := []float32{
		math.Float32frombits(0x00000123), math.Float32frombits(0x80400000), 0, float32(math.Copysign(0, -1)),
		math.Float32frombits(0x3F808000), math.Float32frombits(0x3F818000), 1e-20, -3e-21, 1e-30, 3e18,
	}
	if withNaN {
		specials = append(specials, float32(math.Inf(1)), float32(math.NaN()))
	}
	for i := range s {
		if rng.IntN(8) == 0 {
			s[i] = specials[rng.IntN(len(specials))]
		}
	}
	return s
}

// TestBF16PackMatchesTwin checks every implementation's bf16 packers
// (split ones through splitPanels) against the pure-Go ones bit for bit: both layouts of each operand, depths
// around the 16-pair blocks and KC, an odd k, ragged row and column counts,
// offsets into the matrix, padded strides and the special values. The
// destination starts as garbage, so every word of the panels must be written.
func TestBF16PackMatchesTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, im := range available() {
		g := im.gemmFor(BF16)
		for _, kf := range []int{1, 2, 31, 32, 33, 64, 65, 97, 512, 513, 545, 1100} {
			k2 := (kf + 1) / 2
			for _, pc := range []int{0, 5, bf16KC} {
				if pc >= k2 {
					continue
				}
				for _, kc := range []int{min(bf16KC, k2-pc), min(7, k2-pc)} {
					for _, rows := range []int{1, g.mr - 1, g.mr, g.nr + 1, 3*g.mr + 2} {
						for _, trans := range []bool{false, true} {
							const off = packOff
							// The operand as A (transA = trans) and as B (transB = !trans),
							// so that both packers see both memory layouts.
							src, ld := packSource(rng, kf, rows, trans)
							a := gemmArgs{transA: trans, transB: !trans, m: off + rows, n: off + rows, k: k2, kf: kf,
								a: src, lda: ld, b: src, ldb: ld}
							for _, tc := range packCases(g, packABF16Generic, packBBF16Generic) {
								size := ceilDiv(rows, tc.w) * tc.w * kc
								want, got := make([]float32, size), make([]float32, size)
								for i := range want {
									want[i] = math.Float32frombits(0xDEADBEEF)
								}
								tc.twin(g, &a, want, off, rows, pc, kc)
								if g.split {
									// Two float32 steps per pair.
									want, got = splitPanels(want, tc.w, kc), make([]float32, 2*size)
									sa := gemmArgs{transA: trans, transB: !trans, m: off + rows, n: off + rows, a: src, lda: ld, b: src, ldb: ld, k: kf}
									sa = sa.splitPairs()
									fillGarbage(got)
									tc.pack(g, &sa, got, off, rows, 2*pc, 2*kc)
								} else {
									fillGarbage(got)
									tc.pack(g, &a, got, off, rows, pc, kc)
								}
								for i := range want {
									if w, x := math.Float32bits(want[i]), math.Float32bits(got[i]); w != x {
										t.Fatalf("%s %s kf=%d pc=%d kc=%d rows=%d k-across-rows=%v: word %d = %#08x, twin %#08x",
											im.name, tc.name, kf, pc, kc, rows, trans, i, x, w)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

func fillGarbage(s []float32) {
	for i := range s {
		s[i] = math.Float32frombits(0xDEADBEEF)
	}
}

// splitPanels expands pair panels (kc steps of w pairs per panel) into the
// split layout: per pair, the even value's step, then the odd one's.
func splitPanels(pairs []float32, w, kc int) []float32 {
	words := u32View(pairs)
	out := make([]float32, 2*len(pairs))
	for q := 0; q*kc*w < len(words); q++ {
		for s := 0; s < kc; s++ {
			for r := 0; r < w; r++ {
				x := words[q*kc*w+s*w+r]
				out[q*2*kc*w+2*s*w+r] = bf16Lo(x)
				out[q*2*kc*w+(2*s+1)*w+r] = bf16Hi(x)
			}
		}
	}
	return out
}

// bf16Reference is op(A)·op(B) in float64 with the operands rounded to bf16,
// and the bound Σ|a||b|.
func bf16Reference(o *gemmOperands) (ref, bound []float64) {
	ref, bound = make([]float64, o.m*o.n), make([]float64, o.m*o.n)
	for i := 0; i < o.m; i++ {
		for j := 0; j < o.n; j++ {
			var s, b float64
			for p := 0; p < o.k; p++ {
				var x, y float32
				if o.transA {
					x = o.a[p*o.lda+i]
				} else {
					x = o.a[i*o.lda+p]
				}
				if o.transB {
					y = o.b[j*o.ldb+p]
				} else {
					y = o.b[p*o.ldb+j]
				}
				xv, yv := float64(RoundBF16(x)), float64(RoundBF16(y))
				s += xv * yv
				b += math.Abs(xv * yv)
			}
			ref[i*o.n+j], bound[i*o.n+j] = s, b
		}
	}
	return ref, bound
}

// TestGemmBF16 checks the pure-Go twin against a float64 product of the
// bf16-rounded operands (float32 accumulation: |error| <= k·2^-24·Σ|a·b|,
// checked at 1e-5 of the bound) and every other implementation, In(BF16).Gemm
// (two workers) and GemmOn, against the twin bit for bit, on every
// layout, with accumulate on and off; C's elements outside the window stay.
func TestGemmBF16(t *testing.T) {
	twin := newPoolImpl(1, genericImpl)
	defer twin.Close()
	impls := available()
	pools := make([]*Pool, len(impls))
	for i, im := range impls {
		pools[i] = newPoolImpl(2, im)
		defer pools[i].Close()
	}
	rng := rand.New(rand.NewPCG(41, 42))
	// gemmCases without its largest products (the twin is slow), plus one
	// crossing KC and two jc blocks of the parallel path.
	var cases []gemmCase
	for _, gc := range gemmCases() {
		if gc.m*gc.n*gc.k <= 6e6 && (!testing.Short() || gc.m*gc.n*gc.k <= 1e6) {
			cases = append(cases, gc)
		}
	}
	cases = append(cases, gemmCase{m: 9, n: 2100, k: 1100, padA: 1})
	for ci, gc := range cases {
		for layout := 0; layout < 4; layout++ {
			transA, transB := layout&2 != 0, layout&1 != 0
			o := newOperands(rng, gc, transA, transB)
			if ci%3 == 0 {
				o.a, o.b = specialSlice(rng, len(o.a), false), specialSlice(rng, len(o.b), false)
			}
			var ref, bound []float64
			if gc.m*gc.n*gc.k <= 2e6 {
				ref, bound = bf16Reference(o)
			}
			size := (o.m-1)*o.ldc + o.n
			for _, accumulate := range []bool{false, true} {
				c0 := randSlice(rng, size+7)
				want := append([]float32(nil), c0...)
				twin.In(BF16).Gemm(transA, transB, o.m, o.n, o.k, o.a, o.lda, o.b, o.ldb, want[:size], o.ldc, accumulate)
				name := fmt.Sprintf("%dx%dx%d tA=%v tB=%v acc=%v", gc.m, gc.n, gc.k, transA, transB, accumulate)
				for idx := range want {
					i, j := idx/o.ldc, idx%o.ldc
					if i >= o.m || j >= o.n {
						if math.Float32bits(want[idx]) != math.Float32bits(c0[idx]) {
							t.Fatalf("twin %s: C[%d] outside the window changed", name, idx)
						}
						continue
					}
					if ref == nil {
						continue
					}
					r, b := ref[i*o.n+j], bound[i*o.n+j]
					if accumulate {
						r += float64(c0[idx])
						b += math.Abs(float64(c0[idx]))
					}
					if d := math.Abs(float64(want[idx]) - r); !(d <= 1e-5*b+1e-30) {
						t.Fatalf("twin %s: C[%d,%d] = %v, want %v (bound %v)", name, i, j, want[idx], r, b)
					}
				}
				for pi, im := range impls {
					p := pools[pi]
					for _, on := range []bool{false, true} {
						got := append([]float32(nil), c0...)
						if on {
							p.In(BF16).GemmOn(1, transA, transB, o.m, o.n, o.k, o.a, o.lda, o.b, o.ldb, got[:size], o.ldc, accumulate)
						} else {
							p.In(BF16).Gemm(transA, transB, o.m, o.n, o.k, o.a, o.lda, o.b, o.ldb, got[:size], o.ldc, accumulate)
						}
						for idx := range got {
							if math.Float32bits(got[idx]) != math.Float32bits(want[idx]) {
								t.Fatalf("%s (native %v, GemmOn %v) %s: C[%d] = %v (%#08x), twin %v (%#08x)", im.name, im.nativeFor(BF16), on, name,
									idx, got[idx], math.Float32bits(got[idx]), want[idx], math.Float32bits(want[idx]))
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmBF16NoAlloc checks that In(BF16).Gemm and GemmOn allocate nothing
// once their buffers have grown.
func TestGemmBF16NoAlloc(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	m, n, k := 300, 300, 300
	a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"GemmBF16", func() { p.In(BF16).Gemm(false, true, m, n, k, a, k, b, k, c, n, false) }},
		{"GemmBF16Small", func() { p.In(BF16).Gemm(true, false, 20, 30, 40, a, 20, b, 30, c, 30, true) }},
		{"GemmOnBF16", func() { p.In(BF16).GemmOn(1, false, false, 64, 32, 256, a, 256, b, 32, c, 32, false) }},
	} {
		tc.f()
		if allocs := testing.AllocsPerRun(20, tc.f); allocs != 0 {
			t.Errorf("%s: %v allocations per call", tc.name, allocs)
		}
	}
}

// TestBF16FlushesAfterRounding pins the FTZ rule of bf16FMA on every
// implementation: a result whose rounding to 24 bits with an unbounded
// exponent is below 2^-126 becomes a zero of its sign (x86's tininess after
// rounding, what VDPBF16PS and MXCSR.FTZ do), even where rounding to a
// denormal would have given 2^-126; a result that rounds to 2^-126 stays.
// Each case is a 4-deep product: pair 0 makes the accumulator ±2^-126
// (2^-63·2^-63), pair 1's odd values add 0·0, its even ones the product p,
// the last operation.
func TestBF16FlushesAfterRounding(t *testing.T) {
	x := float32(math.Ldexp(1, -63))
	for _, tc := range []struct {
		what string
		sign float32
		a, b float32 // pair 1's even values: p = a·b
		want uint32
	}{
		{"2^-126 − 3·2^-152: 24-bit rounding gives 2^-126 − 2^-150, tiny", 1, 3 * 0x1p-76, -0x1p-76, 0},
		{"−(2^-126 − 3·2^-152): a negative zero", -1, 3 * 0x1p-76, -0x1p-76, 0x80000000},
		{"2^-126 − 2^-151: the tie rounds to even, 2^-126", 1, 0x1p-75, -0x1p-76, 0x00800000},
		{"2^-126 − 2^-152: rounds up to 2^-126", 1, 0x1p-76, -0x1p-76, 0x00800000},
		{"2^-126 − 2^-149: denormal, tiny either way", 1, 0x1p-74, -0x1p-75, 0},
	} {
		a := []float32{0, tc.sign * x, tc.sign * tc.a, 0}
		b := []float32{0, x, tc.b, 0}
		for _, im := range append(available(), genericImpl) {
			p := newPoolImpl(1, im)
			c := []float32{5}
			p.In(BF16).Gemm(false, false, 1, 1, 4, a, 4, b, 1, c, 1, false)
			p.Close()
			if got := math.Float32bits(c[0]); got != tc.want {
				t.Errorf("%s (native %v): %s: got %#08x, want %#08x", im.name, im.nativeFor(BF16), tc.what, got, tc.want)
			}
		}
	}
}
