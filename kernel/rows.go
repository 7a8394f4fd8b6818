package kernel

// Fused row kernels of the model. Each replaces several passes of the vector kernels above (and a Go loop the
// compiler does not vectorise) by one SIMD pass over the row; the pure-Go twins below define the results bit for
// bit on every path (fused multiply-adds where the SIMD kernels fuse, sums in their 16-lane order; vec.go).

// ExpShiftSum sets dst[i] = exp((src[i] − shift)·scale) and returns Σ dst[i]: the numerator and denominator of
// a softmax with max-subtraction, softmax(scale·src)[i] = dst[i]/sum for shift = max(src). dst and src may be
// the same slice. It panics if len(dst) != len(src).
func ExpShiftSum(dst, src []float32, shift, scale float32) float32 {
	if len(dst) != len(src) {
		panic("kernel.ExpShiftSum: length mismatch")
	}
	return active.expShiftSum(dst, src, shift, scale)
}

// SwiGLU computes the SwiGLU activation of one row: sig[i] = σ(g[i]) = 1/(1 + e^(−g[i])) (kept for the backward
// pass) and act[i] = silu(g[i])·u[i] = g[i]·sig[i]·u[i]. It panics unless all four lengths are equal.
func SwiGLU(act, sig, g, u []float32) {
	if len(act) != len(g) || len(sig) != len(g) || len(u) != len(g) {
		panic("kernel.SwiGLU: length mismatch")
	}
	active.swiglu(act, sig, g, u)
}

// SwiGLUBackward turns the gradient dact of a SwiGLU row into the gradients of its gate and up
// pre-activations: du = dact·silu(g) = dact·g·s and dg = dact·u·σ'-term = dact·u·(s + g·s·(1 − s)), where s = σ(g)
// as saved by SwiGLU (d silu(a)/da = σ(a)·(1 + a·(1 − σ(a)))). It panics unless all six lengths are equal.
func SwiGLUBackward(dg, du, dact, g, u, sig []float32) {
	n := len(g)
	if len(dg) != n || len(du) != n || len(dact) != n || len(u) != n || len(sig) != n {
		panic("kernel.SwiGLUBackward: length mismatch")
	}
	active.swigluBack(dg, du, dact, g, u, sig)
}

// RMSNormBackward adds the gradients of one RMSNorm row y = g ⊙ x̂, x̂ = x·rstd, to dx and dg:
//
//	dg += dy ⊙ x̂,   dx += rstd·(g⊙dy − x̂·mean(g⊙dy⊙x̂))
//
// (the mean is over the row). It panics unless all five lengths are equal.
func RMSNormBackward(dx, dy, x, g, dg []float32, rstd float32) {
	n := len(x)
	if len(dx) != n || len(dy) != n || len(g) != n || len(dg) != n {
		panic("kernel.RMSNormBackward: length mismatch")
	}
	if n == 0 {
		return
	}
	active.rmsNormBack(dx, dy, x, g, dg, rstd, 1/float32(n))
}

// expShiftSumGeneric defines ExpShiftSum (expShiftSumAVX512's order): each exponential is exp32 of
// (src[i] − shift)·scale, and the sum runs in 16 lanes (lane l adds elements l, l+16, … in turn; a masked
// tail leaves the other lanes as they are) before hsum16.
func expShiftSumGeneric(dst, src []float32, shift, scale float32) float32 {
	dst = dst[:len(src)]
	var acc [lanes]float32
	for i, v := range src {
		e := exp32((v - shift) * scale)
		dst[i] = e
		acc[i%lanes] += e
	}
	return hsum16(&acc)
}

// swigluGeneric defines SwiGLU: σ = 1/(1 + exp32(0 − g)) (0 − g, not −g: a NaN keeps its sign, as in the
// SIMD kernels) and act = (g·σ)·u.
func swigluGeneric(act, sig, g, u []float32) {
	act, sig, u = act[:len(g)], sig[:len(g)], u[:len(g)]
	for i, a := range g {
		s := 1 / (1 + exp32(0-a))
		sig[i] = s
		act[i] = a * s * u[i]
	}
}

// swigluBackGeneric defines SwiGLUBackward: gs = g·s, du = dact·gs and dg = (dact·u)·(s + gs·(1 − s)), the
// last sum one fused multiply-add.
func swigluBackGeneric(dg, du, dact, g, u, sig []float32) {
	n := len(g)
	dg, du, dact, u, sig = dg[:n], du[:n], dact[:n], u[:n], sig[:n]
	for i, s := range sig {
		gs := g[i] * s
		du[i] = dact[i] * gs
		dg[i] = dact[i] * u[i] * fma32(gs, 1-s, s)
	}
}

// rmsNormBackGeneric defines RMSNormBackward (rmsNormBackAVX512's order): with x̂ = x·rstd, the first pass
// adds dy·x̂ to dg and accumulates (g·dy)·x̂ in 16 lanes, both fused, the lanes past the row's end of its
// masked tail computing the same steps on zeros as the masked loads do; m = hsum16 · invN; the second pass
// sets dx += rstd·(g·dy − x̂·m), both steps fused.
func rmsNormBackGeneric(dx, dy, x, g, dg []float32, rstd, invN float32) {
	n := len(x)
	dx, dy, g, dg = dx[:n], dy[:n], g[:n], dg[:n]
	var acc [lanes]float32
	for i, v := range x {
		xh := v * rstd
		acc[i%lanes] = fma32(g[i]*dy[i], xh, acc[i%lanes])
		dg[i] = fma32(dy[i], xh, dg[i])
	}
	for i := n; i%lanes != 0; i++ {
		var zero float32
		acc[i%lanes] = fma32(zero*zero, zero*rstd, acc[i%lanes])
	}
	m := hsum16(&acc) * invN
	for i, v := range x {
		xh := v * rstd
		dx[i] = fma32(rstd, fma32(-xh, m, g[i]*dy[i]), dx[i])
	}
}

// swigluWith composes SwiGLU from a vectorised exponential and a plain loop, for implementations (AVX2) that
// have a SIMD exp but no fused SwiGLU kernel.
func swigluWith(exp func(dst, src []float32)) func(act, sig, g, u []float32) {
	return func(act, sig, g, u []float32) {
		act, sig, u = act[:len(g)], sig[:len(g)], u[:len(g)]
		for i, a := range g {
			sig[i] = 0 - a // not −a: a NaN keeps its sign, as in swigluAVX512's 0 − g
		}
		exp(sig, sig)
		for i, e := range sig {
			s := 1 / (1 + e)
			sig[i] = s
			act[i] = g[i] * s * u[i]
		}
	}
}
