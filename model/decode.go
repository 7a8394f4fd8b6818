package model

import "fmt"

// Decoder runs one sequence incrementally with a key/value cache, for generation: appending a token costs
// one position (its projections and its attention over the cached keys), not the whole prefix. Each block runs
// the code Forward runs (blockForward over one row, with buffers from the same size table); only the attention
// reads the cache instead of the earlier rows (cachedAttentionForward), and the MoE capacity limit, a
// batch-level training device, is not applied. It uses the model's weights, pool and scratch; do not run
// Forward concurrently with it.
type Decoder struct {
	m      *Model
	layers []layerActs // per block: one row's activations
	k, v   [][]float32 // per block [SeqLen, KV·d_h]: rotated keys and values of the positions so far
	pos    int
	x      []float32 // residual stream [d]
	nf     []float32 // final norm output [d]
	sf     normStats
	logits []float32 // [V]
}

// NewDecoder allocates a decoder for m (context up to SeqLen positions).
func (m *Model) NewDecoder() *Decoder {
	c := m.Config
	s, T, kv := &sizer{}, float64(c.SeqLen), float64(c.KVDim())
	d := &Decoder{m: m, x: alloc[float32](s, float64(c.Dim)), nf: alloc[float32](s, float64(c.Dim)), sf: s.stats(1),
		logits: alloc[float32](s, float64(c.Vocab))}
	for l := 0; l < c.Layers; l++ {
		d.layers = append(d.layers, newLayerActs(s, c, c.IsMoE(l), 1, attnProbs(c, 1, 1, T)))
		d.k = append(d.k, alloc[float32](s, T*kv))
		d.v = append(d.v, alloc[float32](s, T*kv))
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

// step runs one token through every block at position d.pos, and through the final norm and head when
// logits are wanted.
func (d *Decoder) step(tok int32, logits bool) {
	m, D := d.m, d.m.Config.Dim
	copy(d.x, m.Params.Embed[int(tok)*D:int(tok+1)*D])
	for l := range d.layers {
		m.blockForward(l, blockRun{acts: &d.layers[l], rows: 1, t: 1, pos0: d.pos, k: d.k[l], v: d.v[l]}, d.x, d.x)
	}
	d.pos++
	if logits {
		m.headForward(1, d.x, d.nf, d.sf, d.logits)
	}
}
