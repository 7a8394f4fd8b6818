package kernel

import "math"

// AdamWCoeffs are the coefficients of one AdamW element update, computed once per step (and parameter
// segment) by the optimizer: the gradient scale (clipping), β₁, 1 − β₁, β₂, 1 − β₂, the decoupled weight
// decay factor 1 − lr·λ (1 without decay), the step size lr / bias_correction1, √bias_correction2 and ε.
type AdamWCoeffs struct {
	Scale, Beta1, OneMinusBeta1, Beta2, OneMinusBeta2, Decay, StepSize, SqrtBC2, Eps float32
}

// AdamW applies the AdamW update to every element i < len(p), with PyTorch's operation order:
//
//	gᵢ' = gᵢ·scale,  mᵢ = β₁·mᵢ + (1−β₁)·gᵢ',  vᵢ = β₂·vᵢ + (1−β₂)·gᵢ'·gᵢ',
//	pᵢ = pᵢ·decay − step·mᵢ / (√vᵢ / √bc₂ + ε)
//
// every product, sum and quotient rounded to float32 on its own (no fused multiply-add) and the square root
// correctly rounded, so that the AVX-512 kernel and the pure-Go one (adamwGeneric) give the same bits. It
// panics unless g, m and v are as long as p.
func AdamW(p, g, m, v []float32, c AdamWCoeffs) {
	if len(g) != len(p) || len(m) != len(p) || len(v) != len(p) {
		panic("kernel.AdamW: length mismatch")
	}
	k := [9]float32{c.Scale, c.Beta1, c.OneMinusBeta1, c.Beta2, c.OneMinusBeta2, c.Decay, c.StepSize, c.SqrtBC2, c.Eps}
	if f := active.adamw; f != nil {
		f(p, g, m, v, k)
		return
	}
	adamwGeneric(p, g, m, v, k)
}

// adamwGeneric is AdamW in pure Go, the definition the assembly reproduces; k holds AdamWCoeffs in field order.
func adamwGeneric(p, g, m, v []float32, k [9]float32) {
	scale, b1, omb1, b2, omb2, decay, step, bc2, eps := k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8]
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		// The conversions round each product on its own: Go may otherwise fuse x*y + z on some architectures.
		gi := g[i] * scale
		mi := float32(b1*m[i]) + float32(omb1*gi)
		vi := float32(b2*v[i]) + float32(omb2*gi*gi)
		m[i], v[i] = mi, vi
		p[i] = float32(p[i]*decay) - step*mi/(float32(math.Sqrt(float64(vi)))/bc2+eps)
	}
}
