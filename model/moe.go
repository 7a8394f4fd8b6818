package model

import (
	"math"

	"github.com/smallinit/smallinit/kernel"
)

// Mixture-of-experts FFN (docs/definitions.md §1 "MoE FFN", Hugging Face Qwen-MoE layout). For a token with normalised
// input x:
//
//	p = softmax(W_r·x)                      router probabilities over E experts
//	S = top-k of p (ties: the lower expert index wins), w_j = p_j (/ Σ_S p when norm_topk_prob)
//	y = Σ_{j∈S} w_j·Expert_j(x) + σ(w_sg·x)·Shared(x)      (shared expert optional)
//
// Tokens are grouped by expert (in token order) and each expert runs as dense matrix multiplies over its rows.
// The load-balancing loss of a block is E·Σ_e f_e·P_e (Switch Transformer form) with f_e the fraction of the
// N·k assignments routed to e and P_e the mean router probability of e: it is 1 when routing is uniform.
// (Hugging Face's load_balancing_loss_func counts f_e per token instead of per assignment, so its value is k
// times this one.) The model's auxiliary loss is α times the mean over MoE blocks, plus, when enabled, the
// router z-loss coefficient times the mean over blocks of mean_n lse(W_r·x_n)². With capacity_factor c > 0 an
// expert takes at most ceil(c·N·k/E) assignments, in token order; the rest are dropped (contribute nothing) and
// counted.

// moeActs are one MoE block's saved activations; R = N·k rows of the expert-sorted buffers.
type moeActs struct {
	probs            []float32 // [N, E] router probabilities
	lse              []float32 // [N] router log-sum-exp
	sel              []int32   // [N, k] chosen experts, most probable first
	w                []float32 // [N, k] combine weights
	slot             []int32   // [N, k] row of each assignment in the sorted buffers, −1 when dropped
	start            []int     // [E+1] first sorted row of each expert
	xg, hg, actg, yg []float32 // [R, d], [R, 2f], [R, f], [R, d]: gathered inputs, pre-activations, activations, outputs
	sigg             []float32 // [R, f] σ of the experts' gate pre-activations
	sgu, sact, sy    []float32 // shared expert [N, 2f_s], [N, f_s], [N, d] (before its gate)
	ssig             []float32 // [N, f_s] σ of the shared expert's gate pre-activations
	sg               []float32 // [N] shared-expert gate σ(w_sg·x)
	load             []float64 // [E] f_e: fraction of assignments routed to e (before dropping)
	importance       []float64 // [E] P_e: mean router probability of e
	aux, z           float64   // E·Σ f_e·P_e and mean lse² of this block
	dropped          int       // assignments dropped by the capacity limit
}

// moeScratch is the backward pass's scratch for MoE blocks, shared by all of them.
type moeScratch struct {
	dyg, dactg, dhg, dxg []float32 // [R, d], [R, f], [R, 2f], [R, d]
	dw                   []float32 // [N, k]
	dlogits              []float32 // [N, E]
	dsy, dsact, dsgu     []float32 // shared expert [N, d], [N, f_s], [N, 2f_s]
	dsg                  []float32 // [N]
	counts               []int     // [E]
}

