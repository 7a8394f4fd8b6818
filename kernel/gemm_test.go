package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gemmCase is one GEMM problem with its stride padding.
type gemmCase struct {
	m, n, k    int
	padA, padB int // extra elements per row beyond the minimum stride
	padC       int
}

// gemmOperands holds the inputs and the float64 reference of one case and layout.
type gemmOperands struct {
	gemmCase
	transA, transB bool
	lda, ldb, ldc  int
	a, b           []float32
	ref            []float64 // op(A)·op(B), m×n
	bound          []float64 // Σ_k |op(A)_ik|·|op(B)_kj|
}

func newOperands(rng *rand.Rand, gc gemmCase, transA, transB bool) *gemmOperands {
	o := &gemmOperands{gemmCase: gc, transA: transA, transB: transB}
	ra, ca := gc.m, gc.k
	if transA {
		ra, ca = gc.k, gc.m
	}
	rb, cb := gc.k, gc.n
	if transB {
		rb, cb = gc.n, gc.k
	}
	o.lda, o.ldb, o.ldc = ca+gc.padA, cb+gc.padB, gc.n+gc.padC
	o.a = randSlice(rng, ra*o.lda)
	o.b = randSlice(rng, rb*o.ldb)
	o.ref = make([]float64, gc.m*gc.n)
	o.bound = make([]float64, gc.m*gc.n)
	// Dense float64 copies of op(A) (m×k) and op(B) (k×n), then an i-p-j loop.
	opA := make([]float64, gc.m*gc.k)
	for i := 0; i < gc.m; i++ {
		for p := 0; p < gc.k; p++ {
			if transA {
				opA[i*gc.k+p] = float64(o.a[p*o.lda+i])
			} else {
				opA[i*gc.k+p] = float64(o.a[i*o.lda+p])
			}
		}
	}
	opB := make([]float64, gc.k*gc.n)
	for p := 0; p < gc.k; p++ {
		for j := 0; j < gc.n; j++ {
			if transB {
				opB[p*gc.n+j] = float64(o.b[j*o.ldb+p])
			} else {
				opB[p*gc.n+j] = float64(o.b[p*o.ldb+j])
			}
		}
	}
	for i := 0; i < gc.m; i++ {
		ref, bound := o.ref[i*gc.n:(i+1)*gc.n], o.bound[i*gc.n:(i+1)*gc.n]
		for p := 0; p < gc.k; p++ {
			x := opA[i*gc.k+p]
			ax := math.Abs(x)
			row := opB[p*gc.n : (p+1)*gc.n]
			for j, y := range row {
				ref[j] += x * y
				bound[j] += ax * math.Abs(y)
			}
		}
	}
	return o
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// check runs gemm on fresh C (random, so that accumulate matters) and
// verifies the m×n window against the reference and everything else in C
// (stride padding, trailing elements) against its old contents.
func (o *gemmOperands) check(t *testing.T, rng *rand.Rand, name string, accumulate bool,
	gemm func(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool)) []float32 {
	t.Helper()
	size := 0
	if o.m > 0 {
		size = (o.m-1)*o.ldc + o.n
	}
	c := randSlice(rng, size+7) // 7 trailing sentinels
	c0 := append([]float32(nil), c...)
	gemm(o.transA, o.transB, o.m, o.n, o.k, o.a, o.lda, o.b, o.ldb, c[:size], o.ldc, accumulate)
	bad := 0
	for idx := range c {
		i, j := idx/o.ldc, idx%o.ldc
		if i >= o.m || j >= o.n {
			if math.Float32bits(c[idx]) != math.Float32bits(c0[idx]) {
				t.Fatalf("%s: C[%d] outside the %d×%d window changed: %v -> %v", name, idx, o.m, o.n, c0[idx], c[idx])
			}
			continue
		}
		want, bound := o.ref[i*o.n+j], o.bound[i*o.n+j]
		if accumulate {
			want += float64(c0[idx])
			bound += math.Abs(float64(c0[idx]))
		}
		if d := math.Abs(float64(c[idx]) - want); !(d <= 1e-5*bound+1e-6) {
			if bad++; bad < 5 {
				t.Errorf("%s: C[%d,%d] = %v, want %v (bound %v)", name, i, j, c[idx], want, bound)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d wrong elements", name, bad)
	}
	return c
}

func gemmCases() []gemmCase {
	var cases []gemmCase
	dims := []int{1, 3, 17, 33, 70}
	for _, m := range dims {
		for _, n := range dims {
			for _, k := range dims {
				cases = append(cases, gemmCase{m: m, n: n, k: k, padA: (m + k) % 3, padB: (n + k) % 2 * 5, padC: (m + n) % 4})
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 6; i++ {
		cases = append(cases, gemmCase{m: 1 + rng.IntN(300), n: 1 + rng.IntN(300), k: 1 + rng.IntN(300), padA: rng.IntN(9), padB: rng.IntN(9), padC: rng.IntN(9)})
	}
	// Sizes crossing the MC, KC and NC blocks of every implementation.
	return append(cases,
		gemmCase{m: 257, n: 257, k: 257, padA: 1, padB: 2, padC: 3},
		gemmCase{m: 257, n: 33, k: 600, padC: 1},
		gemmCase{m: 1000, n: 70, k: 300, padA: 4},
		gemmCase{m: 40, n: 2100, k: 270, padB: 3, padC: 5},
		gemmCase{m: 480, n: 130, k: 520},
		gemmCase{m: 60, n: 1100, k: 1000, padB: 1}, // several jc blocks in parallel Gemm
	)
}

// TestGemm checks every layout, accumulate on and off, Gemm (two workers) and
// GemmOn, on every implementation this CPU runs, against a float64
// reference; it also checks that the implementations agree with each other.
func TestGemm(t *testing.T) {
	impls := available()
	pools := make([]*Pool, len(impls))
	for i, im := range impls {
		pools[i] = newPoolImpl(2, im)
		defer pools[i].Close()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := gemmCases()
	if testing.Short() {
		cases = cases[:len(cases)-6]
	}
	for _, gc := range cases {
		for layout := 0; layout < 4; layout++ {
			transA, transB := layout&2 != 0, layout&1 != 0
			o := newOperands(rng, gc, transA, transB)
			for _, accumulate := range []bool{false, true} {
				for i, im := range impls {
					p := pools[i]
					name := fmt.Sprintf("%s %dx%dx%d tA=%v tB=%v acc=%v", im.name, gc.m, gc.n, gc.k, transA, transB, accumulate)
					o.check(t, rng, name+" Gemm", accumulate, p.Gemm)
					o.check(t, rng, name+" GemmOn", accumulate, func(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, accumulate bool) {
						p.GemmOn(1, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, accumulate)
					})
				}
			}
		}
	}
}

// TestGemmImplsAgree compares every implementation with the best one bit for
// bit on one larger problem: the float32 GEMMs all perform the same fused
// multiply-adds in the same order (the pure-Go one through fma32).
func TestGemmImplsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, n, k := 300, 200, 700
	a, b := randSlice(rng, m*k), randSlice(rng, n*k)
	var want []float32
	for _, im := range available() {
		p := newPoolImpl(2, im)
		c := make([]float32, m*n)
		p.Gemm(false, true, m, n, k, a, k, b, k, c, n, false)
		p.Close()
		if want == nil {
			want = c
			continue
		}
		if i := bitsDiffer(want, c); i >= 0 {
			t.Fatalf("%s and %s differ at %d: %v vs %v", available()[0].name, im.name, i, want[i], c[i])
		}
	}
}

func TestGemmDegenerate(t *testing.T) {
	for _, im := range available() {
		p := newPoolImpl(2, im)
		c := []float32{1, 2, 3, 4, 5, 6, 7}
		p.Gemm(false, false, 2, 3, 0, nil, 1, nil, 3, c, 3, true)
		if c[0] != 1 || c[5] != 6 {
			t.Fatalf("%s: k=0 accumulate changed C: %v", im.name, c)
		}
		p.Gemm(false, false, 2, 2, 0, nil, 1, nil, 2, c, 3, false)
		if want := []float32{0, 0, 3, 0, 0, 6, 7}; fmt.Sprint(c) != fmt.Sprint(want) {
			t.Fatalf("%s: k=0 gives %v, want %v", im.name, c, want)
		}
		p.Gemm(true, true, 0, 5, 3, nil, 1, make([]float32, 15), 3, nil, 5, false)
		p.GemmOn(0, false, false, 4, 0, 3, make([]float32, 12), 3, nil, 1, nil, 1, false)
		p.Close()
	}
	p := NewPool(1)
	defer p.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("short C did not panic")
		}
	}()
	p.Gemm(false, false, 2, 2, 2, make([]float32, 4), 2, make([]float32, 4), 2, make([]float32, 3), 2, false)
}

// TestGemmNoAlloc checks that Gemm (parallel and serial sizes) and GemmOn
// allocate nothing once warmed up.
func TestGemmNoAlloc(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	m, n, k := 300, 300, 300
	a, b, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Gemm", func() { p.Gemm(false, true, m, n, k, a, k, b, k, c, n, false) }},
		{"GemmSmall", func() { p.Gemm(true, false, 20, 30, 40, a, 20, b, 30, c, 30, true) }},
		{"GemmOn", func() { p.GemmOn(1, false, false, 64, 32, 256, a, 256, b, 32, c, 32, false) }},
	} {
		tc.f()
		if allocs := testing.AllocsPerRun(20, tc.f); allocs != 0 {
			t.Errorf("%s: %v allocations per call", tc.name, allocs)
		}
	}
}

// TestGemmOnInsideFor runs per-head products concurrently on all workers,
// the way attention uses GemmOn, and checks them against the reference.
func TestGemmOnInsideFor(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const heads, seq, dh = 6, 70, 32
	var ops []*gemmOperands
	for h := 0; h < heads; h++ {
		ops = append(ops, newOperands(rng, gemmCase{m: seq, n: seq, k: dh}, false, true))
	}
	for _, im := range available() {
		p := newPoolImpl(3, im)
		out := make([][]float32, heads)
		for h := range out {
			out[h] = make([]float32, seq*seq)
		}
		body := func(w, lo, hi int) {
			for h := lo; h < hi; h++ {
				o := ops[h]
				p.GemmOn(w, false, true, seq, seq, dh, o.a, o.lda, o.b, o.ldb, out[h], seq, false)
			}
		}
		for rep := 0; rep < 3; rep++ {
			p.For(heads, 1, body)
			for h, o := range ops {
				for i, v := range out[h] {
					if d := math.Abs(float64(v) - o.ref[i]); d > 1e-5*o.bound[i]+1e-6 {
						t.Fatalf("%s head %d element %d: %v, want %v", im.name, h, i, v, o.ref[i])
					}
				}
			}
		}
		p.Close()
	}
}

// TestGemmWorkerCounts runs parallel Gemm with more workers than processors
// (the barrier-free scheduling must not depend on all workers running at once).
func TestGemmWorkerCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	o := newOperands(rng, gemmCase{m: 301, n: 250, k: 1100, padA: 3}, false, true)
	for _, workers := range []int{1, 3, 5} {
		p := newPoolImpl(workers, available()[0])
		for _, acc := range []bool{false, true} {
			o.check(t, rng, fmt.Sprintf("workers=%d", workers), acc, p.Gemm)
		}
		p.Close()
	}
}

// TestGemmSharedAMatchesSerial checks the parallel products that pack each A
// block once and share it across column groups and jc blocks (the weight
// gradients' shapes: few ic blocks, several groups) against GemmOn, which
// packs A per block on one goroutine, bit for bit, in float32 and bf16, on
// every implementation; it also checks that those shapes do share A.
func TestGemmSharedAMatchesSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []struct {
		transA, transB bool
		m, n, k        int
	}{
		{true, false, 130, 300, 700},  // Xᵀ·dY: two ic blocks, four groups
		{true, false, 60, 2100, 1100}, // several jc blocks reuse the first block's A
		{true, true, 131, 257, 333},   // ragged everything, odd k
		{false, false, 100, 900, 513}, // A row-major, groups wider than the in-place limit
	}
	for _, im := range available() {
		p := newPoolImpl(2, im)
		for _, tc := range cases {
			lda, ldb := tc.k+3, tc.n+1
			if tc.transA {
				lda = tc.m + 3
			}
			if tc.transB {
				ldb = tc.k + 1
			}
			a, b := randSlice(rng, tc.k*lda+tc.m*lda), randSlice(rng, tc.k*ldb+tc.n*ldb)
			ldc := tc.n + 2
			for _, bf16 := range []bool{false, true} {
				if bf16 && !im.nativeFor(BF16) && im != genericImpl {
					continue // the same twin as generic's
				}
				c0 := randSlice(rng, tc.m*ldc)
				for _, acc := range []bool{false, true} {
					want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
					gemm, on := p.Gemm, p.GemmOn
					if bf16 {
						gemm, on = p.In(BF16).Gemm, p.In(BF16).GemmOn
					}
					gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, b, ldb, got, ldc, acc)
					if !p.g.shareA {
						t.Fatalf("%s %+v bf16=%v: A not shared", im.name, tc, bf16)
					}
					on(0, tc.transA, tc.transB, tc.m, tc.n, tc.k, a, lda, b, ldb, want, ldc, acc)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %+v bf16=%v acc=%v: C[%d] = %v, serial %v", im.name, tc, bf16, acc, i, got[i], want[i])
						}
					}
				}
			}
		}
		p.Close()
	}
}

