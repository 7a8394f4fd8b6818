package model

import (
	"unsafe"

	"github.com/smallinit/smallinit/arch"
)

// The size table: every buffer New allocates is made here (modelBuffers: parameters, gradients, the RoPE table
// and newActivations with its newLayerActs, newMoEActs and newMoEScratch), NewDecoder makes its one-row block
// buffers with the same newLayerActs, and MemoryBytes runs the same functions in counting mode, so the estimate
// cannot drift from the allocation. Sizes are float64 so that counting an absurd config gives a huge number instead of an integer
// overflow (New only allocates configs that passed Validate and CheckMemory).

// sizer makes buffers and adds up their bytes or, when counting, only adds them up.
type sizer struct {
	count bool    // count only: make nothing, return nil slices
	times float64 // counting: how many identical copies each buffer stands for (layers of one kind are counted once)
	bytes float64 // bytes of the buffers made or counted
	bufs  float64 // the number of buffers (the allocator rounds each up by less than a page)
}

// counter is a sizer in counting mode.
func counter() *sizer { return &sizer{count: true, times: 1} }

// alloc makes a buffer of n elements (or counts its bytes).
func alloc[T float32 | float64 | int32 | int](s *sizer, n float64) []T {
	var z T
	if s.count {
		s.bytes += s.times * n * float64(unsafe.Sizeof(z))
		s.bufs += s.times
		return nil
	}
	s.bytes += n * float64(unsafe.Sizeof(z))
	s.bufs++
	return make([]T, int(n))
}

// allocRows makes n buffers of size floats each.
func allocRows(s *sizer, n int, size float64) [][]float32 {
	if s.count {
		s.bytes += s.times * float64(n) * size * 4
		s.bufs += s.times * float64(n)
		return nil
	}
	r := make([][]float32, n)
	for i := range r {
		r[i] = alloc[float32](s, size)
	}
	return r
}

func (s *sizer) stats(rows float64) normStats {
	return normStats{mean: alloc[float32](s, rows), rstd: alloc[float32](s, rows)}
}

// attnProbs is the number of attention probabilities of seqs sequences of queries query positions over keys
// key positions, one matrix per query head: B·H·T² for a training batch.
func attnProbs(c arch.Config, seqs, queries, keys float64) float64 {
	return seqs * float64(c.Heads) * queries * keys
}

// newLayerActs makes one block's forward buffers for rows token rows, with att floats of attention
// probabilities (a training batch: attnProbs(B, T, T); the decoder: attnProbs(rows, 1, SeqLen)). moe selects
// the FFN kind of the block.
func newLayerActs(s *sizer, c arch.Config, moe bool, rows, att float64) layerActs {
	N, d, a, kv, f := rows, float64(c.Dim), float64(c.AttnDim()), float64(c.KVDim()), float64(c.FFN)
	var la layerActs
	la.n1, la.s1 = alloc[float32](s, N*d), s.stats(N)
	la.qkvg = alloc[float32](s, N*float64(c.QKVGWidth()))
	if c.QKNorm {
		la.qkIn, la.qkR = alloc[float32](s, N*(a+kv)), alloc[float32](s, N*float64(c.Heads+c.KVHeadCount()))
	}
	la.att = alloc[float32](s, att)
	la.y = alloc[float32](s, N*a)
	la.yg = la.y
	if c.AttnGate != arch.GateNone {
		la.yg = alloc[float32](s, N*a)
	}
	la.h = alloc[float32](s, N*d)
	la.n2, la.s2 = alloc[float32](s, N*d), s.stats(N)
	if moe {
		mo := newMoEActs(s, c, N)
		if !s.count {
			la.moe = &mo
		}
	} else {
		la.gu, la.act, la.sig = alloc[float32](s, N*2*f), alloc[float32](s, N*f), alloc[float32](s, N*f)
	}
	return la
}

// newMoEActs makes one MoE block's forward buffers for N token rows (R = N·k expert rows).
func newMoEActs(s *sizer, c arch.Config, N float64) moeActs {
	d, E, k, f, fs := float64(c.Dim), float64(c.Experts), float64(c.TopK), float64(c.ExpertFFN), float64(c.SharedFFN)
	R, shared := N*k, min(fs, 1)
	return moeActs{
		probs: alloc[float32](s, N*E), lse: alloc[float32](s, N), sel: alloc[int32](s, N*k), w: alloc[float32](s, N*k),
		slot: alloc[int32](s, N*k), start: alloc[int](s, E+1),
		xg: alloc[float32](s, R*d), hg: alloc[float32](s, R*2*f), actg: alloc[float32](s, R*f), yg: alloc[float32](s, R*d),
		sigg: alloc[float32](s, R*f), ssig: alloc[float32](s, N*fs),
		sgu: alloc[float32](s, N*2*fs), sact: alloc[float32](s, N*fs), sy: alloc[float32](s, N*d*shared),
		sg: alloc[float32](s, N*shared), load: alloc[float64](s, E), importance: alloc[float64](s, E),
	}
}

