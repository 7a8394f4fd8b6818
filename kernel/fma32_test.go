package kernel

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fma32Exact is a·b + c computed exactly and rounded once to float32 (nearest even, denormals kept): the
// definition fma32 must meet.
func fma32Exact(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
	f, _ := x.Float32()
	if f == 0 && math.Signbit(float64(f)) != math.Signbit(float64(a)*float64(b)+float64(c)) {
		f = float32(float64(a)*float64(b) + float64(c)) // an exact zero's sign, as IEEE addition gives it
	}
	return f
}

// TestFMA32 checks fma32 against the exactly rounded a·b + c: the sums whose float64 rounding lands on a
// float32 midpoint (the double-rounding cases, built from a product just off half an ulp of c), results in
// float32's denormal range and at its overflow threshold, exact cancellations, and random operands across
// the exponent range.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	type tc struct{ a, b, c float32 }
	var cases []tc
	// Double rounding: c plus (half an ulp of c)·(1 ± 2^-j)·(1 ∓ 2^-j) = c ± ulp/2 ∓ tiny. With j >= 15 the
	// tiny part is below half a float64 ulp of the sum.
	for i := 0; i < 2000; i++ {
		c := float32(1+rng.Float64()) * float32(math.Ldexp(1, rng.IntN(200)-100))
		if rng.IntN(2) == 0 {
			c = -c
		}
		_, e := math.Frexp(float64(c))
		half := float32(math.Ldexp(1, e-25)) // half an ulp of c
		j := 12 + rng.IntN(12)
		d := float32(math.Ldexp(1, -j))
		a, b := half*(1+d), 1-d
		if rng.IntN(2) == 0 {
			b = 1 + d // the sum just above the midpoint
		}
		if rng.IntN(2) == 0 {
			a = -a
		}
		cases = append(cases, tc{a, b, c})
	}
	// The documented example: 1 + 2^-23 + 2^-24 - 2^-70 is below the midpoint, so it rounds to 1 + 2^-23.
	cases = append(cases, tc{float32(math.Ldexp(1, -24)) * (1 + float32(math.Ldexp(1, -23))), 1 - float32(math.Ldexp(1, -23)), 1 + float32(math.Ldexp(1, -23))})
	// Denormal results, the smallest normal, the overflow threshold, exact cancellation and signed zeros.
	tiny := float32(math.Ldexp(1, -126))
	for i := 0; i < 2000; i++ {
		a := float32(rng.NormFloat64()) * float32(math.Ldexp(1, -70))
		b := float32(rng.NormFloat64()) * float32(math.Ldexp(1, -70+rng.IntN(20)))
		c := float32(rng.NormFloat64()) * tiny * float32(rng.Float64())
		cases = append(cases, tc{a, b, c})
	}
	// Double rounding onto a midpoint of the denormal grid (spacing 2^-149): c = k·2^-149 near 2^-127 (so that
	// the sum's float64 ulp is 2^-179), a·b = 2^-150·(1 - 2^-2j) with 2^-150-2j below half of it.
	for i := 0; i < 500; i++ {
		c := float32(math.Ldexp(float64(1<<22+2*rng.IntN(1<<20)+1), -149))
		d := float32(math.Ldexp(1, -(16 + rng.IntN(8))))
		a, b := float32(math.Ldexp(1, -75))*(1+d), float32(math.Ldexp(1, -75))*(1-d)
		if rng.IntN(2) == 0 {
			c = -c
		}
		cases = append(cases, tc{a, b, c})
	}
	maxF := float32(math.MaxFloat32)
	cases = append(cases, tc{maxF, 1, maxF}, tc{maxF, 0.5, maxF / 2}, tc{2, 3, -6}, tc{-2, 3, 6},
		tc{float32(math.Copysign(0, -1)), 1, 0}, tc{float32(math.Copysign(0, -1)), 1, float32(math.Copysign(0, -1))},
		tc{tiny, 0.5, 0}, tc{tiny, 1, -tiny * 0.25})
	for i := 0; i < 20000; i++ {
		r := func() float32 {
			return float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(120)-60))
		}
		cases = append(cases, tc{r(), r(), r()})
	}
	slow := 0
	for _, x := range cases {
		got, want := fma32(x.a, x.b, x.c), fma32Exact(x.a, x.b, x.c)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g (%#08x), want %g (%#08x)", x.a, x.b, x.c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if s := float64(x.a)*float64(x.b) + float64(x.c); float32(s) != want {
			slow++ // a case where rounding the float64 sum alone is wrong
		}
	}
	if slow < 100 {
		t.Fatalf("only %d cases need the correction; the double-rounding cases are not being built", slow)
	}
}