// moeForward adds block l's MoE FFN of x = n2 [N, d] to out, for the rows of the block pass m.blk. The
// capacity limit, a device of training batches, applies in Forward only: the decoder routes every assignment.
func (m *Model) moeForward(l int, x, out []float32) {
	c := m.Config
	N, d, E, k := m.blk.rows, c.Dim, c.Experts, c.TopK
	W, mo := &m.Params.Layers[l], m.blk.acts.moe
	f := c.ExpertFFN

	m.gemm(false, true, N, E, d, x, d, W.Router, d, mo.probs, E, false)
	m.parallel((*Model).moeRouteRows, l, N, 64)

	// Assign sorted rows in token order; the capacity limit drops the latest assignments of a full expert.
	counts := m.acts.moe.counts
	clear(counts)
	for _, e := range mo.sel[:N*k] {
		counts[e]++
	}
	limit := N * k
	if c.Capacity > 0 && m.blk.k == nil {
		limit = int(math.Ceil(c.Capacity * float64(N*k) / float64(E)))
	}
	mo.start[0] = 0
	for e := 0; e < E; e++ {
		mo.load[e] = float64(counts[e]) / float64(N*k)
		mo.start[e+1] = mo.start[e] + min(counts[e], limit)
	}
	clear(counts)
	mo.dropped = 0
	for i, e := range mo.sel[:N*k] {
		if counts[e] >= limit {
			mo.slot[i] = -1
			mo.dropped++
			continue
		}
		mo.slot[i] = int32(mo.start[e] + counts[e])
		counts[e]++
	}
	mo.aux, mo.z = 0, 0
	for e := 0; e < E; e++ {
		var s float64
		for n := 0; n < N; n++ {
			s += float64(mo.probs[n*E+e])
		}
		mo.importance[e] = s / float64(N)
		mo.aux += float64(E) * mo.load[e] * mo.importance[e]
	}
	for _, v := range mo.lse[:N] {
		mo.z += float64(v) * float64(v) / float64(N)
	}

	m.parallel((*Model).moeGatherRows, l, N, 64)
	for e := 0; e < E; e++ {
		r0, r1 := mo.start[e], mo.start[e+1]
		if r1 > r0 {
			m.ffnForward(mo.xg[r0*d:r1*d], r1-r0, W.Experts[e], mo.hg[r0*2*f:r1*2*f], mo.actg[r0*f:r1*f], mo.sigg[r0*f:r1*f], mo.yg[r0*d:r1*d], false)
		}
	}
	if c.SharedFFN > 0 {
		m.ffnForward(x, N, W.Shared, mo.sgu, mo.sact, mo.ssig, mo.sy, false)
		m.gemm(false, true, N, 1, d, x, d, W.SharedGate, d, mo.sg, 1, false)
		for n, v := range mo.sg[:N] {
			mo.sg[n] = float32(1 / (1 + math.Exp(-float64(v))))
		}
	}
	m.moeOut = out
	m.parallel((*Model).moeCombineRows, l, N, 64)
}

// moeRouteRows turns router logits into probabilities and picks each token's top k.
func (m *Model) moeRouteRows(l, _, lo, hi int) {
	c := m.Config
	E, k := c.Experts, c.TopK
	mo := m.blk.acts.moe
	for n := lo; n < hi; n++ {
		p := mo.probs[n*E : (n+1)*E]
		mo.lse[n] = softmaxInPlace(p)
		topK(p, m.Params.Layers[l].RouterBias, mo.sel[n*k:(n+1)*k], mo.w[n*k:(n+1)*k], c.NormTopK)
	}
}

// softmaxInPlace turns logits into probabilities and returns their log-sum-exp.
func softmaxInPlace(p []float32) float32 {
	mx := kernel.MaxF(p)
	var s float32
	for e, v := range p {
		p[e] = float32(math.Exp(float64(v - mx)))
		s += p[e]
	}
	kernel.Scale(1/s, p)
	return mx + float32(math.Log(float64(s)))
}

// topK writes the len(sel) experts with the largest p_e + bias_e (bias may be nil: 0) into sel, best first (on
// a tie the lower index wins), and their combine weights w_j = p_sel[j] into w, renormalised to sum to 1 when
// norm is set. The bias steers the choice only, never the weights (DeepSeek-V3's auxiliary-loss-free balancing).
func topK(p, bias []float32, sel []int32, w []float32, norm bool) {
	score := func(e int) float32 {
		if bias == nil {
			return p[e]
		}
		return p[e] + bias[e]
	}
	var sum float32
	for j := range sel {
		best, bs := -1, float32(0)
		for e := range p {
			if taken(sel[:j], e) {
				continue
			}
			if s := score(e); best < 0 || s > bs { // strict: on a tie the lower index stays
				best, bs = e, s
			}
		}
		sel[j], w[j] = int32(best), p[best]
		sum += p[best]
	}
	if norm {
		kernel.Scale(1/sum, w)
	}
}

