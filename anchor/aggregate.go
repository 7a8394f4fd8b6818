package anchor

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// PhaseCell is one (γ, depth) cell of the composite phase diagram over seeds. Per seed the learning rate is
// picked two ways: the paper's (2405.05409 §4: for each mapping, the highest (4,3) accuracy over the rates,
// so InfBest and SymBest may come from different rates) and ours (the rate with the best seen-pair test
// accuracy, ties to the lower final training loss, whose (4,3) shares Inf, Sym, Other then sum to 1). Values are means over seeds with their sample
// standard deviation (SD*, 0 with one seed).
type PhaseCell struct {
	Gamma            float64
	Layers           int
	Seeds            int
	InfBest, SymBest float64 // paper's selection
	Inf, Sym, Other  float64 // at the rate of best seen-pair test accuracy
	SDInf, SDSym     float64
	SeenTest         float64 // seen-pair test accuracy at that rate
	Test34           float64
	LRs              []float64 // the chosen rate of each seed
	// Per seed (in seed order) at the chosen rate, for paired comparisons between cells (the same seed draws
	// the same data): the (4,3) inferential and symmetric shares and the seed.
	InfBySeed, SymBySeed []float64
	SeedIDs              []uint64
	// SeenBySeed is each seed's seen-pair test accuracy at its chosen rate (a verdict gates seed by seed on it).
	SeenBySeed []float64
}

// MixPoint is one γ of the mix task over seeds, at the rate (per seed) with the best mean of the memory and
// training-reasoning accuracies, the fit of the training set.
type MixPoint struct {
	Gamma                     float64
	Layers, Seeds             int
	Memory, RsnTrain, RsnTest float64
	SDMem, SDRsnTr, SDRsnTest float64
	LRs                       []float64
}

func meanSD(xs []float64) (m, sd float64) {
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if len(xs) > 1 {
		for _, x := range xs {
			sd += (x - m) * (x - m)
		}
		sd = math.Sqrt(sd / float64(len(xs)-1))
	}
	return m, sd
}

type cellKey struct {
	gamma  float64
	layers int
}

// Phase aggregates the composite-task results into the diagram's cells, sorted by depth then γ.
func Phase(res []CellResult) []PhaseCell {
	by := map[cellKey]map[uint64][]CellResult{}
	for _, r := range res {
		if r.Composite == nil {
			continue
		}
		k := cellKey{r.Cell.Gamma, r.Cell.Layers}
		if by[k] == nil {
			by[k] = map[uint64][]CellResult{}
		}
		by[k][r.Cell.Seed] = append(by[k][r.Cell.Seed], r)
	}
	var out []PhaseCell
	for k, seeds := range by {
		pc := PhaseCell{Gamma: k.gamma, Layers: k.layers, Seeds: len(seeds)}
		var ib, sb, inf, sym, oth, st, t34 []float64
		for _, s := range sortedSeeds(seeds) {
			runs := seeds[s]
			bi, bs := 0.0, 0.0
			best := runs[0]
			for _, r := range runs {
				bi = math.Max(bi, r.Composite.Unseen.Inferential)
				bs = math.Max(bs, r.Composite.Unseen.Symmetric)
				// Ties (common at 100% seen-pair accuracy) go to the better fit: the lower final training loss.
				if r.Composite.SeenTest > best.Composite.SeenTest || r.Composite.SeenTest == best.Composite.SeenTest && r.Loss < best.Loss {
					best = r
				}
			}
			ib, sb = append(ib, bi), append(sb, bs)
			c := best.Composite
			inf, sym, oth = append(inf, c.Unseen.Inferential), append(sym, c.Unseen.Symmetric), append(oth, c.Unseen.Other)
			st, t34 = append(st, c.SeenTest), append(t34, c.Test34)
			pc.LRs = append(pc.LRs, best.Cell.LR)
		}
		pc.InfBySeed, pc.SymBySeed, pc.SeedIDs, pc.SeenBySeed = inf, sym, sortedSeeds(seeds), st
		pc.InfBest, _ = meanSD(ib)
		pc.SymBest, _ = meanSD(sb)
		pc.Inf, pc.SDInf = meanSD(inf)
		pc.Sym, pc.SDSym = meanSD(sym)
		pc.Other, _ = meanSD(oth)
		pc.SeenTest, _ = meanSD(st)
		pc.Test34, _ = meanSD(t34)
		out = append(out, pc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Layers != out[j].Layers {
			return out[i].Layers < out[j].Layers
		}
		return out[i].Gamma < out[j].Gamma
	})
	return out
}

