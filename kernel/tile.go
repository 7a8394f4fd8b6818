package kernel

import (
	"math"
	"unsafe"
)

// bfloat16 products in AMX tile layout: the pure-Go twin of TDPBF16PS.
//
// An AMX bf16 GEMM multiplies tiles: A tiles of 16 rows × 16 bf16 pairs
// (64 bytes a row), B tiles of 16 pair rows × 16 columns in the VNNI
// layout (row s holds, for each column, the pair of k = 2s and 2s+1, the even
// k in the low half), and float32 C tiles of 16×16. This file defines the
// result of such a GEMM bit for bit, so that an assembly tile kernel can be
// tested against it exactly as the VDPBF16PS kernel is tested against
// gemmKernBF16Generic4x4. Nothing here runs TDPBF16PS: the twin, its packers
// and their tests run on every machine.
//
// TDPBF16PS's arithmetic, as the Intel SDM (Vol. 2, TDPBF16PS, "Operation")
// states it. For one instruction, C tile row m and column n:
//
//	e, o := 0, 0                            // two float32 partial sums
//	for each pair p of the A tile's row (up to 16):
//	    e = fma(e, A[m].lo[p], B[p].lo[n])  // even k
//	    o = fma(o, A[m].hi[p], B[p].hi[n])  // odd k
//	C[m][n] = C[m][n] + (e + o)
//
// every fma and both additions rounded to nearest even, denormal inputs read
// as zero and denormal results flushed to a zero of the result's sign (DAZ =
// FTZ = 1), MXCSR neither read nor written. This differs from VDPBF16PS,
// which chains one accumulator through the odd and then the even product
// (bf16FMA in bf16.go): the two paths give different float32 results, so an
// AMX path is a precision of its own, with its own parity run. The zero
// starts of e and o make every instruction's partial sum independent of C,
// so the result depends on how k is cut into instructions (16 pairs each
// here, fewer for the last of a KC block).
//
// Whether Sapphire Rapids computes exactly this (rather than, say, a wider
// internal sum) has not been checked on hardware: the first run of an AMX
// kernel against this twin is that check.
//
// The blocking around it is the bf16 GEMM's (bf16.go): operands rounded by
// roundBF16 while packing, KC = bf16KC pairs, for each KC block a tile
// accumulator that starts at 0 and takes the instructions' partial sums (the
// DAZ/FTZ addition above), and the block's sum added to C with one ordinary
// float32 addition (C = sum for the first block unless accumulate), blocks in
// k order.
//
// Packed layouts (the tile kernel reads both with TILELOADD):
//   - A: tileMR-row panels of kc pairs, cut into groups of tileK pairs; group
//     g (w = min(tileK, kc-g·tileK) pairs) holds its tileMR rows one after
//     another, w pairs each: a 16-row half of the group is one A tile with a
//     row stride of 4w bytes (packATileBF16Generic);
//   - B: the bf16 GEMM's pair panels (pairCopy/pairGather, NR = 32): step s
//     holds the 32 columns' pairs of k = 2s, 2s+1, which is the VNNI layout,
//     so 16 steps × 16 columns of a panel are one B tile with a row stride
//     of 128 bytes.

// tileK is the pairs one TDPBF16PS consumes per row (a 64-byte A tile row).
const tileK = 16

// tileMR and tileNR are the twin's register tile: 2×2 C tiles of 16×16.
const tileMR, tileNR = 32, 32

// tileBF16Gemm is the bf16 GEMM in tile layout with the pure-Go tile
// kernel: the twin an AMX implementation must reproduce bit for bit. It is
// not a precision any run uses yet (no AMX kernel exists to be its fast path).
var tileBF16Gemm = gemmImpl{
	mr: tileMR, nr: tileNR,
	mc: 224, kc: bf16KC, nc: 1024,
	kern: gemmKernTileBF16Generic32x32, packA: packATileBF16Generic, packB: packBBF16Generic,
}

