package kernel

import (
	"math"
	"math/bits"
)

// fma32 returns a·b + c rounded once to float32 (round to nearest even): the
// result of the SIMD kernels' VFMADD231PS for every finite operand, so that the
// pure-Go GEMM gives their bits.
//
// The product of two float32 values is exact in float64 (24+24 significant
// bits, exponents in range), but the float64 sum is rounded, and rounding
// that sum again to float32 can round twice the wrong way: when the float64
// sum lands exactly on a midpoint of two float32 neighbours that the exact sum
// was not on (1 + 2^-23 + 2^-24 - 2^-70 rounds to the midpoint 1 + 3·2^-24 and
// then to even, 1 + 2^-22, where the float32 FMA gives 1 + 2^-23). Any other
// float64 sum lies strictly between the same float32 midpoints as the exact
// sum (rounding is monotone and the midpoints are float64 values), so it rounds
// to the same float32. fma32 converts directly in that case and otherwise
// recovers the sum's error exactly (TwoSum) and rounds the sum to odd before
// converting, which is correctly rounded because float64 carries more than
// float32's 24 + 1 bits (Boldo and Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", IEEE Trans. Comput.
// 57(4), 2008). A NaN or infinite operand gives a NaN or infinity, not
// necessarily with the SIMD kernels' NaN payload.
func fma32(a, b, c float32) float32 {
	s := float64(a)*float64(b) + float64(c) // the product is exact, so a fused product would give the same s
	if fma32Unsure(s) != 0 {
		p := float64(float64(a) * float64(b))
		s = roundToOdd(p, float64(c), s)
	}
	return float32(s)
}

// fma32Unsure is 1 when float32(s), s the float64 sum of an exact product and a float32, might not be the
// exactly rounded sum: when s is a float32 midpoint in float32's normal range (its low 29 mantissa bits are 1
// followed by zeros) or lies strictly between 0 and 2^-126 in magnitude (where the midpoints sit higher); 0
// otherwise. It is branch-free, so that GEMM loops can OR it over a tile and take fma32's slow path only
// when the tile needs it.
func fma32Unsure(s float64) uint64 {
	u := math.Float64bits(s)
	mid := (u&(1<<29-1) ^ 1<<28 - 1) >> 63 // 1 when the low bits are exactly 1<<28
	_, tiny := bits.Sub64(u<<1-1, (1023-126)<<53-1, 0)
	return mid | tiny // tiny: 0 < |s| < 2^-126 (u<<1-1 wraps to the top for a zero)
}

// roundToOdd returns the exact x + y rounded to odd in float64 (truncated toward zero, then the last bit
// set when inexact), given s = x + y rounded to nearest; infinite or NaN sums come back as they are.
func roundToOdd(x, y, s float64) float64 {
	z := s - x
	e := (x - (s - z)) + (y - z) // the exact x + y - s (TwoSum)
	if !(e < 0 || e > 0) {
		return s // exact, or not finite
	}
	u := math.Float64bits(s)
	if u&1 != 0 {
		return s // s is the odd one of the exact sum's two float64 neighbours
	}
	if (e > 0) == (s > 0) {
		u++ // the neighbour away from zero
	} else {
		u--
	}
	return math.Float64frombits(u)
}

// fma32Step is fma32's fast path for the GEMM loops: the float32 of the float64 sum, and unsure ORed with
// fma32Unsure of that sum (when the result is unsure, the caller computes it again with fma32).
func fma32Step(a, b, c float32, unsure uint64) (float32, uint64) {
	s := float64(a)*float64(b) + float64(c)
	return float32(s), unsure | fma32Unsure(s)
}
