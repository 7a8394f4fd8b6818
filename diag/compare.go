package diag

import (
	"fmt"
	"math"
	"sort"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/model"
)

// Compare scores every window of toks (data.Window with the models' context length, at most maxWindows, 0 for
// all) with both models and bins the tokens into quantiles of difficulty. The models must share vocabulary and
// context length. If keep is non-nil it receives every token's row.
func Compare(a, b *model.Model, toks []int32, bins, maxWindows int, keep func(diagrec.TokenGap)) (diagrec.Comparison, error) {
	if a.Config.Vocab != b.Config.Vocab || a.Config.SeqLen != b.Config.SeqLen {
		return diagrec.Comparison{}, fmt.Errorf("models differ in vocabulary (%d, %d) or context length (%d, %d)",
			a.Config.Vocab, b.Config.Vocab, a.Config.SeqLen, b.Config.SeqLen)
	}
	if bins < 1 {
		return diagrec.Comparison{}, fmt.Errorf("bins = %d: must be positive", bins)
	}
	T := a.Config.SeqLen
	nw := data.NumWindows(len(toks), T)
	if maxWindows > 0 {
		nw = min(nw, maxWindows)
	}
	if nw == 0 {
		return diagrec.Comparison{}, fmt.Errorf("%d tokens: need at least %d for one window", len(toks), T+1)
	}
	batch := min(a.Batch(), b.Batch())
	in, tg := make([]int32, batch*T), make([]int32, batch*T)
	gaps := make([]diagrec.TokenGap, 0, nw*T)
	for k := 0; k < nw; k += batch {
		nb := min(batch, nw-k)
		for i := 0; i < nb; i++ {
			data.Window(toks, k+i, in[i*T:(i+1)*T], tg[i*T:(i+1)*T])
		}
		if _, err := a.Forward(in[:nb*T], tg[:nb*T]); err != nil {
			return diagrec.Comparison{}, fmt.Errorf("model A: %w", err)
		}
		if _, err := b.Forward(in[:nb*T], tg[:nb*T]); err != nil {
			return diagrec.Comparison{}, fmt.Errorf("model B: %w", err)
		}
		la, lb := a.TokenLoss(), b.TokenLoss()
		for i := 0; i < nb*T; i++ {
			lossA, lossB := float64(la[i]), float64(lb[i])
			pa, pb := math.Exp(-lossA), math.Exp(-lossB)
			g := diagrec.TokenGap{Pos: k*T + i + 1, Token: tg[i], PA: pa, PB: pb, LogGap: lossB - lossA, Difficulty: (lossA + lossB) / 2}
			if pa+pb > 0 {
				g.DeltaSym = (pa - pb) / (pa + pb)
			}
			gaps = append(gaps, g)
			if keep != nil {
				keep(g)
			}
		}
	}
	cmp := diagrec.Comparison{Windows: nw, All: summarise(gaps)}
	sort.SliceStable(gaps, func(i, j int) bool { return gaps[i].Difficulty < gaps[j].Difficulty })
	bins = min(bins, len(gaps))
	for q := 0; q < bins; q++ {
		part := gaps[q*len(gaps)/bins : (q+1)*len(gaps)/bins]
		bin := summarise(part)
		bin.Lo, bin.Hi = part[0].Difficulty, part[len(part)-1].Difficulty
		cmp.Bins = append(cmp.Bins, bin)
	}
	return cmp, nil
}

// summarise averages a set of token gaps.
func summarise(gs []diagrec.TokenGap) diagrec.GapBin {
	b := diagrec.GapBin{Count: len(gs)}
	for _, g := range gs {
		lossA, lossB := -math.Log(g.PA), -math.Log(g.PB)
		b.MeanDeltaSym += g.DeltaSym
		b.MeanLogGap += g.LogGap
		b.MeanLossA += lossA
		b.MeanLossB += lossB
		if g.PA > g.PB {
			b.WinShareA++
		}
	}
	n := float64(len(gs))
	b.MeanDeltaSym /= n
	b.MeanLogGap /= n
	b.MeanLossA /= n
	b.MeanLossB /= n
	b.LossReduction = b.MeanLossB - b.MeanLossA
	b.WinShareA /= n
	return b
}
