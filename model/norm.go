package model

import (
	"math"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
)

// Norms (docs/definitions.md §1): RMSNorm(x) = g ⊙ x / sqrt(mean(x²) + ε), and LayerNorm(x) = g ⊙ (x − μ) / sqrt(var + ε) + b,
// ε inside the square root. With x̂ = normalised x and r = 1/sqrt(· + ε), both backward passes are
//
//	dx = r · (dx̂ − x̂ · mean(dx̂ ⊙ x̂))                   (RMSNorm)
//	dx = r · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂))        (LayerNorm)
//
// with dx̂ = g ⊙ dy, dg = Σ_rows dy ⊙ x̂ and db = Σ_rows dy.

// rmsNormRow writes out = g ⊙ x · r and returns r = 1/sqrt(mean(x²) + ε).
func rmsNormRow(out, x, g []float32, eps float32) (rstd float32) {
	ms := kernel.Dot(x, x) / float32(len(x))
	r := float32(1 / math.Sqrt(float64(ms+eps)))
	for i, v := range x {
		out[i] = g[i] * v * r
	}
	return r
}

// layerNormRow writes out = g ⊙ (x − μ) · r + b and returns μ and r = 1/sqrt(var + ε) (biased variance).
func layerNormRow(out, x, g, b []float32, eps float32) (mean, rstd float32) {
	var s float32
	for _, v := range x {
		s += v
	}
	mu := s / float32(len(x))
	var vs float32
	for _, v := range x {
		vs += (v - mu) * (v - mu)
	}
	r := float32(1 / math.Sqrt(float64(vs/float32(len(x))+eps)))
	for i, v := range x {
		out[i] = g[i]*(v-mu)*r + b[i]
	}
	return mu, r
}

// normRowBackward adds the input gradient of one row to dx and the row's contribution to the gain gradient dg
// (and the bias gradient db when non-nil, LayerNorm). mean is 0 for RMSNorm, whose rows run in
// kernel.RMSNormBackward.
func normRowBackward(dx, dy, x, g, dg, db []float32, mean, rstd float32, layer bool) {
	if !layer {
		kernel.RMSNormBackward(dx, dy, x, g, dg, rstd)
		return
	}
	n := float32(len(x))
	var sumD, sumDX float32 // Σ dx̂ and Σ dx̂ ⊙ x̂
	for i, v := range x {
		xh := (v - mean) * rstd
		dxh := g[i] * dy[i]
		sumD += dxh
		sumDX += dxh * xh
		dg[i] += dy[i] * xh
	}
	if db != nil {
		kernel.Add(db, dy)
	}
	meanD, meanDX := sumD/n, sumDX/n
	for i, v := range x {
		xh := (v - mean) * rstd
		dx[i] += rstd * (g[i]*dy[i] - meanD - xh*meanDX)
	}
}

// normArgs are the operands of the norm being run by normForwardRows or normBackwardRows.
type normArgs struct {
	x, out []float32 // input rows and (forward) output rows
	st     normStats
	g, b   []float32 // gain and bias (bias nil for RMSNorm)
	dg, db []float32 // gain and bias gradients (backward)
}

// normForward normalises rows rows of x into out, saving the statistics in st.
func (m *Model) normForward(rows int, x, out []float32, st normStats, g, b []float32) {
	m.norm = normArgs{x: x, out: out, st: st, g: g, b: b}
	m.parallel((*Model).normForwardRows, 0, rows, 64)
}

func (m *Model) normForwardRows(_, _, lo, hi int) {
	d, a := m.Config.Dim, &m.norm
	eps := float32(m.Config.NormEps)
	for n := lo; n < hi; n++ {
		x, out := a.x[n*d:(n+1)*d], a.out[n*d:(n+1)*d]
		if m.Config.Norm == arch.NormLayer {
			a.st.mean[n], a.st.rstd[n] = layerNormRow(out, x, a.g, a.b, eps)
		} else {
			a.st.rstd[n] = rmsNormRow(out, x, a.g, eps)
		}
	}
}

// normBackward adds the input gradient of a norm (whose output gradient is acts.dn and whose input was x) to
// acts.dx, and its gain (and bias) gradients to dg (and db). The rows are cut into a fixed number of blocks,
// each summing its parameter gradients into its own buffer, and the buffers are added in block order: the
// result is bit-for-bit the same whichever worker runs which block.
func (m *Model) normBackward(x []float32, st normStats, g, dg, db []float32) {
	d := m.Config.Dim
	for _, acc := range m.acts.normAcc {
		clear(acc)
	}
	m.norm = normArgs{x: x, st: st, g: g, dg: dg, db: db}
	m.parallel((*Model).normBackwardBlocks, 0, len(m.acts.normAcc), 1)
	for _, acc := range m.acts.normAcc {
		kernel.Add(dg, acc[:d])
		if db != nil {
			kernel.Add(db, acc[d:])
		}
	}
}

// normBackwardBlocks runs row blocks [lo, hi) of normBackward.
func (m *Model) normBackwardBlocks(_, _, lo, hi int) {
	d, a := m.Config.Dim, &m.norm
	layer := m.Config.Norm == arch.NormLayer
	nb := len(m.acts.normAcc)
	for blk := lo; blk < hi; blk++ {
		acc := m.acts.normAcc[blk]
		dg, db := acc[:d], []float32(nil)
		if layer {
			db = acc[d:]
		}
		for n := blk * m.n / nb; n < (blk+1)*m.n/nb; n++ {
			var mean float32
			if layer {
				mean = a.st.mean[n]
			}
			normRowBackward(m.acts.dx[n*d:(n+1)*d], m.acts.dn[n*d:(n+1)*d], a.x[n*d:(n+1)*d], a.g, dg, db, mean, a.st.rstd[n], layer)
		}
	}
}
