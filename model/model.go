// Package model is smallinit's decoder-only Transformer: its parameters laid out in one flat buffer, and a
// forward and backward pass over preallocated activations (docs/definitions.md §1). It reads like llm.c's
// train_gpt2.c: every layer's forward and backward sit side by side, all activations live in one explicit struct
// allocated once, and a training step allocates nothing. The config it is built from, its tensor layout and the
// preset table are package arch's plain data (arch.Config, arch.TensorSpec, arch.Presets), named with arch's prefix.
package model

import (
	"fmt"
	"math"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// defaultAttnBlock is the query-block size of the causal attention: a block of rows [i0, i0+attnBlock) only
// multiplies against keys [0, i0+attnBlock), so the masked upper triangle is skipped except inside diagonal
// blocks. 64 rows of scores at T ≤ 512 stay within L2.
const defaultAttnBlock = 64

// normBlocks is the number of row blocks a norm's backward pass is cut into; each sums its share of the gain
// gradient in its own buffer. Fixed (not the worker count) so that results do not depend on the machine.
const normBlocks = 16

// Model is a decoder-only Transformer with its parameters, gradients and the activations of one batch of B
// sequences of length T, all allocated once by New.
type Model struct {
	Config arch.Config
	Specs  []arch.TensorSpec // every parameter tensor in buffer order
	Params Weights           // parameter views into one flat buffer
	Grads  Weights           // gradient views with the same layout; Backward accumulates into them

	pool  *kernel.Pool
	prec  kernel.Precision // of the matmuls (SetPrecision)
	mm    kernel.Gemmer    // the pool's GEMM in prec, chosen once by SetPrecision
	batch int              // B, the most sequences one Forward can take
	n     int              // rows (b·T) of the current Forward
	nLoss int              // rows of the current Forward whose target is not IgnoreTarget: the loss is their mean
	t     int              // sequence length T of the current Forward
	rope  ropeTable
	acts  activations

	attnBlock int // query rows per attention block (defaultAttnBlock; tests shrink it to exercise blocking)

	// Parallel dispatch without per-step closures: parallel stores the op and layer here, then hands the pool the
	// method value runOp created once in New.
	op      rangeOp
	opLayer int
	runOp   func(w, lo, hi int)
	blk     blockRun  // the block pass being run (its forward row functions read their buffers here)
	norm    normArgs  // operands of the norm being run
	glu     gluArgs   // operands of the SwiGLU rows being run
	moeOut  []float32 // output rows the MoE combine adds to
	aux     float64   // auxiliary (load-balancing + z) loss of the last Forward
}

// rangeOp is a piece of work over rows (or heads) [lo, hi) of layer l, run on worker w.
type rangeOp func(m *Model, l, w, lo, hi int)

// blockRun is one forward pass of a block: its rows, the buffers they fill and where the attention finds its
// keys. Forward runs every block over the batch (keys: the earlier rows of the same sequence); the Decoder runs
// the same code over the new position, its keys and values kept in a cache. Only the attention itself differs
// (attentionForward or cachedAttentionForward).
type blockRun struct {
	acts *layerActs
	rows int // token rows of this pass
	t    int // rows per sequence: row n is at position pos0 + n mod t
	pos0 int
	k, v []float32 // the decoder's key/value cache of this block, [SeqLen, KV·d_h]; nil in Forward
}

// pos is the position of row n.
func (r *blockRun) pos(n int) int { return r.pos0 + n%r.t }

// activations holds everything the forward pass keeps for the backward pass (and for diagnostics), plus the
// backward pass's scratch. N = B·T rows; sizes in comments.
type activations struct {
	x      []float32 // residual stream entering each block, (L+1)·N·d; slot L is the final residual
	layers []layerActs
	nf     []float32 // final norm output [N, d]
	sf     normStats
	logits []float32 // [N, V]; turned into dlogits by Backward
	lse    []float32 // [N] log-sum-exp of each logits row
	loss   []float32 // [N] per-token cross-entropy (nats)
	inputs []int32   // [N]
	target []int32   // [N]

	dx    []float32 // [N, d] gradient of the residual stream
	dn    []float32 // [N, d] gradient of a norm's output
	dqkvg []float32 // [N, qkvg width]
	dyg   []float32 // [N, H·d_h] gradient of the (gated) attention output
	dy    []float32 // [N, H·d_h] gradient of the attention output before the gate (aliases dyg without gate)
	dgu   []float32 // [N, 2·d_ff]
	dact  []float32 // [N, d_ff]

	// per-worker scratch
	rowTmp  [][]float32 // max(V, d_ff, T) floats
	dp      [][]float32 // T·T floats: one query block of dP, turned into dS
	normAcc [][]float32 // normBlocks × 2·d floats: one row block's share of a norm's gain (and bias) gradient

	moe moeScratch // MoE backward scratch
}

// layerActs are one block's saved activations.
type layerActs struct {
	n1   []float32 // input norm output [N, d]
	s1   normStats
	qkvg []float32 // [N, H·d_h + 2·KV·d_h + gate rows]: q, k (biased, normed) after RoPE; v; gate after the sigmoid
	qkIn []float32 // [N, (H+KV)·d_h] q and k before their per-head norm (QKNorm only)
	qkR  []float32 // [N, H+KV] their per-head 1/rms (QKNorm only)
	att  []float32 // [B, H, T, T] attention probabilities (upper triangle zero)
	y    []float32 // [N, H·d_h] attention output before the gate
	yg   []float32 // [N, H·d_h] gated attention output (aliases y without gate)
	h    []float32 // [N, d] residual after attention
	n2   []float32 // post-attention norm output [N, d]
	s2   normStats
	gu   []float32 // [N, 2·d_ff] FFN gate and up pre-activations (dense blocks)
	act  []float32 // [N, d_ff] silu(gate) ⊙ up (dense blocks)
	sig  []float32 // [N, d_ff] σ(gate) (dense blocks)
	moe  *moeActs  // MoE blocks
}

// normStats are per-row statistics a norm's backward needs: the mean (LayerNorm only) and 1/sqrt(var + ε).
type normStats struct{ mean, rstd []float32 }

// New allocates a model for c with zero parameters and activations for up to batch sequences of length
// c.SeqLen. The pool runs its parallel work; it may be shared by several models used one at a time.
func New(c arch.Config, batch int, pool *kernel.Pool) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	if batch <= 0 {
		return nil, fmt.Errorf("batch size %d: must be positive", batch)
	}
	// Every caller's batch goes through here (training, evaluation, probes of analyze): refused before it is
	// allocated, a batch that cannot fit is an error, not an out-of-memory kill.
	if err := CheckMemory(c, batch, 0); err != nil {
		return nil, err
	}
	if c.FFNKind == "" {
		c.FFNKind = arch.FFNDense
	}
	if c.KVHeads == c.Heads {
		c.KVHeads = 0 // one spelling of multi-head attention, so that configs compare equal after a save and load
	}
	m := &Model{Config: c, Specs: c.Tensors(), pool: pool, mm: pool.In(kernel.F32), batch: batch, attnBlock: defaultAttnBlock}
	params, grads, rope, acts := modelBuffers(&sizer{}, c, batch, pool.Workers())
	m.Params, m.Grads, m.rope, m.acts = newWeights(c, params), newWeights(c, grads), rope, acts
	m.runOp = func(w, lo, hi int) { m.op(m, m.opLayer, w, lo, hi) }
	return m, nil
}

