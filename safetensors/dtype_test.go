package safetensors

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// refF16 decodes binary16 bits independently of f16ToF32, via float64
// arithmetic.
func refF16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := int(h & 0x3ff)
	switch e {
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(float64(m), -24)
	}
	return sign * math.Ldexp(float64(1024+m), e-25)
}

func TestF16ToF32Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got := f16ToF32(h)
		want := refF16(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("f16 %#04x: got %v, want NaN", h, got)
			}
			// The payload and sign survive a round trip.
			if back := f32ToF16(got); back != h|0x200 {
				t.Fatalf("f16 NaN %#04x round-trips to %#04x", h, back)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("f16 %#04x: got %v, want %v", h, got, want)
		}
		if back := f32ToF16(got); back != h {
			t.Fatalf("f16 %#04x -> %v -> %#04x", h, got, back)
		}
	}
}

func TestBF16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got := bf16ToF32(h)
		if math.IsNaN(float64(got)) {
			if back := F32ToBF16(got); back != h|0x40 {
				t.Fatalf("bf16 NaN %#04x round-trips to %#04x", h, back)
			}
			continue
		}
		if back := F32ToBF16(got); back != h {
			t.Fatalf("bf16 %#04x -> %v -> %#04x", h, got, back)
		}
	}
}

func TestF32ToF16Known(t *testing.T) {
	tests := []struct {
		in   float64
		want uint16
	}{
		{0, 0x0000},
		{math.Copysign(0, -1), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.1, 0x2e66},
		{1.0 / 3, 0x3555},
		{65504, 0x7bff},                         // max finite
		{65519.99, 0x7bff},                      // below the overflow midpoint
		{65520, 0x7c00},                         // midpoint, ties to even = Inf
		{1e6, 0x7c00},                           // overflow
		{-1e6, 0xfc00},                          // negative overflow
		{math.Inf(1), 0x7c00},                   // +Inf
		{math.Inf(-1), 0xfc00},                  // -Inf
		{math.Ldexp(1, -14), 0x0400},            // smallest normal
		{math.Ldexp(1023, -24), 0x03ff},         // largest subnormal
		{math.Ldexp(1, -24), 0x0001},            // smallest subnormal
		{math.Ldexp(1, -25), 0x0000},            // tie between 0 and 2^-24: even is 0
		{math.Ldexp(1.5, -25), 0x0001},          // above the tie
		{math.Ldexp(3, -25), 0x0002},            // 1.5 units: tie, rounds to even 2
		{math.Ldexp(5, -25), 0x0002},            // 2.5 units: tie, rounds to even 2
		{math.Ldexp(2047, -25), 0x0400},         // rounds up into the smallest normal
		{-math.Ldexp(1, -24), 0x8001},           // negative subnormal
		{math.Ldexp(1, -30), 0x0000},            // underflow
		{-math.Ldexp(1, -30), 0x8000},           // underflow keeps sign
		{1 + math.Ldexp(1, -11), 0x3c00},        // tie, even mantissa stays
		{1 + 3*math.Ldexp(1, -11), 0x3c02},      // tie, odd mantissa rounds up
		{1 + math.Ldexp(1, -11) + 1e-7, 0x3c01}, // just above the tie
		{2048 + 1, 0x6800},                      // 2049: tie between 2048 and 2050 -> 2048
		{2048 + 3, 0x6802},                      // 2051: tie -> 2052
	}
	for _, tc := range tests {
		if got := f32ToF16(float32(tc.in)); got != tc.want {
			t.Errorf("f32ToF16(%v) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	if got := f32ToF16(float32(math.NaN())); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("f32ToF16(NaN) = %#04x, not a NaN", got)
	}
	// A NaN whose payload lies only in the low bits must not become Inf.
	if got := f32ToF16(math.Float32frombits(0x7f800001)); got&0x3ff == 0 {
		t.Errorf("low-payload NaN became %#04x", got)
	}
}

func TestF32ToBF16Known(t *testing.T) {
	tests := []struct {
		in   uint32 // float32 bits
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above tie
		{0x3f807fff, 0x3f80}, // below tie
		{0x7f7fffff, 0x7f80}, // max float32 rounds to Inf
		{0x7f7f7fff, 0x7f7f}, // stays max bf16
		{0xff800000, 0xff80}, // -Inf
		{0x00000001, 0x0000}, // tiny subnormal
		{0x00008000, 0x0000}, // tie at zero
		{0x00018000, 0x0002}, // subnormal tie rounds to even
		{0x80000000, 0x8000}, // -0
	}
	for _, tc := range tests {
		if got := F32ToBF16(math.Float32frombits(tc.in)); got != tc.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	if got := F32ToBF16(math.Float32frombits(0x7f800001)); got&0x7f != 0x40 {
		t.Errorf("low-payload NaN became %#04x", got)
	}
}

// nearestRef rounds x to the nearest value in a 16-bit format whose positive
// finite encodings 0..maxFinite increase with the bits, and whose encoding
// maxFinite+1 is Inf, treated for rounding as the value infValue (the next
// power of two, per IEEE 754 overflow rules). Ties go to the even encoding.
func nearestRef(x float64, maxFinite uint16, infValue float64, decode func(uint16) float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign = 0x8000
		x = -x
	}
	val := func(h uint16) float64 {
		if h > maxFinite {
			return infValue
		}
		return decode(h)
	}
	// Largest encoding with val <= x.
	n := int(maxFinite) + 2
	lo := uint16(sort.Search(n, func(i int) bool { return val(uint16(i)) > x }) - 1)
	if lo > maxFinite || val(lo) == x {
		return sign | lo
	}
	hi := lo + 1
	dlo, dhi := x-val(lo), val(hi)-x
	switch {
	case dlo < dhi:
		return sign | lo
	case dhi < dlo:
		return sign | hi
	case lo%2 == 0:
		return sign | lo
	}
	return sign | hi
}

func TestF32ToHalfRandomAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bf := func(h uint16) float64 { return float64(bf16ToF32(h)) }
	for i := range 200_000 {
		var bits uint32
		if i%2 == 0 {
			bits = r.Uint32()
		} else {
			// Concentrate on the F16 range, where rounding is interesting.
			bits = r.Uint32N(0x48000000) | r.Uint32()&0x80000000
		}
		x := math.Float32frombits(bits)
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			continue
		}
		if got, want := f32ToF16(x), nearestRef(float64(x), 0x7bff, 65536, refF16); got != want {
			t.Fatalf("f32ToF16(%g = %#08x) = %#04x, want %#04x", x, bits, got, want)
		}
		if got, want := F32ToBF16(x), nearestRef(float64(x), 0x7f7f, math.Ldexp(1, 128), bf); got != want {
			t.Fatalf("F32ToBF16(%g = %#08x) = %#04x, want %#04x", x, bits, got, want)
		}
	}
}

