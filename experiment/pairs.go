package experiment

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

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

// Pair is one paired comparison's result: its spec and the per-seed differences with their t-interval.
type Pair struct {
	PairSpec
	Estimate stats.Estimate `json:"estimate"`
}

// MarshalJSON writes one seed's NaN noise estimate as null.
func (p Pair) MarshalJSON() ([]byte, error) { return finitejson.Marshal(p) }

// pairs computes the plan's paired comparisons from the summary rows of its runs (matched to arms and seeds
// by run directory).
func pairs(p *Plan, out *Outcome) []Pair {
	if len(p.Pairs) == 0 {
		return nil
	}
	loss := map[string]map[int]float64{}
	byDir := map[string]summary.Row{}
	for _, r := range out.Rows {
		byDir[r.Dir] = r
	}
	for _, r := range out.RunList {
		row, ok := byDir[r.Dir]
		if !ok || r.Arm == "" {
			continue
		}
		if loss[r.Arm] == nil {
			loss[r.Arm] = map[int]float64{}
		}
		loss[r.Arm][int(r.Seed)] = row.ValLoss
	}
	var res []Pair
	for _, ps := range p.Pairs {
		d := stats.Paired(loss[ps.A], loss[ps.B])
		res = append(res, Pair{PairSpec: ps, Estimate: stats.Mean(d.Values, d.Seeds, PairAlpha)})
	}
	return res
}

// WritePairs prints the paired comparisons: each difference per seed, its mean and t-interval.
func WritePairs(w io.Writer, ps []Pair) error {
	if len(ps) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "paired comparison L(a) − L(b), whole validation split\tn\tmean\t%g%% t-interval\tper seed\n", 100*(1-PairAlpha))
	for _, p := range ps {
		e := p.Estimate
		per := ""
		for i, s := range e.Seeds {
			per += fmt.Sprintf("%d: %+.4f  ", s, e.Values[i])
		}
		// A comparison needs at least 3 seeds for an interval (docs/definitions.md §7); two give their values.
		ci := fmt.Sprintf("none (n = %d: the values)", e.N)
		if e.N >= 3 && !math.IsNaN(e.Lo) {
			ci = fmt.Sprintf("[%+.4f, %+.4f]", e.Lo, e.Hi)
		}
		fmt.Fprintf(tw, "%s (%s − %s)\t%d\t%+.4f\t%s\t%s\n", p.Name, p.A, p.B, e.N, e.Mean, ci, per)
	}
	return tw.Flush()
}
