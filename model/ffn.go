package model

import "github.com/smallinit/smallinit/kernel"

// sigmoid writes σ(x) = 1/(1 + e^(−x)) into dst, using tmp (len ≥ len(x)) for the vectorised exponential.
func sigmoid(dst, x, tmp []float32) {
	tmp = tmp[:len(x)]
	for i, v := range x {
		tmp[i] = -v
	}
	kernel.Exp(tmp, tmp)
	for i, e := range tmp {
		dst[i] = 1 / (1 + e)
	}
}

// swigluForward computes act = silu(a) ⊙ u for rows [lo, hi), where a and u are the FFN gate and up
// pre-activations (SPEC §1: FFN = W_down · (silu(W_gate·x) ⊙ (W_up·x)), silu(a) = a·σ(a)).
func (m *Model) swigluForward(l, w, lo, hi int) {
	f := m.Config.FFN
	A := &m.acts.layers[l]
	sig := m.acts.rowTmp[w][:f]
	for n := lo; n < hi; n++ {
		a, u := A.gu[n*2*f:n*2*f+f], A.gu[n*2*f+f:(n+1)*2*f]
		act := A.act[n*f : (n+1)*f]
		sigmoid(sig, a, sig)
		for j := range act {
			act[j] = a[j] * sig[j] * u[j]
		}
	}
}

// swigluBackward turns dact into the gradients of the gate and up pre-activations:
// du = dact · silu(a), da = dact · u · σ(a)·(1 + a·(1 − σ(a))).
func (m *Model) swigluBackward(l, w, lo, hi int) {
	f := m.Config.FFN
	A := &m.acts.layers[l]
	sig := m.acts.rowTmp[w][:f]
	for n := lo; n < hi; n++ {
		a, u := A.gu[n*2*f:n*2*f+f], A.gu[n*2*f+f:(n+1)*2*f]
		da, du := m.acts.dgu[n*2*f:n*2*f+f], m.acts.dgu[n*2*f+f:(n+1)*2*f]
		dact := m.acts.dact[n*f : (n+1)*f]
		sigmoid(sig, a, sig)
		for j, s := range sig {
			du[j] = dact[j] * a[j] * s
			da[j] = dact[j] * u[j] * s * (1 + a[j]*(1-s))
		}
	}
}