// Batch is the most sequences one Forward accepts.
func (m *Model) Batch() int { return m.batch }

// Pool is the worker pool the model runs on.
func (m *Model) Pool() *kernel.Pool { return m.pool }

// qkvgWidth is the row width of the fused q|k|v|gate projection, H·d_h + 2·KV·d_h + gate rows.
func (m *Model) qkvgWidth() int { return m.Config.QKVGWidth() }

// parallel runs op over [0, n) on the pool in chunks of at least grain.
func (m *Model) parallel(op rangeOp, l, n, grain int) {
	m.op, m.opLayer = op, l
	m.pool.For(n, grain, m.runOp)
	m.op = nil
}

// residual returns the residual stream entering block l (l = L: the final residual) for the current rows.
func (m *Model) residual(l int) []float32 {
	nd := m.batch * m.Config.SeqLen * m.Config.Dim
	return m.acts.x[l*nd : l*nd+m.n*m.Config.Dim]
}

// IgnoreTarget as a target id drops its position from the loss (PyTorch's cross_entropy ignore_index default):
// the loss is the mean over the other positions and an ignored position gets no gradient. Tasks that score
// only an answer token (the anchor functions of Zhang et al. 2024, "cross-entropy loss on the last token")
// mark every other position with it.
const IgnoreTarget int32 = -100