func taken(sel []int32, e int) bool {
	for _, s := range sel {
		if int(s) == e {
			return true
		}
	}
	return false
}

// moeGatherRows copies each token's input to the sorted rows of its experts.
func (m *Model) moeGatherRows(_, _, lo, hi int) {
	d, k := m.Config.Dim, m.Config.TopK
	mo, x := m.blk.acts.moe, m.blk.acts.n2
	for n := lo; n < hi; n++ {
		for _, s := range mo.slot[n*k : (n+1)*k] {
			if s >= 0 {
				copy(mo.xg[int(s)*d:int(s+1)*d], x[n*d:(n+1)*d])
			}
		}
	}
}

// moeCombineRows adds Σ_j w_j·y_j (+ σ_shared·shared) to each token's output row.
func (m *Model) moeCombineRows(_, _, lo, hi int) {
	c := m.Config
	d, k := c.Dim, c.TopK
	mo := m.blk.acts.moe
	for n := lo; n < hi; n++ {
		out := m.moeOut[n*d : (n+1)*d]
		for j, s := range mo.slot[n*k : (n+1)*k] {
			if s >= 0 {
				kernel.Axpy(mo.w[n*k+j], mo.yg[int(s)*d:int(s+1)*d], out)
			}
		}
		if c.SharedFFN > 0 {
			kernel.Axpy(mo.sg[n], mo.sy[n*d:(n+1)*d], out)
		}
	}
}

// moeBackward takes acts.dx (the gradient of block l's output) back through the MoE FFN, writing the gradient
// of its input n2 into acts.dn and accumulating the weight gradients.
func (m *Model) moeBackward(l int) {
	c := m.Config
	N, d, E, f := m.n, c.Dim, c.Experts, c.ExpertFFN
	W, G, mo, S := &m.Params.Layers[l], &m.Grads.Layers[l], m.acts.layers[l].moe, &m.acts.moe
	x := m.acts.layers[l].n2

	m.parallel((*Model).moeScatterGradRows, l, N, 64)
	for e := 0; e < E; e++ {
		r0, r1 := mo.start[e], mo.start[e+1]
		if r1 > r0 {
			m.ffnBackward(mo.xg[r0*d:r1*d], S.dyg[r0*d:r1*d], r1-r0, W.Experts[e], G.Experts[e], mo.hg[r0*2*f:r1*2*f],
				mo.actg[r0*f:r1*f], mo.sigg[r0*f:r1*f], S.dactg[r0*f:r1*f], S.dhg[r0*2*f:r1*2*f], S.dxg[r0*d:r1*d], false)
		}
	}
	m.parallel((*Model).moeRouterGradRows, l, N, 64)
	m.gemm(true, false, E, d, N, S.dlogits, E, x, d, G.Router, d, true)
	m.gemm(false, false, N, d, E, S.dlogits, E, W.Router, d, m.acts.dn, d, true)
	if c.SharedFFN > 0 {
		m.ffnBackward(x, S.dsy, N, W.Shared, G.Shared, mo.sgu, mo.sact, mo.ssig, S.dsact, S.dsgu, m.acts.dn, true)
		m.gemm(true, false, 1, d, N, S.dsg, 1, x, d, G.SharedGate, d, true)
		m.gemm(false, false, N, d, 1, S.dsg, 1, W.SharedGate, d, m.acts.dn, d, true)
	}
}