// TestPackMatchesTwin checks every implementation's float32 packers against the pure-Go ones (packAGeneric,
// packBGeneric) bit for bit: both layouts of each operand, depths around the assembly's step blocks and KC (the
// model's 32-deep attention products, the 128 left of 1408 by KC = 256), ragged row and column counts, offsets
// into the matrix, padded strides and special values. The destination starts as garbage, so every word of the
// panels must be written.
func TestPackMatchesTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, im := range available() {
		g := im.gemmFor(F32)
		for _, k := range []int{1, 7, 8, 9, 17, 32, 128, 256, 300, 520} {
			for _, pc := range []int{0, 5, g.kc} {
				if pc >= k {
					continue
				}
				for _, kc := range []int{min(g.kc, k-pc), min(7, k-pc)} {
					for _, rows := range []int{1, g.mr - 1, g.mr, g.mr + 1, g.nr - 1, g.nr + 1, 3*g.mr + 2, 2*g.nr + 3, g.mc} {
						for _, trans := range []bool{false, true} {
							// The operand as A (transA = trans) and as B (transB = !trans), so that both packers see
							// both memory layouts.
							src, ld := packSource(rng, k, rows, trans)
							a := gemmArgs{transA: trans, transB: !trans, m: packOff + rows, n: packOff + rows, k: k, a: src, lda: ld, b: src, ldb: ld}
							for _, tc := range packCases(g, packAGeneric, packBGeneric) {
								size := ceilDiv(rows, tc.w) * tc.w * kc
								want, got := make([]float32, size), make([]float32, size)
								fillGarbage(want)
								fillGarbage(got)
								tc.twin(g, &a, want, packOff, rows, pc, kc)
								tc.pack(g, &a, got, packOff, rows, pc, kc)
								if i := bitsDiffer(want, got); i >= 0 {
									t.Fatalf("%s %s k=%d pc=%d kc=%d rows=%d k-across-rows=%v: word %d = %#08x, twin %#08x",
										im.name, tc.name, k, pc, kc, rows, trans, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
								}
							}
						}
					}
				}
			}
		}
	}
}

// packOff is the first row (or column) the pack tests pack, so that they start inside the matrix.
const packOff = 3

// packSource returns an operand for the pack tests, filled by specialSlice, and its row stride: k deep and
// packOff+rows wide, with k along each row, or (trans) across the rows, and the stride padded.
func packSource(rng *rand.Rand, k, rows int, trans bool) ([]float32, int) {
	const pad = 5
	ld, n := k+pad, (packOff+rows)*(k+pad)
	if trans {
		ld, n = packOff+rows+pad, k*(packOff+rows+pad)
	}
	return specialSlice(rng, n, true), ld
}

// packCase is one packer of an implementation and the pure-Go twin it must match.
type packCase struct {
	name       string
	pack, twin packFunc
	w          int // the panel width (MR or NR)
}

// packCases are g's two packers with their twins.
func packCases(g *gemmImpl, twinA, twinB packFunc) []packCase {
	return []packCase{{"packA", g.packA, twinA, g.mr}, {"packB", g.packB, twinB, g.nr}}
}
