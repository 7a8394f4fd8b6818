package model

import (
	"fmt"
	"math"

	"github.com/smallinit/smallinit/kernel"
)

// Decoder runs one sequence incrementally with a key/value cache, for generation: appending a token costs
// one position (its projections and its attention over the cached keys), not the whole prefix. It computes
// what Forward computes for the same prefix (the MoE capacity limit, a batch-level training device, is not
// applied). It uses the model's weights and its own buffers; do not run Forward concurrently with it.
type Decoder struct {
	m      *Model
	k, v   [][]float32 // per block [SeqLen, KV·d_h]: rotated keys and values of the positions so far
	pos    int
	x, h   []float32 // residual stream [d]
	n      []float32 // norm output [d]
	qkvg   []float32 // fused projections [qkvg width]
	y, yg  []float32 // attention output before and after the gate [H·d_h]
	scores []float32 // [SeqLen]
	gu     []float32 // FFN pre-activations [2·max width]
	act    []float32 // FFN activations [max width]
	ffnOut []float32 // one expert's output [d]
	probs  []float32 // router probabilities [E]
	sel    []int32
	w      []float32
	logits []float32 // [V]
	tmp    []float32 // sigmoid scratch [max(H·d_h, widths)]
}

// NewDecoder allocates a decoder for m (context up to SeqLen positions).
func (m *Model) NewDecoder() *Decoder {
	c := m.Config
	a, kv, T, f := c.AttnDim(), c.KVDim(), c.SeqLen, max(c.FFN, c.ExpertFFN, c.SharedFFN)
	d := &Decoder{m: m, x: make([]float32, c.Dim), h: make([]float32, c.Dim), n: make([]float32, c.Dim),
		qkvg: make([]float32, m.qkvgWidth()), y: make([]float32, a), yg: make([]float32, a),
		scores: make([]float32, T), gu: make([]float32, 2*f), act: make([]float32, f), ffnOut: make([]float32, c.Dim),
		probs: make([]float32, max(c.Experts, 1)), sel: make([]int32, max(c.TopK, 1)), w: make([]float32, max(c.TopK, 1)),
		logits: make([]float32, c.Vocab), tmp: make([]float32, max(a, f))}
	for l := 0; l < c.Layers; l++ {
		d.k = append(d.k, make([]float32, T*kv))
		d.v = append(d.v, make([]float32, T*kv))
	}
	return d
}

// Reset empties the cache.
func (d *Decoder) Reset() { d.pos = 0 }

// Len is the number of cached positions.
func (d *Decoder) Len() int { return d.pos }

// Max is the most positions the cache holds (the context length).
func (d *Decoder) Max() int { return d.m.Config.SeqLen }

// Append feeds tokens at the next positions and returns the logits [V] after the last one (valid until the
// next call).
func (d *Decoder) Append(tokens []int32) ([]float32, error) {
	c := d.m.Config
	if len(tokens) == 0 {
		return nil, fmt.Errorf("decode: no tokens")
	}
	if d.pos+len(tokens) > c.SeqLen {
		return nil, fmt.Errorf("decode: %d cached + %d new positions exceed the context length %d", d.pos, len(tokens), c.SeqLen)
	}
	for _, t := range tokens {
		if uint32(t) >= uint32(c.Vocab) {
			return nil, fmt.Errorf("decode: token %d outside the vocabulary [0, %d)", t, c.Vocab)
		}
	}
	for i, t := range tokens {
		d.step(t, i == len(tokens)-1) // the head runs only for the last position: a prompt costs its blocks only
	}
	return d.logits, nil
}

// norm applies the model's norm to one row.
func (d *Decoder) norm(out, x, g, b []float32) {
	eps := float32(d.m.Config.NormEps)
	if d.m.Config.Norm == NormLayer {
		layerNormRow(out, x, g, b, eps)
	} else {
		rmsNormRow(out, x, g, eps)
	}
}