// Forward runs the model on b = len(inputs)/T sequences of length T = SeqLen (b ≤ Batch) and returns the
// mean next-token cross-entropy against targets plus the MoE auxiliary loss, if any (docs/definitions.md §1 "Loss").
// inputs and targets are row-major [b, T]; every input id must be in [0, V), every target too or IgnoreTarget
// (the mean then runs over the positions not ignored; at least one must be left). The activations stay in the model for
// Backward, Logits, TokenLoss and diagnostics.
func (m *Model) Forward(inputs, targets []int32) (float64, error) {
	return m.ForwardSeq(inputs, targets, m.Config.SeqLen)
}

// ForwardSeq is Forward on sequences of length T ≤ SeqLen (for example the 64-token probes of the
// attention-sink diagnostic); it may take up to Batch·SeqLen/T sequences.
func (m *Model) ForwardSeq(inputs, targets []int32, T int) (float64, error) {
	c := m.Config
	if T < 1 || T > c.SeqLen {
		return 0, fmt.Errorf("forward: sequence length %d outside [1, %d]", T, c.SeqLen)
	}
	if len(inputs) == 0 || len(inputs)%T != 0 || len(inputs) > m.batch*c.SeqLen {
		return 0, fmt.Errorf("forward: %d input tokens: want a positive multiple of T=%d, at most %d tokens", len(inputs), T, m.batch*c.SeqLen)
	}
	if len(targets) != len(inputs) {
		return 0, fmt.Errorf("forward: %d targets for %d inputs", len(targets), len(inputs))
	}
	nLoss := 0
	for i := range inputs {
		if uint32(inputs[i]) >= uint32(c.Vocab) || uint32(targets[i]) >= uint32(c.Vocab) && targets[i] != IgnoreTarget {
			return 0, fmt.Errorf("forward: token %d (input %d, target %d) outside the vocabulary [0, %d)", i, inputs[i], targets[i], c.Vocab)
		}
		if targets[i] != IgnoreTarget {
			nLoss++
		}
	}
	if nLoss == 0 {
		return 0, fmt.Errorf("forward: all %d targets are IgnoreTarget: no position left for the loss", len(targets))
	}
	m.nLoss = nLoss
	m.t = T
	m.n = len(inputs)
	N := m.n
	copy(m.acts.inputs, inputs)
	copy(m.acts.target, targets)

	m.parallel((*Model).embedForward, 0, N, 256)
	for l := 0; l < c.Layers; l++ {
		m.blockForward(l, blockRun{acts: &m.acts.layers[l], rows: N, t: T}, m.residual(l), m.residual(l+1))
	}
	m.headForward(N, m.residual(c.Layers), m.acts.nf, m.acts.sf, m.acts.logits)
	m.parallel((*Model).lossForward, 0, N, 16)
	var sum float64
	for _, v := range m.acts.loss[:N] {
		sum += float64(v)
	}
	m.aux = 0
	if nm := c.NumMoE(); nm > 0 {
		for l := range m.acts.layers {
			if mo := m.acts.layers[l].moe; mo != nil {
				m.aux += (c.AuxCoef*mo.aux + c.ZLossCoef*mo.z) / float64(nm)
			}
		}
	}
	return sum/float64(nLoss) + m.aux, nil
}

