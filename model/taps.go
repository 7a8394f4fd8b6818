package model

// Taps: read-only views of the activations the last Forward saved, for diagnostics (docs/definitions.md §4). They are the
// same buffers the backward pass uses, so diagnostics never need a second implementation of the model.

// Rows is the number of token rows (b·T) of the last Forward.
func (m *Model) Rows() int { return m.n }

// SeqLen is the sequence length T of the last Forward.
func (m *Model) SeqLen() int { return m.t }

// Residual returns the residual stream entering block l, [b·T, d]; l = L gives the final residual.
func (m *Model) Residual(l int) []float32 { return m.residual(l) }

// AttnResidual returns block l's residual after the attention sub-layer, h = x + Attn(Norm(x)), [b·T, d].
func (m *Model) AttnResidual(l int) []float32 { return m.acts.layers[l].h[:m.n*m.Config.Dim] }

// AttentionProbs returns block l's attention probabilities, [b, H, T, T] with T = SeqLen() (row i holds query i's weights over
// keys 0..i; the masked upper triangle is zero). There is one matrix per query head, also under grouped-query
// attention, where query heads sharing a key/value head still have their own probabilities.
func (m *Model) AttentionProbs(l int) []float32 {
	T := m.t
	return m.acts.layers[l].att[:m.n/T*m.Config.Heads*T*T]
}

// GateValues copies block l's attention gate values σ(Norm(x)·W_gateᵀ) into dst, [b·T, gate rows], and returns
// it (nil when the model has no gate).
func (m *Model) GateValues(l int, dst []float32) []float32 {
	g := m.Config.GateRows()
	if g == 0 {
		return nil
	}
	wq, off := m.qkvgWidth(), m.Config.QKVDim()
	dst = dst[:0]
	for n := 0; n < m.n; n++ {
		dst = append(dst, m.acts.layers[l].qkvg[n*wq+off:n*wq+off+g]...)
	}
	return dst
}

// RouterProbs returns MoE block l's router probabilities [b·T, E] (nil for a dense block).
func (m *Model) RouterProbs(l int) []float32 {
	if mo := m.acts.layers[l].moe; mo != nil {
		return mo.probs[:m.n*m.Config.Experts]
	}
	return nil
}

// ExpertLoad returns MoE block l's fraction of assignments routed to each expert (before capacity dropping)
// and the number of assignments dropped, for the last Forward (nil, 0 for a dense block).
func (m *Model) ExpertLoad(l int) ([]float64, int) {
	if mo := m.acts.layers[l].moe; mo != nil {
		return mo.load, mo.dropped
	}
	return nil, 0
}
