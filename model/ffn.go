package model

import "github.com/smallinit/smallinit/kernel"

// SwiGLU feed-forward (docs/definitions.md §1): FFN(x) = W_down · (silu(W_gate·x) ⊙ (W_up·x)), silu(a) = a·σ(a). The same
// code runs the dense FFN, every MoE expert (on its gathered rows) and the MoE shared expert.

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

// gluArgs are the operands of the SwiGLU rows being run.
type gluArgs struct {
	gu, act   []float32 // [rows, 2f] gate|up pre-activations, [rows, f] activations
	sig       []float32 // [rows, f] σ(gate pre-activation), kept by the forward for the backward
	dact, dgu []float32 // their gradients (backward)
	f         int
}

// FFNWeights are one SwiGLU's weights (or gradients): GateUp [2f, d] (gate_proj rows then up_proj rows, one
// matrix so that one matrix multiply computes both) and Down [d, f].
type FFNWeights struct {
	GateUp, Down []float32
	Width        int // f
}

// ffnForward computes out = FFN(x) (or out += FFN(x) when accumulate) for rows of x [rows, d], keeping the
// pre-activations in gu [rows, 2f], the activations in act [rows, f] and σ of the gate in sig [rows, f] for the
// backward pass.
func (m *Model) ffnForward(x []float32, rows int, w FFNWeights, gu, act, sig, out []float32, accumulate bool) {
	d, f := m.Config.Dim, w.Width
	m.gemm(false, true, rows, 2*f, d, x, d, w.GateUp, d, gu, 2*f, false)
	m.glu = gluArgs{gu: gu, act: act, sig: sig, f: f}
	m.parallel((*Model).swigluForwardRows, 0, rows, 32)
	m.gemm(false, true, rows, d, f, act, f, w.Down, f, out, d, accumulate)
}

// ffnBackward takes dOut [rows, d] back through an FFN whose forward saved gu, act and sig: it accumulates
// the weight gradients into g and writes (or, when accumulate, adds) the input gradient into dx. dact [rows, f]
// and dgu [rows, 2f] are scratch.
func (m *Model) ffnBackward(x, dOut []float32, rows int, w, g FFNWeights, gu, act, sig, dact, dgu, dx []float32, accumulate bool) {
	d, f := m.Config.Dim, w.Width
	m.gemm(false, false, rows, f, d, dOut, d, w.Down, f, dact, f, false)
	m.gemm(true, false, d, f, rows, dOut, d, act, f, g.Down, f, true)
	m.glu = gluArgs{gu: gu, sig: sig, dact: dact, dgu: dgu, f: f}
	m.parallel((*Model).swigluBackwardRows, 0, rows, 32)
	m.gemm(false, false, rows, d, 2*f, dgu, 2*f, w.GateUp, d, dx, d, accumulate)
	m.gemm(true, false, 2*f, d, rows, dgu, 2*f, x, d, g.GateUp, d, true)
}

// swigluForwardRows computes σ(a) and act = silu(a) ⊙ u = a·σ(a)·u for rows [lo, hi) (kernel.SwiGLU).
func (m *Model) swigluForwardRows(_, _, lo, hi int) {
	a := &m.glu
	f := a.f
	for n := lo; n < hi; n++ {
		kernel.SwiGLU(a.act[n*f:(n+1)*f], a.sig[n*f:(n+1)*f], a.gu[n*2*f:n*2*f+f], a.gu[n*2*f+f:(n+1)*2*f])
	}
}

// swigluBackwardRows turns dact into the gradients of the gate and up pre-activations for rows [lo, hi)
// (kernel.SwiGLUBackward): du = dact · silu(a), da = dact · u · σ(a)·(1 + a·(1 − σ(a))).
func (m *Model) swigluBackwardRows(_, _, lo, hi int) {
	a := &m.glu
	f := a.f
	for n := lo; n < hi; n++ {
		g, u := a.gu[n*2*f:n*2*f+f], a.gu[n*2*f+f:(n+1)*2*f]
		dg, du := a.dgu[n*2*f:n*2*f+f], a.dgu[n*2*f+f:(n+1)*2*f]
		kernel.SwiGLUBackward(dg, du, a.dact[n*f:(n+1)*f], g, u, a.sig[n*f:(n+1)*f])
	}
}
