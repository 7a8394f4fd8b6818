package kernel

import "math"

// Dot returns Σ x[i]·y[i] in dotGeneric's order (fused multiply-adds in 16 lanes, a fixed horizontal sum), so
// that every kernel path gives the same bits. It panics if len(x) != len(y).
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic("kernel.Dot: length mismatch")
	}
	return active.dot(x, y)
}

// Axpy computes y += alpha·x, each element one fused multiply-add. It panics if len(x) != len(y).
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		panic("kernel.Axpy: length mismatch")
	}
	active.axpy(alpha, x, y)
}

// Scale computes x *= alpha.
func Scale(alpha float32, x []float32) { active.scale(alpha, x) }

// Add computes dst += x. It panics if len(dst) != len(x).
func Add(dst, x []float32) {
	if len(dst) != len(x) {
		panic("kernel.Add: length mismatch")
	}
	active.add(dst, x)
}

// Exp computes dst[i] = exp(src[i]) with a vectorised Cephes-style expf:
// range reduction x = n·ln2 + r (|r| <= ln2/2, Cody-Waite split of ln2), a
// degree-7 polynomial for exp(r), then scaling by 2^n. The relative error is
// about 1e-7 (at most ~1.5 ulp) for normal results; results below the
// smallest normal float32 (x < -87.3) are denormal with a small absolute
// error and reach 0 for x < -103.97; exp(-Inf) = 0, x > 88.72 gives +Inf and
// NaN gives NaN. Every path gives exp32's bits. dst and src may be the same
// slice. It panics if len(dst) != len(src).
func Exp(dst, src []float32) {
	if len(dst) != len(src) {
		panic("kernel.Exp: length mismatch")
	}
	active.exp(dst, src)
}

// MaxF returns the largest element of x, or -Inf if x is empty. Every path
// returns the same value; NaN elements give an unspecified result, and the
// sign of a zero maximum may differ between paths (the model uses MaxF as a
// softmax shift, where it does not change the result).
func MaxF(x []float32) float32 { return active.max(x) }

// Pure-Go twins of the vector kernels (the "generic" implementation). They define the results of every path:
// a product added to a sum is one fused multiply-add (fma32) where the SIMD kernels fuse it, a reduction
// sums in the 16-lane order of the AVX-512 kernels (which the AVX2 ones compute on ymm pairs), and a product
// or sum rounded on its own is a separate float32 operation (an explicit conversion where Go could otherwise
// fuse it on other architectures). A NaN result is a NaN, not necessarily with the SIMD kernels' payload.

// lanes is the width of the SIMD kernels' vectors whose order the pure-Go twins copy: 16 float32 lanes (one
// zmm register; a pair of ymm registers on the AVX2 path), independent of the vector width that runs it.
const lanes = 16

// hsum16 returns the sum of v's lanes in the SIMD kernels' order (hsumZ0): lanes l and l+8 added, then l and
// l+4 of those, then (0 + 2) + (1 + 3).
func hsum16(v *[lanes]float32) float32 {
	var h [lanes / 2]float32
	for l := range h {
		h[l] = v[l] + v[l+lanes/2]
	}
	q0, q1, q2, q3 := h[0]+h[4], h[1]+h[5], h[2]+h[6], h[3]+h[7]
	return (q0 + q2) + (q1 + q3)
}

// dotGeneric defines Dot (dotAVX512's order): four accumulators of 16 lanes take the whole 64-element blocks
// (accumulator a, lane l: element 16a + l of each block), accumulator 0 the whole 16-element blocks after them
// and accumulator 1 the last len(x) mod 16 elements, the lanes past the end reading zero as a masked load
// does; every step is one fused multiply-add (fma32). Then (acc₀ + acc₁) + (acc₂ + acc₃) lane by lane, and
// hsum16.
func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var acc [4][lanes]float32
	n64, n16 := len(x)&^(4*lanes-1), len(x)&^(lanes-1)
	for i := 0; i < n64; i++ {
		a := &acc[i/lanes%4][i%lanes]
		*a = fma32(x[i], y[i], *a)
	}
	for i := n64; i < n16; i++ {
		acc[0][i%lanes] = fma32(x[i], y[i], acc[0][i%lanes])
	}
	if n16 < len(x) {
		var xt, yt [lanes]float32
		copy(xt[:], x[n16:])
		copy(yt[:], y[n16:])
		for l := range xt {
			acc[1][l] = fma32(xt[l], yt[l], acc[1][l])
		}
	}
	var s [lanes]float32
	for l := range s {
		s[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l])
	}
	return hsum16(&s)
}

func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = fma32(alpha, v, y[i])
	}
}

func scaleGeneric(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

func addGeneric(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] += v
	}
}

func maxGeneric(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// Constants of the Cephes expf algorithm shared with the assembly (see _asm).
const (
	expHi    = 88.8 // exp(88.8) overflows to +Inf
	expLo    = -104 // exp(-104) underflows to 0
	expLog2e = 1.44269504088896341
	expC1    = 0.693359375 // ln2 = expC1 + expC2 (Cody-Waite)
	expC2    = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

func expGeneric(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = exp32(x)
	}
}

// exp32 defines Exp (the SIMD kernels' arithmetic, lane by lane): clamp, n = round(x·log2e), r = x − n·ln2 in
// two fused multiply-adds (Cody-Waite), exp(r) = 1 + r + r²·p(r) with p evaluated by fused multiply-adds
// (Horner) and r + r²·p one more, then scaled by 2^(n>>1)·2^(n−(n>>1)), which gives the correctly rounded
// 2^n·exp(r) that VSCALEFPS gives (the first factor keeps the value normal, so only the second rounds).
func exp32(x float32) float32 {
	if x != x {
		return x
	}
	x = min(max(x, expLo), expHi)
	n := float32(math.RoundToEven(float64(x * expLog2e)))
	r := fma32(-n, expC1, x)
	r = fma32(-n, expC2, r)
	p := float32(expP0)
	p = fma32(p, r, expP1)
	p = fma32(p, r, expP2)
	p = fma32(p, r, expP3)
	p = fma32(p, r, expP4)
	p = fma32(p, r, expP5)
	y := fma32(r*r, p, r) + 1
	ni := int32(n)
	n1 := ni >> 1
	n2 := ni - n1
	y *= math.Float32frombits(uint32(n1+127) << 23)
	y *= math.Float32frombits(uint32(n2+127) << 23)
	return y
}
