package model

import (
	"math"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// Causal multi-head attention (docs/definitions.md §1), with grouped-query attention (Ainslie et al. 2023): the H query heads
// share KV ≤ H key/value heads, query head h reading key/value head h / (H/KV) (Hugging Face's repeat_kv). With
// Q, K, V of one query head ([T, d_h], rows strided through the fused qkvg buffer) and scale s = 1/sqrt(d_h):
//
//	S = s·Q·Kᵀ, P = softmax_row(S masked to j ≤ i), Y = P·V
//	dP = dY·Vᵀ, dS = P ⊙ (dP − rowsum(dP ⊙ P)), dQ = s·dS·K, dK = s·dSᵀ·Q, dV = Pᵀ·dY
//
// and a shared key/value head's dK and dV are the sums of these over the H/KV query heads that read it.
// Queries go in blocks of attnBlock rows; block [i0, i1) only touches keys [0, i1), which skips the masked upper
// triangle outside the diagonal blocks (about half the FLOPs of the full square at T = 256).

// headViews returns the (rotated) q of query head h of sequence b (of T rows) inside a qkvg-shaped buffer, the
// k and v of the key/value head it reads, each a strided matrix with row stride qkvgWidth, and the head's slice
// of a [N, H·d_h] buffer. A qkvg row is [q: H·d_h | k: KV·d_h | v: KV·d_h | gate].
func (m *Model) headViews(qkvg, ya []float32, T, b, h int) (q, k, v, y []float32) {
	c := m.Config
	dh, a, kv := c.HeadSize(), c.AttnDim(), c.KVDim()
	g := h / (c.Heads / c.KVHeadCount())
	base := b * T * m.qkvgWidth()
	return qkvg[base+h*dh:], qkvg[base+a+g*dh:], qkvg[base+a+kv+g*dh:], ya[b*T*a+h*dh:]
}

// attentionForward computes P and Y for (sequence, query head) pairs [lo, hi) of the block pass m.blk, whose
// keys are the rows of the same sequence.
func (m *Model) attentionForward(_, w, lo, hi int) {
	c := m.Config
	T, H, dh, a := m.blk.t, c.Heads, c.HeadSize(), c.AttnDim()
	wq := m.qkvgWidth()
	A := m.blk.acts
	scale := float32(1 / math.Sqrt(float64(dh)))
	for bh := lo; bh < hi; bh++ {
		q, k, v, y := m.headViews(A.qkvg, A.y, T, bh/H, bh%H)
		att := A.att[bh*T*T : (bh+1)*T*T]
		for i0 := 0; i0 < T; i0 += m.attnBlock {
			i1 := min(i0+m.attnBlock, T)
			m.gemmOn(w, false, true, i1-i0, i1, dh, q[i0*wq:], wq, k, wq, att[i0*T:], T, false)
			for i := i0; i < i1; i++ {
				softmaxCausal(att[i*T:i*T+i1], i, scale)
			}
			m.gemmOn(w, false, false, i1-i0, dh, i1, att[i0*T:], T, v, wq, y[i0*a:], a, false)
		}
	}
}

// cachedAttnTask is the least work (multiply-adds of one head's scores) worth a parallel task in
// cachedAttentionForward; below it the heads run on the calling goroutine, as a pool hand-off costs more.
const cachedAttnTask = 1 << 16

// cachedAttentionForward is the attention of the decoder's block pass m.blk: it stores the rows' rotated keys
// and values in the cache at their positions, then each query head of each row attends to the cached positions
// up to its own, query head h reading key/value head h / (H/KV) as in attentionForward. Its probabilities go to
// the pass's att buffer, [rows, H, SeqLen].
func (m *Model) cachedAttentionForward(l int) {
	c := m.Config
	r := &m.blk
	a, kv, wq := c.AttnDim(), c.KVDim(), m.qkvgWidth()
	for n := 0; n < r.rows; n++ {
		row, t := r.acts.qkvg[n*wq:(n+1)*wq], r.pos(n)
		copy(r.k[t*kv:(t+1)*kv], row[a:a+kv])
		copy(r.v[t*kv:(t+1)*kv], row[a+kv:a+2*kv])
	}
	m.parallel((*Model).cachedAttentionRows, l, r.rows*c.Heads, max(1, cachedAttnTask/(c.HeadSize()*(r.pos0+r.rows))))
}

// cachedAttentionRows runs (row, query head) pairs [lo, hi) of cachedAttentionForward.
func (m *Model) cachedAttentionRows(_, _, lo, hi int) {
	c := m.Config
	r := &m.blk
	H, KV, dh, a, kv, T := c.Heads, c.KVHeadCount(), c.HeadSize(), c.AttnDim(), c.KVDim(), c.SeqLen
	wq := m.qkvgWidth()
	scale := float32(1 / math.Sqrt(float64(dh)))
	for nh := lo; nh < hi; nh++ {
		n, h := nh/H, nh%H
		t, g := r.pos(n), h/(H/KV) // the row's position and the key/value head query head h reads
		q := r.acts.qkvg[n*wq+h*dh : n*wq+(h+1)*dh]
		s := r.acts.att[nh*T : nh*T+t+1]
		for j := range s {
			s[j] = kernel.Dot(q, r.k[j*kv+g*dh:j*kv+(g+1)*dh])
		}
		softmaxCausal(s, t, scale)
		y := r.acts.y[n*a+h*dh : n*a+(h+1)*dh]
		clear(y)
		for j, p := range s {
			kernel.Axpy(p, r.v[j*kv+g*dh:j*kv+(g+1)*dh], y)
		}
	}
}

// softmaxCausal turns scores row[0..i] into probabilities softmax(scale·row[0..i]) and zeroes row[i+1:].
func softmaxCausal(row []float32, i int, scale float32) {
	s := row[:i+1]
	sum := kernel.ExpShiftSum(s, s, kernel.MaxF(s), scale)
	kernel.Scale(1/sum, s)
	clear(row[i+1:])
}

// attentionBackward computes dQ, dK, dV (into the fused dqkvg buffer) from dY for (sequence, key/value head)
// groups [lo, hi). A task owns one group's dK and dV and runs the H/KV query heads that share them in order,
// so no two workers write the same rows and the sums do not depend on the worker count. Query blocks run last
// to first: the group's first head's last block reaches every key, so it writes dK and dV rows [0, T), and
// everything after it accumulates into them.
func (m *Model) attentionBackward(l, w, lo, hi int) {
	c := m.Config
	T, H, KV, dh, a := m.t, c.Heads, c.KVHeadCount(), c.HeadSize(), c.AttnDim()
	rep := H / KV
	wq := m.qkvgWidth()
	A := &m.acts.layers[l]
	scale := float32(1 / math.Sqrt(float64(dh)))
	dS := m.acts.dp[w]
	last := (T - 1) / m.attnBlock * m.attnBlock
	for bg := lo; bg < hi; bg++ {
		b, g := bg/KV, bg%KV
		for h := g * rep; h < (g+1)*rep; h++ { // the query heads that read key/value head g
			q, k, v, _ := m.headViews(A.qkvg, A.y, T, b, h)
			dq, dk, dv, dy := m.headViews(m.acts.dqkvg, m.acts.dy, T, b, h)
			att := A.att[(b*H+h)*T*T : (b*H+h+1)*T*T]
			first := h%rep == 0
			for i0 := last; i0 >= 0; i0 -= m.attnBlock {
				i1 := min(i0+m.attnBlock, T)
				r, acc := i1-i0, i0 != last || !first
				p := att[i0*T:]
				m.gemmOn(w, true, false, i1, dh, r, p, T, dy[i0*a:], a, dv, wq, acc)
				m.gemmOn(w, false, true, r, i1, dh, dy[i0*a:], a, v, wq, dS, T, false)
				for i := 0; i < r; i++ {
					pr, ds := p[i*T:i*T+i1], dS[i*T:i*T+i1]
					dot := kernel.Dot(pr, ds)
					for j := range ds {
						ds[j] = scale * pr[j] * (ds[j] - dot)
					}
				}
				m.gemmOn(w, false, false, r, dh, i1, dS, T, k, wq, dq[i0*wq:], wq, false)
				m.gemmOn(w, true, false, i1, dh, r, dS, T, q[i0*wq:], wq, dk, wq, acc)
			}
		}
	}
}

// qkvBiasBackward adds the column sums of dQKV (dqkvg's q, k and v columns, already taken back through RoPE and
// QK-norm) over the rows into the q/k/v bias gradient, for columns [lo, hi): the bias is added to every row, so
// dB = Σ_n dQKV[n]. Splitting by column keeps workers apart and the summation order fixed.
func (m *Model) qkvBiasBackward(l, _, lo, hi int) {
	wq := m.qkvgWidth()
	dB := m.Grads.Layers[l].QKVB[lo:hi]
	for n := 0; n < m.n; n++ {
		kernel.Add(dB, m.acts.dqkvg[n*wq+lo:n*wq+hi])
	}
}

// gateForward applies the attention output gate (Qiu et al. 2025, G1): yg = y ⊙ G, G = σ(Norm(x)·W_gateᵀ)
// already computed in the gate columns of qkvg; headwise gates scale all d_h channels of a head. The rows are
// those of the block pass m.blk.
func (m *Model) gateForward(_, _, lo, hi int) {
	c := m.Config
	a, dh, off := c.AttnDim(), c.HeadSize(), c.QKVDim()
	wq := m.qkvgWidth()
	A := m.blk.acts
	for n := lo; n < hi; n++ {
		g := A.qkvg[n*wq+off : (n+1)*wq]
		y, yg := A.y[n*a:(n+1)*a], A.yg[n*a:(n+1)*a]
		if c.AttnGate == arch.GateElementwise {
			for j := range y {
				yg[j] = y[j] * g[j]
			}
			continue
		}
		for j := range y {
			yg[j] = y[j] * g[j/dh]
		}
	}
}

// gateBackward splits dyg into dy = dyg ⊙ G and the gate pre-activation gradient dG·σ'(·) = dG·G·(1 − G), with
// dG = dyg ⊙ y (summed over the head's channels for headwise gates), written to dqkvg's gate columns.
func (m *Model) gateBackward(l, _, lo, hi int) {
	c := m.Config
	a, dh, off := c.AttnDim(), c.HeadSize(), c.QKVDim()
	wq := m.qkvgWidth()
	A := &m.acts.layers[l]
	for n := lo; n < hi; n++ {
		g := A.qkvg[n*wq+off : (n+1)*wq]
		dg := m.acts.dqkvg[n*wq+off : (n+1)*wq]
		y, dyg, dy := A.y[n*a:(n+1)*a], m.acts.dyg[n*a:(n+1)*a], m.acts.dy[n*a:(n+1)*a]
		if c.AttnGate == arch.GateElementwise {
			for j := range y {
				dy[j] = dyg[j] * g[j]
				dg[j] = dyg[j] * y[j] * g[j] * (1 - g[j])
			}
			continue
		}
		for h := range g {
			var s float32
			for j := h * dh; j < (h+1)*dh; j++ {
				dy[j] = dyg[j] * g[h]
				s += dyg[j] * y[j]
			}
			dg[h] = s * g[h] * (1 - g[h])
		}
	}
}
