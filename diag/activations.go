package diag

import (
	"fmt"
	"math"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/model"
)

// MaxProbeWindows bounds the probe windows a command asks Activations for (smallinit analyze --probes, and the
// PyTorch side's MAX_PROBE_WINDOWS, which a test holds equal): the activation metrics are means over windows,
// and 4096 windows of 64 tokens already pin them far below any difference they are read for.
const MaxProbeWindows = 4096

// Activations runs m on the first probes windows of probeLen tokens of toks (window k holds tokens
// [k·probeLen, (k+1)·probeLen], as data.Window) and measures every block. Probes beyond what one forward pass
// holds (Batch·SeqLen/probeLen) are not used; ProbeWindows says how many were.
func Activations(m *model.Model, toks []int32, probes, probeLen int) (diagrec.ActivationStats, error) {
	c := m.Config
	if probeLen < 2 || probeLen > c.SeqLen {
		return diagrec.ActivationStats{}, fmt.Errorf("probe length %d: must be in [2, %d]", probeLen, c.SeqLen)
	}
	probes = min(probes, data.NumWindows(len(toks), probeLen), m.Batch()*c.SeqLen/probeLen)
	if probes < 1 {
		return diagrec.ActivationStats{}, fmt.Errorf("%d tokens: too few for one %d-token probe", len(toks), probeLen)
	}
	in, tg := make([]int32, probes*probeLen), make([]int32, probes*probeLen)
	for k := 0; k < probes; k++ {
		data.Window(toks, k, in[k*probeLen:(k+1)*probeLen], tg[k*probeLen:(k+1)*probeLen])
	}
	loss, err := m.ForwardSeq(in, tg, probeLen)
	if err != nil {
		return diagrec.ActivationStats{}, err
	}
	st := diagrec.ActivationStats{ProbeWindows: probes, ProbeLen: probeLen, ProbeLoss: loss}
	eps, layerNorm := c.NormEps, c.Norm == arch.NormLayer
	d := c.Dim
	var sinks, heads int
	var massSum float64
	for l := 0; l < c.Layers; l++ {
		x, h, out := m.Residual(l), m.AttnResidual(l), m.Residual(l+1)
		la := diagrec.LayerActivations{Layer: l, HiddenRMS: rms(x), AttnNorm: normStat(x, d, eps, layerNorm),
			FFNNorm: normStat(h, d, eps, layerNorm), AttnResidualRatio: rmsDiff(h, x) / rms(x),
			FFNResidualRatio: rmsDiff(out, h) / rms(h)}
		la.FirstTokenMass, la.SinkAlpha = firstTokenMass(m.AttentionProbs(l), c.Heads, probeLen)
		for hd := range la.SinkAlpha {
			massSum += la.FirstTokenMass[hd]
			heads++
			if la.SinkAlpha[hd] > diagrec.SinkThreshold {
				sinks++
			}
		}
		if g := m.GateValues(l, nil); g != nil {
			per := len(g) / m.Rows() / c.Heads // gate values per head per token: d_h or 1
			la.GateMean = make([]float64, c.Heads)
			for i, v := range g {
				la.GateMean[(i%(per*c.Heads))/per] += float64(v)
			}
			for hd := range la.GateMean {
				la.GateMean[hd] /= float64(m.Rows() * per)
			}
		}
		if p := m.RouterProbs(l); p != nil {
			la.ExpertLoad, la.Dropped = m.ExpertLoad(l)
			la.ExpertLoad = append([]float64(nil), la.ExpertLoad...)
			E := c.Experts
			var ent float64
			for _, v := range p {
				if v > 0 {
					ent -= float64(v) * math.Log(float64(v))
				}
			}
			la.RouterEntropy = ent / float64(len(p)/E)
		}
		st.Layers = append(st.Layers, la)
	}
	final := m.Residual(c.Layers)
	st.FinalHiddenRMS, st.FinalNorm = rms(final), normStat(final, d, eps, layerNorm)
	st.FirstTokenMass = massSum / float64(heads)
	st.SinkRate = 100 * float64(sinks) / float64(heads)
	return st, nil
}

// rms is sqrt(mean(x²)) over all elements.
func rms(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

// rmsDiff is rms(a − b): the RMS of a sub-layer's contribution to the residual stream.
func rmsDiff(a, b []float32) float64 {
	var s float64
	for i, v := range a {
		e := float64(v) - float64(b[i])
		s += e * e
	}
	return math.Sqrt(s / float64(len(a)))
}

// normStat averages s and r over the rows of x [rows, d].
func normStat(x []float32, d int, eps float64, layerNorm bool) diagrec.NormStat {
	rows := len(x) / d
	var st diagrec.NormStat
	for r := 0; r < rows; r++ {
		row := x[r*d : (r+1)*d]
		var mean, ms float64
		if layerNorm {
			for _, v := range row {
				mean += float64(v) / float64(d)
			}
		}
		for _, v := range row {
			e := float64(v) - mean
			ms += e * e / float64(d)
		}
		st.Saturation += eps / (ms + eps)
		st.OutputRMS += math.Sqrt(ms / (ms + eps))
	}
	st.Saturation /= float64(rows)
	st.OutputRMS /= float64(rows)
	return st
}

// firstTokenMass returns, per head, the mean over queries i ≥ 1 of A[i, 0] and the sink α: the mean over all
// queries (each of which sees key 0) of A[i, 0]. att is [b, H, T, T].
func firstTokenMass(att []float32, H, T int) (mass, alpha []float64) {
	mass, alpha = make([]float64, H), make([]float64, H)
	b := len(att) / (H * T * T)
	for bh := 0; bh < b*H; bh++ {
		h := bh % H
		for i := 0; i < T; i++ {
			a0 := float64(att[bh*T*T+i*T])
			alpha[h] += a0 / float64(b*T)
			if i > 0 {
				mass[h] += a0 / float64(b*(T-1))
			}
		}
	}
	return mass, alpha
}

// Slope is the least-squares slope of y against x: with x = log width and y = log of a metric, the measured
// exponent of a coordinate check (docs/definitions.md §4, residual ratio ∝ d^(1−γ)).
func Slope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i] / float64(len(x))
		my += y[i] / float64(len(x))
	}
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	return sxy / sxx
}