func TestF8Decode(t *testing.T) {
	tests := []struct {
		dtype DType
		in    byte
		want  float64
	}{
		{F8E4M3, 0x00, 0},
		{F8E4M3, 0x38, 1},                 // exp 7, mant 0
		{F8E4M3, 0xb8, -1},                // negative
		{F8E4M3, 0x7e, 448},               // max finite
		{F8E4M3, 0x01, math.Ldexp(1, -9)}, // smallest subnormal
		{F8E4M3, 0x07, math.Ldexp(7, -9)}, // largest subnormal
		{F8E4M3, 0x08, math.Ldexp(1, -6)}, // smallest normal
		{F8E4M3, 0x7f, math.NaN()},
		{F8E4M3, 0x78, 256}, // exponent 15 is finite in e4m3fn
		{F8E5M2, 0x3c, 1},
		{F8E5M2, 0x7b, 57344}, // max finite
		{F8E5M2, 0x7c, math.Inf(1)},
		{F8E5M2, 0x01, math.Ldexp(1, -16)},
		{F8E5M2, 0x7d, math.NaN()},
	}
	for _, tc := range tests {
		var got float32
		if tc.dtype == F8E4M3 {
			got = f8e4m3ToF32(tc.in)
		} else {
			got = f8e5m2ToF32(tc.in)
		}
		if math.IsNaN(tc.want) {
			if !math.IsNaN(float64(got)) {
				t.Errorf("%s %#02x = %v, want NaN", tc.dtype, tc.in, got)
			}
			continue
		}
		if float64(got) != tc.want {
			t.Errorf("%s %#02x = %v, want %v", tc.dtype, tc.in, got, tc.want)
		}
	}
}

func TestDTypeSize(t *testing.T) {
	tests := map[DType]int{
		F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1,
		BOOL: 1, U16: 2, U32: 4, U64: 8, C64: 8, F8E4M3: 1, F8E5M2: 1, F8E8M0: 1,
		F4: 0, F6E2M3: 0, "F33": 0, "": 0, "f32": 0,
	}
	for d, want := range tests {
		if got := d.Size(); got != want {
			t.Errorf("%q.Size() = %d, want %d", d, got, want)
		}
	}
}
