package experiment

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/summary"
)

// PairSpec is one paired comparison of a plan ([[pair]] name, a, b): L(A) − L(B) seed by seed, each run's loss
// on the whole validation split (the summary's), docs/definitions.md §7 "paired by seed".
type PairSpec struct {
	Name, A, B string
}

// PairsFile (in the output directory) holds the plan's paired comparisons (Pair), written after the summary.
const PairsFile = "pairs.json"

// PairAlpha is the level of a plan pair's t-interval: each pair is a secondary, reported unadjusted.
const PairAlpha = 0.05

// Pair is one paired comparison's result: its spec and the per-seed differences with their t-interval, on the
// whole validation split (Estimate), on each language's validation split (ByLang) and on the training mix
// (TrainMix: each language's loss weighted by its share of the training tokens, docs/definitions.md §7 "Which
// loss"; absent for a corpus of one language or without per-language counts).
type Pair struct {
	PairSpec
	Estimate stats.Estimate            `json:"estimate"`
	ByLang   map[string]stats.Estimate `json:"by_lang,omitempty"`
	TrainMix *stats.Estimate           `json:"train_mix,omitempty"`
}

// TrainMixLoss is the validation loss on the training mix: Σ_lang w_lang·L_lang with w_lang the language's
// share of the training tokens (docs/definitions.md §7 "Which loss"). It is NaN when a language of the
// weights has no loss, and ok is false when there are fewer than two languages to weigh.
func TrainMixLoss(langLoss map[string]float64, st *data.Stats) (loss float64, ok bool) {
	if st == nil || len(st.TrainByLang) < 2 || st.Train.Tokens <= 0 {
		return math.NaN(), false
	}
	for l, c := range st.TrainByLang {
		v, have := langLoss[l]
		if !have {
			return math.NaN(), true
		}
		loss += float64(c.Tokens) / float64(st.Train.Tokens) * v
	}
	return loss, true
}

// MarshalJSON writes one seed's NaN noise estimate as null.
func (p Pair) MarshalJSON() ([]byte, error) { return finitejson.Marshal(p) }

// pairs computes the plan's paired comparisons from the summary rows of its runs (matched to arms and seeds
// by run directory).
func pairs(p *Plan, out *Outcome) []Pair {
	if len(p.Pairs) == 0 {
		return nil
	}
	// loss[readout][arm][seed]: "" the whole split, a language's code, trainMixReadout the training mix.
	loss := map[string]map[string]stats.BySeed{}
	put := func(readout, arm string, seed int, v float64) {
		if loss[readout] == nil {
			loss[readout] = map[string]stats.BySeed{}
		}
		if loss[readout][arm] == nil {
			loss[readout][arm] = stats.BySeed{}
		}
		loss[readout][arm][seed] = v
	}
	byDir := map[string]summary.Row{}
	for _, r := range out.Rows {
		byDir[r.Dir] = r
	}
	mixed := false
	for _, r := range out.RunList {
		row, ok := byDir[r.Dir]
		if !ok || r.Arm == "" {
			continue
		}
		put("", r.Arm, int(r.Seed), row.ValLoss)
		for l, v := range row.LangLoss {
			put(l, r.Arm, int(r.Seed), v)
		}
		if v, ok := TrainMixLoss(row.LangLoss, out.Stats); ok {
			put(trainMixReadout, r.Arm, int(r.Seed), v)
			mixed = true
		}
	}
	estimate := func(readout string, ps PairSpec) stats.Estimate {
		d := stats.Paired(loss[readout][ps.A], loss[readout][ps.B])
		return stats.Mean(d.Values, d.Seeds, PairAlpha)
	}
	var res []Pair
	for _, ps := range p.Pairs {
		pr := Pair{PairSpec: ps, Estimate: estimate("", ps)}
		for readout := range loss {
			if readout != "" && readout != trainMixReadout {
				if pr.ByLang == nil {
					pr.ByLang = map[string]stats.Estimate{}
				}
				pr.ByLang[readout] = estimate(readout, ps)
			}
		}
		if mixed {
			e := estimate(trainMixReadout, ps)
			pr.TrainMix = &e
		}
		res = append(res, pr)
	}
	return res
}

// checkPairSeeds refuses a pair whose two arms share no seed among the seeds they run (their groups' own, else
// seeds): the comparison pairs by seed, and with none in common it would train every run, then print +NaN.
func checkPairSeeds(p *Plan, seeds []uint64) error {
	o := &Options{Seeds: seeds}
	for _, ps := range p.Pairs {
		ga, gb := p.findArm(ps.A), p.findArm(ps.B)
		if ga == nil || gb == nil { // Parse refuses a pair of a missing arm; a tier may drop a group
			continue
		}
		sa, sb := groupSeeds(ga, o), groupSeeds(gb, o)
		if !slices.ContainsFunc(sa, func(s uint64) bool { return slices.Contains(sb, s) }) {
			return fmt.Errorf("plan %s: pair %q: arm %s (group %s) runs seeds %v and arm %s (group %s) seeds %v, none in common: a pair compares the two arms seed by seed (give both groups the same seeds)",
				p.Name, ps.Name, ps.A, ga.Name, sa, ps.B, gb.Name, sb)
		}
	}
	return nil
}

// trainMixReadout keys the training-mix loss beside the language codes (which are letters only).
const trainMixReadout = "=train-mix"

// WritePairs prints the paired comparisons: each difference per seed, its mean, standard error (the SD of the
// per-seed differences over √n) and t-interval.
func WritePairs(w io.Writer, ps []Pair) error {
	if len(ps) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "paired comparison L(a) − L(b), whole validation split\tn\tmean\t± SE\t%g%% t-interval\tper seed\n", 100*(1-PairAlpha))
	line := func(label string, e stats.Estimate) {
		per := ""
		for i, s := range e.Seeds {
			per += fmt.Sprintf("%d: %+.4f  ", s, e.Values[i])
		}
		// A comparison needs at least 3 seeds for an interval (docs/definitions.md §7); two give their values.
		ci := fmt.Sprintf("none (n = %d: the values)", e.N)
		if e.N >= 3 && !math.IsNaN(e.Lo) {
			ci = fmt.Sprintf("[%+.4f, %+.4f]", e.Lo, e.Hi)
		}
		se := "—" // one seed has no spread
		if e.N > 1 && !math.IsNaN(e.SE) {
			se = fmt.Sprintf("± %.4f", e.SE)
		}
		fmt.Fprintf(tw, "%s\t%d\t%+.4f\t%s\t%s\t%s\n", label, e.N, e.Mean, se, ci, per)
	}
	for _, p := range ps {
		line(fmt.Sprintf("%s (%s − %s)", p.Name, p.A, p.B), p.Estimate)
		if p.TrainMix != nil {
			line("    at the training mix", *p.TrainMix)
		}
		for _, l := range slices.Sorted(maps.Keys(p.ByLang)) {
			line("    "+l+" validation only", p.ByLang[l])
		}
	}
	return tw.Flush()
}