// AuxLoss is the auxiliary part of the last Forward's loss (MoE load-balancing and z-loss; 0 for dense
// models). The cross-entropy is the returned loss minus this.
func (m *Model) AuxLoss() float64 { return m.aux }

// blockForward is one pre-norm block over the rows of r: h = x + Attn(Norm(x)); out = h + FFN(Norm(h)). x and
// out are [rows, d]; out may be x.
func (m *Model) blockForward(l int, r blockRun, x, out []float32) {
	c := m.Config
	N, d, a, f := r.rows, c.Dim, c.AttnDim(), c.FFN
	wq := m.qkvgWidth()
	W, A := &m.Params.Layers[l], r.acts
	m.blk = r

	m.normForward(N, x, A.n1, A.s1, W.Norm1, W.Norm1B)
	m.gemm(false, true, N, wq, d, A.n1, d, W.QKVG, d, A.qkvg, wq, false)
	m.parallel((*Model).ropeGateForward, l, N, 64)
	if r.k == nil {
		m.parallel((*Model).attentionForward, l, (N/r.t)*c.Heads, 1)
	} else {
		m.cachedAttentionForward(l)
	}
	if c.AttnGate != arch.GateNone {
		m.parallel((*Model).gateForward, l, N, 64)
	}
	copy(A.h[:N*d], x)
	m.gemm(false, true, N, d, a, A.yg, a, W.O, a, A.h, d, true)

	m.normForward(N, A.h[:N*d], A.n2, A.s2, W.Norm2, W.Norm2B)
	copy(out, A.h[:N*d])
	if c.IsMoE(l) {
		m.moeForward(l, A.n2, out)
	} else {
		m.ffnForward(A.n2, N, W.ffn(f), A.gu, A.act, A.sig, out, true)
	}
	m.blk = blockRun{}
}

// headForward is the final norm and the LM head over rows rows of the final residual x: nf = Norm(x) (statistics
// in st), logits = nf · W_headᵀ.
func (m *Model) headForward(rows int, x, nf []float32, st normStats, logits []float32) {
	c := m.Config
	m.normForward(rows, x, nf, st, m.Params.NormF, m.Params.NormFB)
	m.gemm(false, true, rows, c.Vocab, c.Dim, nf, c.Dim, m.Params.Head, c.Dim, logits, c.Vocab, false)
}

// Backward accumulates the gradient of the last Forward's mean loss into Grads (call ZeroGrads first unless
// accumulating over micro-batches). It overwrites the logits with their gradient.
func (m *Model) Backward() {
	c := m.Config
	N, d, a, f, V := m.n, c.Dim, c.AttnDim(), c.FFN, c.Vocab
	wq := m.qkvgWidth()
	A := &m.acts

	// Head: logits = nf · W_headᵀ.
	m.parallel((*Model).lossBackward, 0, N, 16)
	m.gemm(false, false, N, d, V, A.logits, V, m.Params.Head, d, A.dn, d, false)
	m.gemm(true, false, V, d, N, A.logits, V, A.nf, d, m.Grads.Head, d, true)
	clear(A.dx[:N*d])
	m.normBackward(m.residual(c.Layers), A.sf, m.Params.NormF, m.Grads.NormF, m.Grads.NormFB)

	for l := c.Layers - 1; l >= 0; l-- {
		W, G, L := &m.Params.Layers[l], &m.Grads.Layers[l], &A.layers[l]
		// FFN: x' = h + act · W_downᵀ.
		if c.IsMoE(l) {
			m.moeBackward(l)
		} else {
			m.ffnBackward(L.n2, A.dx, N, W.ffn(f), G.ffn(f), L.gu, L.act, L.sig, A.dact, A.dgu, A.dn, false)
		}
		m.normBackward(L.h[:N*d], L.s2, W.Norm2, G.Norm2, G.Norm2B)

		// Attention: h = x + yg · W_oᵀ.
		m.gemm(false, false, N, a, d, A.dx, d, W.O, a, A.dyg, a, false)
		m.gemm(true, false, d, a, N, A.dx, d, L.yg, a, G.O, a, true)
		if c.AttnGate != arch.GateNone {
			m.parallel((*Model).gateBackward, l, N, 64)
		}
		m.parallel((*Model).attentionBackward, l, (N/m.t)*c.KVHeadCount(), 1)
		m.ropeQKNormBackward(l)
		if c.QKVBias {
			m.parallel((*Model).qkvBiasBackward, l, c.QKVDim(), 64)
		}
		m.gemm(false, false, N, d, wq, A.dqkvg, wq, W.QKVG, d, A.dn, d, false)
		m.gemm(true, false, wq, d, N, A.dqkvg, wq, L.n1, d, G.QKVG, d, true)
		m.normBackward(m.residual(l), L.s1, W.Norm1, G.Norm1, G.Norm1B)
	}
	m.parallel((*Model).embedBackward, 0, d, 8)
}