// tileFMA is one TDPBF16PS multiply-add: the same operation as VDPBF16PS's
// step (DAZ, FTZ, RNE fused multiply-add).
func tileFMA(acc, a, b float32) float32 { return bf16FMA(acc, a, b) }

// tileAdd is a float32 addition with denormal inputs read as zero and a
// denormal result flushed to a zero of its sign (TDPBF16PS's final sums).
func tileAdd(x, y float32) float32 {
	r := daz(x) + daz(y)
	if u := math.Float32bits(r); u&0x7F800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return r
}

// gemmKernTileBF16Generic32x32 is the pure-Go tile micro-kernel that defines
// the results (see above): a is a tile-layout A panel of k pairs (tileMR
// rows), b a pair panel (tileNR columns), read through the float32 kernel
// signature. Each group of up to tileK pairs is one TDPBF16PS per C tile.
func gemmKernTileBF16Generic32x32(k int, a, b, c *float32, ldc int, accum int) {
	as := unsafe.Slice((*uint32)(unsafe.Pointer(a)), tileMR*k)
	bs := unsafe.Slice((*uint32)(unsafe.Pointer(b)), tileNR*k)
	var acc [tileMR][tileNR]float32
	for g0 := 0; g0 < k; g0 += tileK {
		w := min(tileK, k-g0)
		ga := as[g0*tileMR : g0*tileMR+tileMR*w]
		for i := range acc {
			ar := ga[i*w : i*w+w]
			for j := range acc[i] {
				var e, o float32
				for t, aw := range ar {
					bw := bs[(g0+t)*tileNR+j]
					e = tileFMA(e, bf16Lo(aw), bf16Lo(bw))
					o = tileFMA(o, bf16Hi(aw), bf16Hi(bw))
				}
				acc[i][j] = tileAdd(acc[i][j], tileAdd(e, o))
			}
		}
	}
	cs := unsafe.Slice(c, (tileMR-1)*ldc+tileNR)
	for i := range acc {
		row := cs[i*ldc : i*ldc+tileNR]
		for j, v := range acc[i] {
			if accum != 0 {
				v += row[j]
			}
			row[j] = v
		}
	}
}

// packATileBF16Generic packs pairs [pc, pc+kc) of rows [ic, ic+mc) of op(A)
// into tile-layout panels of im.mr rows (see above), converting to bf16 as
// it packs: in panel q, group g0 (w pairs), row r, pair t holds
// pair(op(A)[i][2(pc+g0+t)], op(A)[i][2(pc+g0+t)+1]) for i = ic+q·mr+r, the
// second value zero past k, and zero pairs for rows past mc.
func packATileBF16Generic(im *gemmImpl, a *gemmArgs, dst []float32, ic, mc, pc, kc int) {
	d, mr := u32View(dst), im.mr
	// at(i, x) is op(A)[i][x] for x < a.kf, zero beyond.
	rs, cs := a.lda, 1
	if a.transA {
		rs, cs = 1, a.lda
	}
	for q0 := 0; q0 < mc; q0 += mr {
		pd := d[q0*kc : q0*kc+mr*kc]
		rows := min(mr, mc-q0)
		for g0 := 0; g0 < kc; g0 += tileK {
			w := min(tileK, kc-g0)
			gd := pd[g0*mr : g0*mr+mr*w]
			for r := 0; r < mr; r++ {
				row := gd[r*w : r*w+w]
				if r >= rows {
					clear(row)
					continue
				}
				base := (ic + q0 + r) * rs
				for t := range row {
					x := 2 * (pc + g0 + t) // < a.kf: kc pairs never pass ⌈kf/2⌉
					lo, hi := a.a[base+x*cs], float32(0)
					if x+1 < a.kf {
						hi = a.a[base+(x+1)*cs]
					}
					row[t] = bf16Pair(lo, hi)
				}
			}
		}
	}
}
