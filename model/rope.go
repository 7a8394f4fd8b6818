package model

import (
	"math"

	"github.com/smallinit/smallinit/kernel"
)

// ropeTable holds cos and sin of the rotary angles t·θ_i for positions t < T and frequencies
// θ_i = base^(−2i/d_h), i < d_h/2, in the Hugging Face Llama "rotate-half" convention: channel i pairs with
// channel i + d_h/2 (not with its neighbour as in the original RoFormer).
type ropeTable struct {
	half     int
	cos, sin []float32 // [T, d_h/2]
}

// newRopeTable builds the table the way Hugging Face does in float32 — inv_freq = 1/base^(2i/d_h) and the angle
// t·inv_freq are float32 products — so that positions far from 0 agree with PyTorch to the last bit of the angle;
// only cos and sin themselves are evaluated in float64 and rounded.
func newRopeTable(T, dh int, base float64) ropeTable {
	half := dh / 2
	r := ropeTable{half: half, cos: make([]float32, T*half), sin: make([]float32, T*half)}
	for i := 0; i < half; i++ {
		invFreq := float32(1 / math.Pow(base, float64(float32(2*i)/float32(dh))))
		for t := 0; t < T; t++ {
			ang := float64(float32(t) * invFreq)
			r.cos[t*half+i] = float32(math.Cos(ang))
			r.sin[t*half+i] = float32(math.Sin(ang))
		}
	}
	return r
}

// rotate applies the rotation of position t to one head vector x in place:
// x[i], x[i+h] = x[i]·cos − x[i+h]·sin, x[i+h]·cos + x[i]·sin.
func (r *ropeTable) rotate(x []float32, t int) {
	h := r.half
	c, s := r.cos[t*h:(t+1)*h], r.sin[t*h:(t+1)*h]
	x1, x2 := x[:h], x[h:2*h]
	for i := range c {
		a, b := x1[i], x2[i]
		x1[i] = a*c[i] - b*s[i]
		x2[i] = b*c[i] + a*s[i]
	}
}

// unrotate applies the transpose (inverse) rotation, which is the backward pass of rotate:
// dx[i], dx[i+h] = dy[i]·cos + dy[i+h]·sin, dy[i+h]·cos − dy[i]·sin.
func (r *ropeTable) unrotate(x []float32, t int) {
	h := r.half
	c, s := r.cos[t*h:(t+1)*h], r.sin[t*h:(t+1)*h]
	x1, x2 := x[:h], x[h:2*h]
	for i := range c {
		a, b := x1[i], x2[i]
		x1[i] = a*c[i] + b*s[i]
		x2[i] = b*c[i] - a*s[i]
	}
}

// ropeGateForward adds the q/k/v biases (QKVBias), normalises each head of q and k (QKNorm), rotates them, and
// applies the sigmoid to the gate pre-activations, for rows [lo, hi). The order is Hugging Face's: the bias is part
// of the projection (Qwen2), QK-norm applies to the projection's output (Qwen3), RoPE to the normalised heads. K
// has KV heads (grouped-query attention), each rotated once however many query heads read it.
func (m *Model) ropeGateForward(l, w, lo, hi int) {
	c := m.Config
	T, H, KV, dh, qk := m.t, c.Heads, c.KVHeadCount(), c.HeadSize(), c.AttnDim()+c.KVDim()
	wq := m.qkvgWidth()
	A, W := &m.acts.layers[l], &m.Params.Layers[l]
	qkvg := A.qkvg
	eps := float32(c.NormEps)
	for n := lo; n < hi; n++ {
		row, t := qkvg[n*wq:(n+1)*wq], n%T
		if W.QKVB != nil {
			kernel.Add(row[:len(W.QKVB)], W.QKVB)
		}
		for h := 0; h < H+KV; h++ { // H query heads then KV key heads
			head := row[h*dh : (h+1)*dh]
			if c.QKNorm {
				g := W.QNorm
				if h >= H {
					g = W.KNorm
				}
				copy(A.qkIn[n*qk+h*dh:], head)
				A.qkR[n*(H+KV)+h] = rmsNormRow(head, A.qkIn[n*qk+h*dh:n*qk+(h+1)*dh], g, eps)
			}
			m.rope.rotate(head, t)
		}
		if g := row[c.qkvDim():]; len(g) > 0 {
			sigmoid(g, g, m.acts.rowTmp[w])
		}
	}
}

// ropeQKNormBackward takes dq and dk (gradients with respect to the rotated q and k) back through the
// rotation and, with QKNorm, through the per-head norms, whose gain gradients are summed per fixed row block
// (as normBackward does) and added in block order.
func (m *Model) ropeQKNormBackward(l int) {
	c := m.Config
	if !c.QKNorm {
		m.parallel((*Model).ropeBackwardRows, l, len(m.acts.normAcc), 1)
		return
	}
	for _, acc := range m.acts.normAcc {
		clear(acc)
	}
	m.parallel((*Model).ropeBackwardRows, l, len(m.acts.normAcc), 1)
	dh, G := c.HeadSize(), &m.Grads.Layers[l]
	for _, acc := range m.acts.normAcc {
		kernel.Add(G.QNorm, acc[:dh])
		kernel.Add(G.KNorm, acc[dh:2*dh])
	}
}

// ropeBackwardRows handles row blocks [lo, hi) of ropeQKNormBackward.
func (m *Model) ropeBackwardRows(l, w, lo, hi int) {
	c := m.Config
	T, H, KV, dh, qk := m.t, c.Heads, c.KVHeadCount(), c.HeadSize(), c.AttnDim()+c.KVDim()
	wq := m.qkvgWidth()
	A, W := &m.acts.layers[l], &m.Params.Layers[l]
	nb := len(m.acts.normAcc)
	tmp := m.acts.rowTmp[w][:dh]
	for blk := lo; blk < hi; blk++ {
		acc := m.acts.normAcc[blk]
		for n := blk * m.n / nb; n < (blk+1)*m.n/nb; n++ {
			row, t := m.acts.dqkvg[n*wq:(n+1)*wq], n%T
			for h := 0; h < H+KV; h++ {
				head := row[h*dh : (h+1)*dh]
				m.rope.unrotate(head, t)
				if !c.QKNorm {
					continue
				}
				g, dg := W.QNorm, acc[:dh]
				if h >= H {
					g, dg = W.KNorm, acc[dh:2*dh]
				}
				copy(tmp, head)
				clear(head)
				normRowBackward(head, tmp, A.qkIn[n*qk+h*dh:n*qk+(h+1)*dh], g, dg, nil, 0, A.qkR[n*(H+KV)+h], false)
			}
		}
	}
}