// MixCurve aggregates the mix-task results by γ.
func MixCurve(res []CellResult) []MixPoint {
	by := map[cellKey]map[uint64][]CellResult{}
	for _, r := range res {
		if r.Mix == nil {
			continue
		}
		k := cellKey{r.Cell.Gamma, r.Cell.Layers}
		if by[k] == nil {
			by[k] = map[uint64][]CellResult{}
		}
		by[k][r.Cell.Seed] = append(by[k][r.Cell.Seed], r)
	}
	var out []MixPoint
	for k, seeds := range by {
		p := MixPoint{Gamma: k.gamma, Layers: k.layers, Seeds: len(seeds)}
		var mem, rtr, rte []float64
		for _, s := range sortedSeeds(seeds) {
			best := seeds[s][0]
			for _, r := range seeds[s] {
				if r.Mix.Memory+r.Mix.RsnTrain > best.Mix.Memory+best.Mix.RsnTrain {
					best = r
				}
			}
			mem, rtr, rte = append(mem, best.Mix.Memory), append(rtr, best.Mix.RsnTrain), append(rte, best.Mix.RsnTest)
			p.LRs = append(p.LRs, best.Cell.LR)
		}
		p.Memory, p.SDMem = meanSD(mem)
		p.RsnTrain, p.SDRsnTr = meanSD(rtr)
		p.RsnTest, p.SDRsnTest = meanSD(rte)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Gamma < out[j].Gamma })
	return out
}

func sortedSeeds(m map[uint64][]CellResult) []uint64 {
	var s []uint64
	for k := range m {
		s = append(s, k)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// WriteTable writes the diagram's tables as plain text.
func WriteTable(w io.Writer, phase []PhaseCell, mix []MixPoint) {
	fmt.Fprintln(w, "Composite anchors (2405.05409): share of held-out (4,3) predictions, mean ± sd over seeds")
	fmt.Fprintln(w, "  at the rate with the best seen-pair test accuracy; inf*/sym* = best over rates per mapping (the paper's selection)")
	fmt.Fprintf(w, "%5s %2s %5s  %-12s %-12s %5s  %5s %5s  %9s %9s  %s\n", "γ", "L", "seeds", "inferential", "symmetric", "other", "inf*", "sym*", "seen test", "(3,4)test", "chosen lr")
	for _, c := range phase {
		lrs := make([]string, len(c.LRs))
		for i, lr := range c.LRs {
			lrs[i] = fmt.Sprintf("%.0e", lr)
		}
		fmt.Fprintf(w, "%5.2f %2d %5d  %.2f ± %.2f  %.2f ± %.2f  %5.2f  %5.2f %5.2f  %9.2f %9.2f  %s\n", c.Gamma, c.Layers, c.Seeds,
			c.Inf, c.SDInf, c.Sym, c.SDSym, c.Other, c.InfBest, c.SymBest, c.SeenTest, c.Test34, strings.Join(lrs, ","))
	}
	if len(mix) == 0 {
		return
	}
	fmt.Fprintln(w, "\nReasoning and memory anchors (2502.04375): accuracy, mean ± sd over seeds, at the rate with the best training fit")
	fmt.Fprintf(w, "%5s %2s %5s  %-12s %-15s %-14s\n", "γ", "L", "seeds", "memory", "reasoning train", "reasoning test")
	for _, p := range mix {
		fmt.Fprintf(w, "%5.2f %2d %5d  %.2f ± %.2f  %.2f ± %.2f     %.2f ± %.2f\n", p.Gamma, p.Layers, p.Seeds,
			p.Memory, p.SDMem, p.RsnTrain, p.SDRsnTr, p.RsnTest, p.SDRsnTest)
	}
}
