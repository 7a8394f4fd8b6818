package model

import (
	"math"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// ropeTable holds cos and sin of the rotary angles t·θ_i for positions t < T and frequencies
// θ_i = base^(−2i/d_h), i < d_h/2, in the Hugging Face Llama "rotate-half" convention: channel i pairs with
// channel i + d_h/2 (not with its neighbour as in the original RoFormer).
type ropeTable struct {
	half     int
	cos, sin []float32 // [T, d_h/2]
}

// ropeInvFreq returns the rotary frequencies θ_i, i < d_h/2, computed as Hugging Face's
// modeling_rope_utils does, in float32 (bit for bit, but for the rare power that torch's float32 pow rounds
// differently): θ_i = 1/base^(2i/d_h), then
//   - linear: θ_i / s (positions interpolated by the factor s);
//   - llama3 (Llama 3.1): with wavelength λ_i = 2π/θ_i and the original context C, frequencies whose
//     wavelength is below C/high_freq_factor are kept, those above C/low_freq_factor are divided by s, and
//     those between are blended, θ_i·((1−a)/s + a) with a = (C/λ_i − low)/(high − low).
func ropeInvFreq(c arch.Config) []float32 {
	dh := c.HeadSize()
	inv := make([]float32, dh/2)
	for i := range inv {
		// As torch evaluates 1.0 / (base ** (arange(0, d_h, 2).float() / d_h)): a float32 exponent, a float32
		// power, then a float32 reciprocal. Rounding 1/base^e once instead differs from PyTorch in the last bit
		// for about a quarter of the frequencies at d_h = 128.
		pow := float32(math.Pow(c.RopeTheta, float64(float32(2*i)/float32(dh))))
		inv[i] = 1 / pow
	}
	s := float32(c.RopeFactor)
	switch c.RopeScaling {
	case arch.RopeLinear:
		for i := range inv {
			inv[i] /= s
		}
	case arch.RopeLlama3:
		old, low := float32(c.RopeOriginalSeqLen), float32(c.RopeLowFreqFactor)
		lowWave, highWave := float32(float64(c.RopeOriginalSeqLen)/c.RopeLowFreqFactor), float32(float64(c.RopeOriginalSeqLen)/c.RopeHighFreqFactor)
		for i, f := range inv {
			wave := float32(2*math.Pi) / f
			switch {
			case wave > lowWave:
				inv[i] = f / s
			case wave >= highWave: // the medium band: blend the scaled and unscaled frequency
				// Explicit float32 conversions round each product as PyTorch does (no fused multiply-add).
				a := (old/wave - low) / float32(c.RopeHighFreqFactor-c.RopeLowFreqFactor)
				inv[i] = float32(float32((1-a)*f)/s) + float32(a*f)
			}
		}
	}
	return inv
}

// newRopeTable builds the table the way Hugging Face does in float32 — θ_i from ropeInvFreq and the angle
// t·θ_i are float32 products — so that positions far from 0 agree with PyTorch to the last bit of the angle;
// only cos and sin themselves are evaluated in float64 and rounded. A counting sizer (MemoryBytes) only
// counts the table.
func newRopeTable(s *sizer, c arch.Config) ropeTable {
	T, half := c.SeqLen, c.HeadSize()/2
	r := ropeTable{half: half, cos: alloc[float32](s, float64(T)*float64(half)), sin: alloc[float32](s, float64(T)*float64(half))}
	if s.count {
		return r
	}
	inv := ropeInvFreq(c)
	for i, f := range inv {
		for t := 0; t < T; t++ {
			ang := float64(float32(t) * f)
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
	s, x1, x2 = s[:len(c)], x1[:len(c)], x2[:len(c)] // equal lengths: no bounds checks in the loop
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
	s, x1, x2 = s[:len(c)], x1[:len(c)], x2[:len(c)] // equal lengths: no bounds checks in the loop
	for i := range c {
		a, b := x1[i], x2[i]
		x1[i] = a*c[i] + b*s[i]
		x2[i] = b*c[i] - a*s[i]
	}
}

// ropeGateForward adds the q/k/v biases (QKVBias), normalises each head of q and k (QKNorm), rotates them, and
// applies the sigmoid to the gate pre-activations, for rows [lo, hi). The order is Hugging Face's: the bias is part
// of the projection (Qwen2), QK-norm applies to the projection's output (Qwen3), RoPE to the normalised heads. K
// has KV heads (grouped-query attention), each rotated once however many query heads read it. The rows are
// those of the block pass m.blk, at its positions.
func (m *Model) ropeGateForward(l, w, lo, hi int) {
	c := m.Config
	H, KV, dh, qk := c.Heads, c.KVHeadCount(), c.HeadSize(), c.AttnDim()+c.KVDim()
	wq := m.qkvgWidth()
	r, W := &m.blk, &m.Params.Layers[l]
	A := r.acts
	qkvg := A.qkvg
	eps := float32(c.NormEps)
	for n := lo; n < hi; n++ {
		row, t := qkvg[n*wq:(n+1)*wq], r.pos(n)
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
		if g := row[c.QKVDim():]; len(g) > 0 {
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
