package kernel

import "math"

// Dot returns Σ x[i]·y[i]. It panics if len(x) != len(y). The SIMD versions
// sum in a different order than a scalar loop, so results agree only to
// float32 rounding.
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic("kernel.Dot: length mismatch")
	}
	return active.dot(x, y)
}

// Axpy computes y += alpha·x. It panics if len(x) != len(y).
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
// NaN gives NaN. dst and src may be the same slice. It panics if
// len(dst) != len(src).
func Exp(dst, src []float32) {
	if len(dst) != len(src) {
		panic("kernel.Exp: length mismatch")
	}
	active.exp(dst, src)
}

// MaxF returns the largest element of x, or -Inf if x is empty. NaN elements
// give an unspecified result.
func MaxF(x []float32) float32 { return active.max(x) }

// Pure-Go twins of the vector kernels (the "generic" implementation).

func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
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

// exp32 is the scalar twin of the AVX2 kernel: clamp, n = round(x·log2e),
// r = x - n·ln2, exp(r) by polynomial, then scale by 2^(n>>1)·2^(n-(n>>1)).
func exp32(x float32) float32 {
	if x != x {
		return x
	}
	x = min(max(x, expLo), expHi)
	n := float32(math.RoundToEven(float64(x * expLog2e)))
	r := x - n*expC1
	r -= n * expC2
	p := float32(expP0)
	p = p*r + expP1
	p = p*r + expP2
	p = p*r + expP3
	p = p*r + expP4
	p = p*r + expP5
	y := p*(r*r) + r + 1
	ni := int32(n)
	n1 := ni >> 1
	n2 := ni - n1
	y *= math.Float32frombits(uint32(n1+127) << 23)
	y *= math.Float32frombits(uint32(n2+127) << 23)
	return y
}
