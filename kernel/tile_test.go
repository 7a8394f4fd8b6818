package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// opAt returns element (i, x) of op(M) for a row-major M with stride ld.
func opAt(m []float32, ld int, trans bool, i, x int) float32 {
	if trans {
		return m[x*ld+i]
	}
	return m[i*ld+x]
}

// TestTilePackALayout checks the tile-layout A packer word by word against
// its definition (group g0 of w pairs, tileMR rows of w pairs each, bf16
// pairs with the even k low, zero past k and past the rows): both memory
// layouts of A, depths around tileK and KC with an odd k, ragged rows,
// offsets, padded strides and the special values (denormals, ±0, ties,
// ±Inf, NaN). The destination starts as garbage, so every word must be
// written.
func TestTilePackALayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	im := &tileBF16Gemm
	for _, kf := range []int{1, 2, 31, 32, 33, 65, 513, 545} {
		k2 := (kf + 1) / 2
		for _, pc := range []int{0, 5, bf16KC} {
			if pc >= k2 {
				continue
			}
			for _, kc := range []int{min(bf16KC, k2-pc), min(7, k2-pc), min(17, k2-pc)} {
				for _, rows := range []int{1, tileMR - 1, tileMR, 2*tileMR + 3} {
					for _, trans := range []bool{false, true} {
						const off, pad = 3, 5
						ld, n := kf+pad, (off+rows)*(kf+pad)
						if trans {
							ld, n = off+rows+pad, kf*(off+rows+pad)
						}
						src := specialSlice(rng, n, true)
						a := gemmArgs{transA: trans, m: off + rows, k: k2, kf: kf, a: src, lda: ld}
						size := ceilDiv(rows, tileMR) * tileMR * kc
						got := make([]float32, size)
						for i := range got {
							got[i] = math.Float32frombits(0xDEADBEEF)
						}
						packATileBF16Generic(im, &a, got, off, rows, pc, kc)
						words := u32View(got)
						for q := 0; q*tileMR < rows; q++ {
							for r := 0; r < tileMR; r++ {
								for s := 0; s < kc; s++ {
									g0 := s / tileK * tileK
									w := min(tileK, kc-g0)
									at := q*tileMR*kc + g0*tileMR + r*w + (s - g0)
									var want uint32
									if i := q*tileMR + r; i < rows {
										x := 2 * (pc + s)
										hi := float32(0)
										if x+1 < kf {
											hi = opAt(src, ld, trans, off+i, x+1)
										}
										want = bf16Pair(opAt(src, ld, trans, off+i, x), hi)
									}
									if words[at] != want {
										t.Fatalf("kf=%d pc=%d kc=%d rows=%d trans=%v: panel %d row %d pair %d = %#08x, want %#08x",
											kf, pc, kc, rows, trans, q, r, s, words[at], want)
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

// TestTilePackBIsVNNI checks that the B pair panels every implementation
// packs with NR = 32 are the VNNI layout the tile kernel loads: in panel q,
// step s, column c, the pair of op(B)[2(pc+s)][j] (low half) and
// op(B)[2(pc+s)+1][j] (zero past k), j = j0+q·32+c, zero past the columns.
func TestTilePackBIsVNNI(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	impls := []*gemmImpl{&tileBF16Gemm}
	for _, im := range available() {
		if g := im.gemmFor(BF16); g.nr == tileNR && !g.split {
			impls = append(impls, im.gemmFor(BF16))
		}
	}
	for _, g := range impls {
		for _, kf := range []int{1, 33, 64, 513} {
			k2 := (kf + 1) / 2
			for _, pc := range []int{0, 3} {
				if pc >= k2 {
					continue
				}
				kc := min(bf16KC, k2-pc)
				for _, cols := range []int{1, 31, 32, 70} {
					for _, trans := range []bool{false, true} {
						const off, pad = 2, 3
						// op(B) is kf × (off+cols): B itself, or with trans its transpose.
						ld, n := off+cols+pad, kf*(off+cols+pad)
						if trans {
							ld, n = kf+pad, (off+cols)*(kf+pad)
						}
						src := specialSlice(rng, n, true)
						a := gemmArgs{transB: trans, n: off + cols, k: k2, kf: kf, b: src, ldb: ld}
						got := make([]float32, ceilDiv(cols, tileNR)*tileNR*kc)
						g.packB(g, &a, got, off, cols, pc, kc)
						words := u32View(got)
						for q := 0; q*tileNR < cols; q++ {
							for s := 0; s < kc; s++ {
								for c := 0; c < tileNR; c++ {
									var want uint32
									if j := q*tileNR + c; j < cols {
										x := 2 * (pc + s)
										// op(B)[x][j]: B[x][j], or with trans B[j][x].
										hi := float32(0)
										if x+1 < kf {
											hi = opAt(src, ld, !trans, off+j, x+1)
										}
										want = bf16Pair(opAt(src, ld, !trans, off+j, x), hi)
									}
									if w := words[q*kc*tileNR+s*tileNR+c]; w != want {
										t.Fatalf("kf=%d pc=%d cols=%d trans=%v: panel %d step %d column %d = %#08x, want %#08x",
											kf, pc, cols, trans, q, s, c, w, want)
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

// tileReference is the bf16 tile GEMM written straight from its definition
// (tile.go: TDPBF16PS's two partial sums per instruction of tileK pairs, the
// DAZ/FTZ sums into a KC block's accumulator, the block added to C), one
// element at a time on the unpacked operands: the independent statement the
// packed twin is checked against.
func tileReference(o *gemmOperands, c []float32, accumulate bool) {
	kp := (o.k + 1) / 2
	val := func(m []float32, ld int, trans bool, i, x int) float32 {
		if x >= o.k {
			return 0
		}
		return RoundBF16(opAt(m, ld, trans, i, x))
	}
	for i := 0; i < o.m; i++ {
		for j := 0; j < o.n; j++ {
			for p0 := 0; p0 < kp; p0 += bf16KC {
				var acc float32
				for g0 := p0; g0 < min(p0+bf16KC, kp); g0 += tileK {
					var e, od float32
					for p := g0; p < min(g0+tileK, p0+bf16KC, kp); p++ {
						e = tileFMA(e, val(o.a, o.lda, o.transA, i, 2*p), val(o.b, o.ldb, !o.transB, j, 2*p))
						od = tileFMA(od, val(o.a, o.lda, o.transA, i, 2*p+1), val(o.b, o.ldb, !o.transB, j, 2*p+1))
					}
					acc = tileAdd(acc, tileAdd(e, od))
				}
				if p0 == 0 && !accumulate {
					c[i*o.ldc+j] = acc
				} else {
					c[i*o.ldc+j] += acc
				}
			}
		}
	}
}

// sameFloat is bit equality, except that any two NaNs are equal (the
// twin's NaN payloads come from Go's arithmetic, not the hardware's).
func sameFloat(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || x != x && y != y
}

// TestTileBF16GemmMatchesDefinition runs the tile twin (pure-Go tile kernel
// and packers in the blocked GEMM; two workers, and In(BF16).GemmOn) against
// tileReference on every shape class: ragged M, N and K around the tiles,
// tileK and KC, odd k, every layout, padded strides, accumulate on and off,
// and operands with denormals, ±0, ties, tiny products, ±Inf and NaN. Without
// the special values it also checks the twin against a float64 product of
// the bf16 operands (float32 accumulation bound, as TestGemmBF16).
func TestTileBF16GemmMatchesDefinition(t *testing.T) {
	tileImpl := *genericImpl
	tileImpl.gemms[BF16] = tileBF16Gemm
	p := newPoolImpl(2, &tileImpl)
	defer p.Close()
	rng := rand.New(rand.NewPCG(55, 56))
	cases := []gemmCase{
		{m: 1, n: 1, k: 1},
		{m: 31, n: 33, k: 31, padA: 1, padB: 2, padC: 3},
		{m: 32, n: 32, k: 32},
		{m: 33, n: 65, k: 33, padA: 4},
		{m: 70, n: 40, k: 97, padB: 1, padC: 2},
		{m: 17, n: 100, k: 513, padA: 2, padB: 5},         // crosses KC with an odd k
		{m: 130, n: 300, k: 600, padA: 1, padC: 1},        // parallel, groups share A
		{m: 45, n: 1100, k: 1030, padB: 1, padC: 4},       // parallel, several jc blocks
		{m: 257, n: 33, k: 66, padA: 3, padB: 3, padC: 3}, // several ic blocks
	}
	if testing.Short() {
		cases = cases[:6]
	}
	for ci, gc := range cases {
		for layout := 0; layout < 4; layout++ {
			transA, transB := layout&2 != 0, layout&1 != 0
			o := newOperands(rng, gc, transA, transB)
			special := ci%2 == 1
			if special {
				o.a, o.b = specialSlice(rng, len(o.a), true), specialSlice(rng, len(o.b), true)
			}
			var ref, bound []float64
			if !special && gc.m*gc.n*gc.k <= 2e6 {
				ref, bound = bf16Reference(o)
			}
			size := (o.m-1)*o.ldc + o.n
			for _, accumulate := range []bool{false, true} {
				c0 := randSlice(rng, size+5)
				want := append([]float32(nil), c0...)
				tileReference(o, want, accumulate)
				name := fmt.Sprintf("%dx%dx%d tA=%v tB=%v acc=%v special=%v", gc.m, gc.n, gc.k, transA, transB, accumulate, special)
				for _, on := range []bool{false, true} {
					got := append([]float32(nil), c0...)
					if on {
						p.In(BF16).GemmOn(1, transA, transB, o.m, o.n, o.k, o.a, o.lda, o.b, o.ldb, got[:size], o.ldc, accumulate)
					} else {
						p.In(BF16).Gemm(transA, transB, o.m, o.n, o.k, o.a, o.lda, o.b, o.ldb, got[:size], o.ldc, accumulate)
					}
					for idx := range got {
						if !sameFloat(got[idx], want[idx]) {
							t.Fatalf("%s GemmOn=%v: C[%d] = %v (%#08x), definition %v (%#08x)", name, on, idx,
								got[idx], math.Float32bits(got[idx]), want[idx], math.Float32bits(want[idx]))
						}
					}
				}
				if ref == nil {
					continue
				}
				for i := 0; i < o.m; i++ {
					for j := 0; j < o.n; j++ {
						r, b := ref[i*o.n+j], bound[i*o.n+j]
						if accumulate {
							r += float64(c0[i*o.ldc+j])
							b += math.Abs(float64(c0[i*o.ldc+j]))
						}
						if d := math.Abs(float64(want[i*o.ldc+j]) - r); !(d <= 1e-5*b+1e-30) {
							t.Fatalf("%s: C[%d,%d] = %v, float64 %v (bound %v)", name, i, j, want[i*o.ldc+j], r, b)
						}
					}
				}
			}
		}
	}
}

// TestTileDiffersFromVDPBF16PS pins the one documented difference between
// the two bf16 instructions' arithmetic: TDPBF16PS sums even and odd k in
// separate partial sums, VDPBF16PS chains them. With one product of 1 and
// three of 2^-24, the chain rounds every 2^-24 away (ties to even at 1),
// while the odd partial sum collects two of them into 2^-23, which survives:
// the results differ in the last bit, so a run cannot switch between the
// paths and keep its bits.
func TestTileDiffersFromVDPBF16PS(t *testing.T) {
	a := []float32{1, 1, 1, 1}
	b := []float32{1, float32(math.Ldexp(1, -24)), float32(math.Ldexp(1, -24)), float32(math.Ldexp(1, -24))}
	var chained float32
	for p := 0; p < 2; p++ {
		chained = bf16FMA(chained, a[2*p+1], b[2*p+1])
		chained = bf16FMA(chained, a[2*p], b[2*p])
	}
	var e, o float32
	for p := 0; p < 2; p++ {
		e = tileFMA(e, a[2*p], b[2*p])
		o = tileFMA(o, a[2*p+1], b[2*p+1])
	}
	split := tileAdd(0, tileAdd(e, o))
	if chained == split {
		t.Fatalf("VDPBF16PS order and TDPBF16PS order both give %v: the example does not separate them", split)
	}
	if want := float32(1 + math.Ldexp(1, -23)); split != want {
		t.Errorf("TDPBF16PS order: %v, want %v (the odd sum 2^-23 survives the final addition)", split, want)
	}
}