// step runs one token through every block at position d.pos, and through the final norm and head when
// logits are wanted. Only the KV key/value heads are cached; query head h attends with key/value head
// h / (H/KV), as in Forward.
func (d *Decoder) step(tok int32, logits bool) {
	m, c := d.m, d.m.Config
	D, a, kv, dh, H, KV, t := c.Dim, c.AttnDim(), c.KVDim(), c.HeadSize(), c.Heads, c.KVHeadCount(), d.pos
	wq, off := m.qkvgWidth(), c.qkvDim()
	scale := float32(1 / math.Sqrt(float64(dh)))
	copy(d.x, m.Params.Embed[int(tok)*D:int(tok+1)*D])
	for l := 0; l < c.Layers; l++ {
		W := &m.Params.Layers[l]
		d.norm(d.n, d.x, W.Norm1, W.Norm1B)
		m.pool.GemmOn(0, false, true, 1, wq, D, d.n, D, W.QKVG, D, d.qkvg, wq, false)
		if W.QKVB != nil {
			kernel.Add(d.qkvg[:off], W.QKVB)
		}
		for h := 0; h < H+KV; h++ {
			head := d.qkvg[h*dh : (h+1)*dh]
			if c.QKNorm {
				g := W.QNorm
				if h >= H {
					g = W.KNorm
				}
				copy(d.tmp, head)
				rmsNormRow(head, d.tmp[:dh], g, float32(c.NormEps))
			}
			m.rope.rotate(head, t)
		}
		if g := d.qkvg[off:]; len(g) > 0 {
			sigmoid(g, g, d.tmp)
		}
		copy(d.k[l][t*kv:(t+1)*kv], d.qkvg[a:a+kv])
		copy(d.v[l][t*kv:(t+1)*kv], d.qkvg[a+kv:off])
		for h := 0; h < H; h++ {
			g := h / (H / KV) // the key/value head query head h reads
			q, s := d.qkvg[h*dh:(h+1)*dh], d.scores[:t+1]
			for j := range s {
				s[j] = kernel.Dot(q, d.k[l][j*kv+g*dh:j*kv+(g+1)*dh])
			}
			softmaxCausal(s, t, scale)
			y := d.y[h*dh : (h+1)*dh]
			clear(y)
			for j, p := range s {
				kernel.Axpy(p, d.v[l][j*kv+g*dh:j*kv+(g+1)*dh], y)
			}
		}
		copy(d.yg, d.y)
		switch c.AttnGate {
		case GateElementwise:
			for j := range d.yg {
				d.yg[j] *= d.qkvg[off+j]
			}
		case GateHeadwise:
			for j := range d.yg {
				d.yg[j] *= d.qkvg[off+j/dh]
			}
		}
		copy(d.h, d.x)
		m.pool.GemmOn(0, false, true, 1, D, a, d.yg, a, W.O, a, d.h, D, true)
		d.norm(d.n, d.h, W.Norm2, W.Norm2B)
		copy(d.x, d.h)
		if !c.IsMoE(l) {
			d.ffn(W.ffn(c.FFN), d.x, true)
			continue
		}
		m.pool.GemmOn(0, false, true, 1, c.Experts, D, d.n, D, W.Router, D, d.probs, c.Experts, false)
		softmaxInPlace(d.probs)
		topK(d.probs, W.RouterBias, d.sel, d.w, c.NormTopK)
		for j, e := range d.sel {
			d.ffn(W.Experts[e], d.ffnOut, false)
			kernel.Axpy(d.w[j], d.ffnOut, d.x)
		}
		if c.SharedFFN > 0 {
			d.ffn(W.Shared, d.ffnOut, false)
			g := float32(1 / (1 + math.Exp(-float64(kernel.Dot(d.n, W.SharedGate)))))
			kernel.Axpy(g, d.ffnOut, d.x)
		}
	}
	d.pos++
	if logits {
		d.norm(d.n, d.x, m.Params.NormF, m.Params.NormFB)
		m.pool.GemmOn(0, false, true, 1, c.Vocab, D, d.n, D, m.Params.Head, D, d.logits, c.Vocab, false)
	}
}

// ffn writes (or adds, when accumulate) the SwiGLU w of d.n into out.
func (d *Decoder) ffn(w FFNWeights, out []float32, accumulate bool) {
	D, f := d.m.Config.Dim, w.Width
	d.m.pool.GemmOn(0, false, true, 1, 2*f, D, d.n, D, w.GateUp, D, d.gu, 2*f, false)
	sig := d.act[:f]
	sigmoid(sig, d.gu[:f], d.tmp)
	for j := range sig {
		sig[j] *= d.gu[j] * d.gu[f+j]
	}
	d.m.pool.GemmOn(0, false, true, 1, D, f, sig, f, w.Down, f, out, D, accumulate)
}
