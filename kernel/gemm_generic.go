package kernel

import "unsafe"

// gemmKernGeneric4x4 is the pure-Go micro-kernel: a 4×4 register tile
// (16 scalar accumulators), the same contract as the assembly kernels and the
// same arithmetic: each step is a float32 fused multiply-add (fma32) per
// element, the tile's sum starts at zero and is added to C at the end, so that
// with the same KC it gives their bits. The loop runs fma32's fast path
// (fma32Step) and, in the rare tile where a step's float64 sum was unsure
// (a float32 midpoint or a tiny value), the tile is computed again with fma32.
func gemmKernGeneric4x4(k int, a, b, c *float32, ldc int, accum int) {
	as := unsafe.Slice(a, 4*k)
	bs := unsafe.Slice(b, 4*k)
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	var u uint64
	for len(as) >= 4 && len(bs) >= 4 {
		b0, b1, b2, b3 := bs[0], bs[1], bs[2], bs[3]
		a0 := as[0]
		c00, u = fma32Step(a0, b0, c00, u)
		c01, u = fma32Step(a0, b1, c01, u)
		c02, u = fma32Step(a0, b2, c02, u)
		c03, u = fma32Step(a0, b3, c03, u)
		a1 := as[1]
		c10, u = fma32Step(a1, b0, c10, u)
		c11, u = fma32Step(a1, b1, c11, u)
		c12, u = fma32Step(a1, b2, c12, u)
		c13, u = fma32Step(a1, b3, c13, u)
		a2 := as[2]
		c20, u = fma32Step(a2, b0, c20, u)
		c21, u = fma32Step(a2, b1, c21, u)
		c22, u = fma32Step(a2, b2, c22, u)
		c23, u = fma32Step(a2, b3, c23, u)
		a3 := as[3]
		c30, u = fma32Step(a3, b0, c30, u)
		c31, u = fma32Step(a3, b1, c31, u)
		c32, u = fma32Step(a3, b2, c32, u)
		c33, u = fma32Step(a3, b3, c33, u)
		as, bs = as[4:], bs[4:]
	}
	t := [16]float32{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
	if u != 0 {
		gemmTileFMA32(k, unsafe.Slice(a, 4*k), unsafe.Slice(b, 4*k), &t)
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	for i := 0; i < 4; i++ {
		row := cs[i*ldc : i*ldc+4 : i*ldc+4]
		for j, v := range t[4*i : 4*i+4] {
			if accum != 0 {
				v += row[j]
			}
			row[j] = v
		}
	}
}

// gemmTileFMA32 sets t to the 4×4 tile of the packed panels a and b (k steps each) with fma32 in every
// step: gemmKernGeneric4x4's slow path.
func gemmTileFMA32(k int, a, b []float32, t *[16]float32) {
	*t = [16]float32{}
	for s := 0; s < k; s++ {
		for i := 0; i < 4; i++ {
			for j := 0; j < 4; j++ {
				t[4*i+j] = fma32(a[4*s+i], b[4*s+j], t[4*i+j])
			}
		}
	}
}
