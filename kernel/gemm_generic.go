package kernel

import "unsafe"

// gemmKernGeneric4x4 is the pure-Go micro-kernel: a 4×4 register tile
// (16 scalar accumulators), the same contract as the assembly kernels.
func gemmKernGeneric4x4(k int, a, b, c *float32, ldc int, accum int) {
	as := unsafe.Slice(a, 4*k)
	bs := unsafe.Slice(b, 4*k)
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	for len(as) >= 4 && len(bs) >= 4 {
		b0, b1, b2, b3 := bs[0], bs[1], bs[2], bs[3]
		a0 := as[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := as[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := as[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := as[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
		as, bs = as[4:], bs[4:]
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	r0, r1, r2, r3 := cs[0:4:4], cs[ldc:ldc+4:ldc+4], cs[2*ldc:2*ldc+4:2*ldc+4], cs[3*ldc:3*ldc+4:3*ldc+4]
	if accum != 0 {
		c00, c01, c02, c03 = c00+r0[0], c01+r0[1], c02+r0[2], c03+r0[3]
		c10, c11, c12, c13 = c10+r1[0], c11+r1[1], c12+r1[2], c13+r1[3]
		c20, c21, c22, c23 = c20+r2[0], c21+r2[1], c22+r2[2], c23+r2[3]
		c30, c31, c32, c33 = c30+r3[0], c31+r3[1], c32+r3[2], c33+r3[3]
	}
	r0[0], r0[1], r0[2], r0[3] = c00, c01, c02, c03
	r1[0], r1[1], r1[2], r1[3] = c10, c11, c12, c13
	r2[0], r2[1], r2[2], r2[3] = c20, c21, c22, c23
	r3[0], r3[1], r3[2], r3[3] = c30, c31, c32, c33
}