// newMoEScratch makes the MoE backward scratch for N token rows.
func newMoEScratch(s *sizer, c arch.Config, N float64) moeScratch {
	d, E, k, f, fs := float64(c.Dim), float64(c.Experts), float64(c.TopK), float64(c.ExpertFFN), float64(c.SharedFFN)
	R, shared := N*k, min(fs, 1)
	return moeScratch{
		dyg: alloc[float32](s, R*d), dactg: alloc[float32](s, R*f), dhg: alloc[float32](s, R*2*f), dxg: alloc[float32](s, R*d),
		dw: alloc[float32](s, N*k), dlogits: alloc[float32](s, N*E),
		dsy: alloc[float32](s, N*d*shared), dsact: alloc[float32](s, N*fs), dsgu: alloc[float32](s, N*2*fs),
		dsg: alloc[float32](s, N*shared), counts: alloc[int](s, E),
	}
}

// newActivations makes the activations of a batch of B sequences of length SeqLen and the backward scratch of
// workers workers. When counting, identical layers are counted once each kind, times their number.
func newActivations(s *sizer, c arch.Config, B, workers int) activations {
	T := float64(c.SeqLen)
	N, d, a, f, V := float64(B)*T, float64(c.Dim), float64(c.AttnDim()), float64(c.FFN), float64(c.Vocab)
	wq, L := float64(c.QKVGWidth()), float64(c.Layers)
	att := attnProbs(c, float64(B), T, T)
	var A activations
	A.x = alloc[float32](s, (L+1)*N*d)
	if s.count {
		nMoE := float64(c.NumMoE())
		s.times = L - nMoE
		newLayerActs(s, c, false, N, att)
		s.times = nMoE
		newLayerActs(s, c, true, N, att)
		s.times = 1
	} else {
		A.layers = make([]layerActs, c.Layers)
		for l := range A.layers {
			A.layers[l] = newLayerActs(s, c, c.IsMoE(l), N, att)
		}
	}
	A.nf, A.sf = alloc[float32](s, N*d), s.stats(N)
	A.logits = alloc[float32](s, N*V)
	A.lse, A.loss = alloc[float32](s, N), alloc[float32](s, N)
	A.inputs, A.target = alloc[int32](s, N), alloc[int32](s, N)
	A.dx, A.dn = alloc[float32](s, N*d), alloc[float32](s, N*d)
	A.dqkvg = alloc[float32](s, N*wq)
	A.dyg = alloc[float32](s, N*a)
	A.dy = A.dyg
	if c.AttnGate != arch.GateNone {
		A.dy = alloc[float32](s, N*a)
	}
	A.dgu, A.dact = alloc[float32](s, N*2*f), alloc[float32](s, N*f)
	// rowTmp: a logits row, an FFN row, a scores row, an attention row, a router row; dp: one query block of dS,
	// T·T so that tests may change attnBlock.
	W := max(workers, 1)
	A.rowTmp = allocRows(s, W, float64(max(c.Vocab, c.FFN, c.SeqLen, c.AttnDim(), c.ExpertFFN, c.SharedFFN, c.Experts)))
	A.dp = allocRows(s, W, T*T)
	A.normAcc = allocRows(s, normBlocks, 2*d)
	if c.NumMoE() > 0 {
		A.moe = newMoEScratch(s, c, N)
	}
	return A
}

// MemoryBytes estimates the bytes New allocates for a model of config c with activations for batch sequences:
// parameters and gradients, the RoPE table, the activations of every layer (the attention probabilities,
// batch·heads·T² per layer, dominate at long contexts) and the per-worker scratch of workers workers. It counts
// the buffers of the size table New allocates from (not the worker pool's own), in floating point, so absurd
// configs give a huge number rather than an overflow.
func MemoryBytes(c arch.Config, batch, workers int) float64 { return memory(c, batch, workers).bytes }

// memory counts the buffers New allocates.
func memory(c arch.Config, batch, workers int) *sizer {
	s := counter()
	modelBuffers(s, c, batch, workers)
	return s
}

// modelBuffers makes (or counts) every buffer of a model: the flat parameter and gradient buffers, the RoPE table
// and the activations of batch sequences with the scratch of workers workers.
func modelBuffers(s *sizer, c arch.Config, batch, workers int) (params, grads []float32, rope ropeTable, acts activations) {
	np := float64(c.NumParams())
	params, grads = alloc[float32](s, np), alloc[float32](s, np)
	return params, grads, newRopeTable(s, c), newActivations(s, c, batch, workers)
}
