package reproduce

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/stats"
)

// HorizonArms are the γ grid's γ = 0.5 and γ = 1 arms at one shorter horizon of the plan's series: the cooldown
// branches of the primary runs (experiment.BranchInfo), each the independent WSD run of that horizon at the rate
// tuned at the primary horizon, scored like a main run on the whole validation split.
type HorizonArms struct {
	Horizon float64     `json:"horizon"` // tokens per non-embedding parameter
	Steps   int         `json:"steps"`
	G05     ArmEvidence `json:"gamma0.5"`
	G1      ArmEvidence `json:"gamma1"`
}

// MatchedRow is the LR grid at one horizon, rate and tuning seed: each γ's loss on the LR-selection slice and the
// paired gain L(γ=0.5) − L(γ=1). With two tuning seeds these are printed value by value, never as a 1-df
// interval.
type MatchedRow struct {
	Horizon float64 `json:"horizon"`
	LR      float64 `json:"lr"`
	Seed    uint64  `json:"seed"`
	G05     float64 `json:"gamma0.5"`
	G1      float64 `json:"gamma1"`
	Gain    float64 `json:"gain"`
}

// horizonEvidence scores the primary runs' cooldown branches (RoleGamma, γ 0.5 and 1), one HorizonArms per
// shorter horizon, ascending.
func horizonEvidence(ctx context.Context, out *experiment.Outcome, sc scoring) ([]HorizonArms, error) {
	by := map[float64]*HorizonArms{}
	for _, b := range out.Branches {
		if Role(b.Role) != RoleGamma {
			continue
		}
		g := b.Config.Init.Gamma
		if !sameGamma(g, 0.5) && !sameGamma(g, 1) {
			continue
		}
		s, err := scoreRun(ctx, b.Dir, out.DataDir, sc)
		if err != nil {
			return nil, err
		}
		h, err := healthOf(b.Dir)
		if err != nil {
			return nil, err
		}
		ha := by[b.Horizon]
		if ha == nil {
			ha = &HorizonArms{Horizon: b.Horizon, Steps: b.Config.TotalSteps()}
			for _, a := range []*ArmEvidence{&ha.G05, &ha.G1} {
				*a = ArmEvidence{Seeds: map[int]Loss{}, Spike: map[int]float64{}, Plateau: map[int]float64{}}
			}
			by[b.Horizon] = ha
		}
		a := &ha.G1
		if sameGamma(g, 0.5) {
			a = &ha.G05
		}
		a.Name = fmt.Sprintf("γ=%g ε=1e-12 gate d=%d, %g tokens per parameter (cooldown branch)", g, b.Config.Model.Dim, b.Horizon)
		a.LR = b.Config.Schedule.PeakLR
		a.Seeds[int(b.Seed)] = HeldOutLoss(s.HeldOut)
		if !math.IsNaN(h.Spike) {
			a.Spike[int(b.Seed)] = h.Spike
		}
		if !math.IsNaN(h.Plateau) {
			a.Plateau[int(b.Seed)] = h.Plateau
		}
	}
	var hs []HorizonArms
	for _, ha := range by {
		hs = append(hs, *ha)
	}
	slices.SortFunc(hs, func(a, b HorizonArms) int { return cmp.Compare(a.Horizon, b.Horizon) })
	return hs, nil
}

// horizonTests are H1 at each shorter horizon of the series, secondaries reported beside H1 (intervals at
// ClaimAlpha).
func horizonTests(hs []HorizonArms, delta float64) []Test {
	var out []Test
	for _, h := range hs {
		d := gain(h.G05.Overall(), h.G1.Overall())
		t := Test{Name: fmt.Sprintf("H1 at %g tokens per parameter (cooldown branches of the tuned runs, %d steps) [reported]", h.Horizon, h.Steps),
			Delta: delta, Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}}
		t.measure(ClaimAlpha)
		out = append(out, t)
	}
	return out
}

// matchedRows are the LR grid's paired gains per seed at the primary width, at every horizon: the full-horizon
// trials (primary) and their cooldown branches (experiment.Tuned.Horizons), sorted by horizon, rate and seed.
func matchedRows(tuned []experiment.Tuned, width int, primary float64) []MatchedRow {
	type key struct {
		h, lr float64
		seed  uint64
	}
	g05, g1 := map[key]float64{}, map[key]float64{}
	for _, t := range tuned {
		if t.Width != width || t.Grid == nil {
			continue
		}
		m := g1
		switch {
		case sameGamma(t.Gamma, 0.5):
			m = g05
		case !sameGamma(t.Gamma, 1):
			continue
		}
		for _, tr := range t.Grid.Trials {
			m[key{primary, tr.LR, tr.Seed}] = tr.Loss
		}
		for _, h := range t.Horizons {
			m[key{h.Horizon, h.LR, h.Seed}] = h.Loss
		}
	}
	var rows []MatchedRow
	for k, a := range g05 {
		if b, ok := g1[k]; ok {
			rows = append(rows, MatchedRow{Horizon: k.h, LR: k.lr, Seed: k.seed, G05: a, G1: b, Gain: a - b})
		}
	}
	slices.SortFunc(rows, func(a, b MatchedRow) int {
		return cmp.Or(cmp.Compare(a.Horizon, b.Horizon), cmp.Compare(a.LR, b.LR), cmp.Compare(a.Seed, b.Seed))
	})
	return rows
}

// writeHorizons prints the horizon series (H1's paired gain per seed at each horizon) and the matched-rate rows.
func (res *Result) writeHorizons(w io.Writer) error {
	if len(res.Horizons) == 0 && len(res.Matched) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(res.Horizons) > 0 {
		fmt.Fprintln(tw, "horizon (tokens/param)\tsteps\tLR γ=0.5 / γ=1\tpaired gain L(γ=0.5) − L(γ=1) per seed (whole validation split)")
		for _, h := range res.Horizons {
			d := gain(h.G05.Overall(), h.G1.Overall())
			line := ""
			for i, s := range d.Seeds {
				line += fmt.Sprintf("%d: %+.4f  ", s, d.Values[i])
			}
			fmt.Fprintf(tw, "%g\t%d\t%g / %g\t%s\n", h.Horizon, h.Steps, h.G05.LR, h.G1.LR, line)
		}
	}
	if len(res.Matched) > 0 {
		fmt.Fprintln(tw, "\nmatched rates (the LR grid, tuning seeds, LR-selection slice)\t\t\t")
		fmt.Fprintln(tw, "horizon\tLR\tseed\tγ=0.5\tγ=1\tgain")
		for _, m := range res.Matched {
			fmt.Fprintf(tw, "%g\t%g\t%d\t%.4f\t%.4f\t%+.4f\n", m.Horizon, m.LR, m.Seed, m.G05, m.G1, m.Gain)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// MarshalJSON writes a diverged trial's loss (and its gain) as null.
func (m MatchedRow) MarshalJSON() ([]byte, error) { return finitejson.Marshal(m) }
