package safetensors

import (
	"math"
	"unsafe"
)

// DType is the element type string used in a safetensors header ("F32",
// "BF16", ...). It is a string so that the header value can be kept and
// reported verbatim.
type DType string

// Element types defined by the safetensors format. The engine itself only
// produces F32 (and I32 for integer buffers); the rest exist so that
// checkpoints written by other tools can be validated and, for the float
// types, converted on read.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	BOOL DType = "BOOL"
	U16  DType = "U16"
	U32  DType = "U32"
	U64  DType = "U64"
	// C64 is a complex number made of two float32 values.
	C64 DType = "C64"
	// F8E4M3 is the 8-bit "e4m3fn" float (no infinities, one NaN per sign).
	F8E4M3 DType = "F8_E4M3"
	// F8E5M2 is the 8-bit float with the layout of the top byte of an F16.
	F8E5M2 DType = "F8_E5M2"
	// F8E8M0 is the 8-bit power-of-two scale type used by MX formats.
	F8E8M0 DType = "F8_E8M0"
	// F6E2M3, F6E3M2 and F4 are sub-byte float types; they are accepted in
	// headers (so such files can be opened) but cannot be converted.
	F6E2M3 DType = "F6_E2M3"
	F6E3M2 DType = "F6_E3M2"
	F4     DType = "F4"
)

// bitSize returns the number of bits per element, or 0 for an unknown dtype.
// Sub-byte types are why validation works in bits rather than bytes.
func (d DType) bitSize() int {
	switch d {
	case F64, I64, U64, C64:
		return 64
	case F32, I32, U32:
		return 32
	case F16, BF16, I16, U16:
		return 16
	case I8, U8, BOOL, F8E4M3, F8E5M2, F8E8M0:
		return 8
	case F6E2M3, F6E3M2:
		return 6
	case F4:
		return 4
	}
	return 0
}

// Size returns the number of bytes per element, or 0 if the dtype is unknown
// or smaller than a byte (F4, F6_*). Callers use it to size raw buffers.
func (d DType) Size() int {
	b := d.bitSize()
	if b%8 != 0 {
		return 0
	}
	return b / 8
}

// littleEndian reports whether the host stores integers little-endian, which
// is what allows tensor bytes to be read straight into []float32 memory.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// f16ToF32 converts IEEE 754 binary16 bits to float32 exactly (every binary16
// value, including subnormals, is representable as a float32). NaN payloads
// are preserved.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = mant * 2^-24; normalize into a float32 normal.
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}

// f32ToF16 converts a float32 to binary16 bits, rounding to nearest with ties
// to even. Overflow gives ±Inf, underflow gives (signed) subnormals or zero,
// NaN stays NaN (quiet, with the top payload bits kept).
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7c00 | 0x200 | uint16(mant>>13)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e >= 1 {
		r := uint32(e)<<10 | mant>>13
		rem := mant & 0x1fff
		if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
			r++ // may carry into the exponent, up to Inf: that is correct
		}
		return sign | uint16(r)
	}
	if e < -10 {
		return sign // below half the smallest subnormal
	}
	m := mant | 0x800000
	shift := uint32(14 - e)
	r := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && r&1 == 1) {
		r++ // may become the smallest normal, whose encoding is r == 0x400
	}
	return sign | uint16(r)
}

// bf16ToF32 converts bfloat16 bits to float32; bfloat16 is the top half of a
// float32, so this is exact.
func bf16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 converts a float32 to bfloat16 bits, rounding to nearest with ties
// to even; NaN stays a quiet NaN.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// f8e4m3ToF32 decodes an F8_E4M3 (e4m3fn) byte exactly: bias 7, subnormals,
// no infinities, S.1111.111 is NaN.
func f8e4m3ToF32(b byte) float32 {
	neg := b&0x80 != 0
	exp := int(b>>3) & 0xf
	mant := int(b & 7)
	var v float32
	switch {
	case exp == 0xf && mant == 7:
		v = float32(math.NaN())
	case exp == 0:
		v = float32(math.Ldexp(float64(mant), -9))
	default:
		v = float32(math.Ldexp(float64(8+mant), exp-10))
	}
	if neg {
		v = -v
	}
	return v
}

// f8e5m2ToF32 decodes an F8_E5M2 byte exactly; it is the top byte of an F16.
func f8e5m2ToF32(b byte) float32 {
	return f16ToF32(uint16(b) << 8)
}