// moeScatterGradRows: dy_j = w_j·dOut to each assignment's sorted row, dw_j = dOut·y_j, and the shared
// expert's dS = σ·dOut and gate pre-activation gradient (dOut·S)·σ·(1 − σ).
func (m *Model) moeScatterGradRows(l, _, lo, hi int) {
	c := m.Config
	d, k := c.Dim, c.TopK
	mo, S := m.acts.layers[l].moe, &m.acts.moe
	for n := lo; n < hi; n++ {
		dOut := m.acts.dx[n*d : (n+1)*d]
		for j, s := range mo.slot[n*k : (n+1)*k] {
			if s < 0 {
				S.dw[n*k+j] = 0
				continue
			}
			dy, y := S.dyg[int(s)*d:int(s+1)*d], mo.yg[int(s)*d:int(s+1)*d]
			w := mo.w[n*k+j]
			for i, g := range dOut {
				dy[i] = w * g
			}
			S.dw[n*k+j] = kernel.Dot(dOut, y)
		}
		if c.SharedFFN > 0 {
			g := mo.sg[n]
			dsy := S.dsy[n*d : (n+1)*d]
			for i, v := range dOut {
				dsy[i] = g * v
			}
			S.dsg[n] = kernel.Dot(dOut, mo.sy[n*d:(n+1)*d]) * g * (1 - g)
		}
	}
}

// moeRouterGradRows gathers each token's input gradient from its experts' rows and computes the router logits'
// gradient: from the combine weights (through the top-k renormalisation), from the load-balancing loss
// (∂/∂p_ne = α·E·f_e / (N·L_moe)) and from the z-loss (∂/∂z_ne = 2·coef·lse_n·p_ne / (N·L_moe)), then through
// the softmax: dz = p ⊙ (dp − p·dp).
func (m *Model) moeRouterGradRows(l, _, lo, hi int) {
	c := m.Config
	N, d, E, k := m.n, c.Dim, c.Experts, c.TopK
	mo, S := m.acts.layers[l].moe, &m.acts.moe
	nMoE := float64(c.NumMoE())
	auxScale := float32(c.AuxCoef * float64(E) / (float64(N) * nMoE))
	zScale := float32(2 * c.ZLossCoef / (float64(N) * nMoE))
	for n := lo; n < hi; n++ {
		dn := m.acts.dn[n*d : (n+1)*d]
		clear(dn)
		for _, s := range mo.slot[n*k : (n+1)*k] {
			if s >= 0 {
				kernel.Add(dn, S.dxg[int(s)*d:int(s+1)*d])
			}
		}
		p, dz := mo.probs[n*E:(n+1)*E], S.dlogits[n*E:(n+1)*E]
		for e := range dz {
			dz[e] = auxScale * float32(mo.load[e])
		}
		sel, w, dw := mo.sel[n*k:(n+1)*k], mo.w[n*k:(n+1)*k], S.dw[n*k:(n+1)*k]
		if c.NormTopK {
			// w_j = p_j / Σ_i p_i  ⇒  ∂L/∂p_j = (dw_j − Σ_i dw_i·w_i) / Σ_i p_i
			var sum, dot float32
			for j, e := range sel {
				sum += p[e]
				dot += dw[j] * w[j]
			}
			for j, e := range sel {
				dz[e] += (dw[j] - dot) / sum
			}
		} else {
			for j, e := range sel {
				dz[e] += dw[j]
			}
		}
		dot := kernel.Dot(p, dz)
		zs := zScale * mo.lse[n]
		for e := range dz {
			dz[e] = p[e]*(dz[e]-dot) + zs*p[e]
		}
	}
}

// BalanceRouters takes one step of auxiliary-loss-free load balancing after a training step (Config.BiasRate >
// 0; no-op otherwise): from the expert loads f_e of the last Forward, each MoE block's selection bias moves by
// b_e += rate·sign(1/E − f_e), so that overloaded experts are chosen less and idle ones more. The bias lives in
// the parameters (mlp.gate.e_score_correction_bias) so that checkpoints, resume and inference carry it, but it
// has no gradient: only this update changes it.
func (m *Model) BalanceRouters() {
	c := m.Config
	if c.BiasRate == 0 {
		return
	}
	step := float32(c.BiasRate)
	for l := range m.acts.layers {
		mo := m.acts.layers[l].moe
		if mo == nil {
			continue
		}
		b := m.Params.Layers[l].RouterBias
		for e, f := range mo.load {
			switch u := 1 / float64(c.Experts); {
			case f < u:
				b[e] += step
			case f > u:
				b[e] -= step
			}
		}
	}
}