// ZeroGrads sets every gradient to zero.
func (m *Model) ZeroGrads() { clear(m.Grads.Flat) }

// embedForward copies embedding rows: x0[n] = E[inputs[n]].
func (m *Model) embedForward(_, _, lo, hi int) {
	d := m.Config.Dim
	x := m.residual(0)
	for n := lo; n < hi; n++ {
		t := int(m.acts.inputs[n])
		copy(x[n*d:(n+1)*d], m.Params.Embed[t*d:(t+1)*d])
	}
}

// embedBackward adds dx[n] into dE[inputs[n]] for columns [lo, hi): splitting by column keeps workers from
// writing the same row when a token repeats.
func (m *Model) embedBackward(_, _, lo, hi int) {
	d := m.Config.Dim
	dE := m.Grads.Embed
	for n := 0; n < m.n; n++ {
		t := int(m.acts.inputs[n])
		kernel.Add(dE[t*d+lo:t*d+hi], m.acts.dx[n*d+lo:n*d+hi])
	}
}

// Logits returns the [b·T, V] logits of the last Forward (valid until Backward, which overwrites them).
func (m *Model) Logits() []float32 { return m.acts.logits[:m.n*m.Config.Vocab] }

// TokenLoss returns the per-token cross-entropy of the last Forward, [b·T] in nats (0 at ignored positions).
func (m *Model) TokenLoss() []float32 { return m.acts.loss[:m.n] }

// lossForward computes, per row, the log-sum-exp of the logits and the cross-entropy lse − z[target].
func (m *Model) lossForward(_, w, lo, hi int) {
	V := m.Config.Vocab
	tmp := m.acts.rowTmp[w][:V]
	for n := lo; n < hi; n++ {
		z := m.acts.logits[n*V : (n+1)*V]
		mx := kernel.MaxF(z)
		lse := mx + float32(math.Log(float64(kernel.ExpShiftSum(tmp, z, mx, 1))))
		m.acts.lse[n] = lse
		if tg := m.acts.target[n]; tg == IgnoreTarget {
			m.acts.loss[n] = 0
		} else {
			m.acts.loss[n] = lse - z[tg]
		}
	}
}

// lossBackward turns each logits row into dL/dz = (softmax(z) − onehot(target)) / N' in place, N' the rows not
// ignored; an ignored row's gradient is zero.
func (m *Model) lossBackward(_, _, lo, hi int) {
	V := m.Config.Vocab
	inv := 1 / float32(m.nLoss)
	for n := lo; n < hi; n++ {
		z := m.acts.logits[n*V : (n+1)*V]
		if m.acts.target[n] == IgnoreTarget {
			clear(z)
			continue
		}
		kernel.ExpShiftSum(z, z, m.acts.lse[n], 1)
		kernel.Scale(inv, z)
		z[m.acts.target[n]] -= inv
	}
}
