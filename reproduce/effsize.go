package reproduce

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/stats"
)

// EffSize is claim 2's effective model size: L(N) = E + A·N^(−α) fitted on γ = 0.5's losses over the ladder
// (E ≥ 0, α > 0: fit.Fit refuses a fit with E < 0), and each width's γ = 1 mean loss read through it,
// N_eff = (A/(L − E))^(1/α), gain = N_eff/N − 1 (docs/definitions.md §4). A reading is inside the fitted range when N_eff lies
// between the smallest and largest fitted N (docs/definitions.md §7: read only inside the fitted sizes); outside it is an
// extrapolation and said to be one.
type EffSize struct {
	Law    *fit.Law     `json:"law"`   // nil when the fit was refused
	Error  string       `json:"error"` // the refusal ("undetermined")
	Points []EffReading `json:"readings"`
	Reps   int          `json:"bootstrap_reps"`
}

// EffReading is one width's effective size.
type EffReading struct {
	Width  int           `json:"width"`
	N      float64       `json:"n"`
	Loss   float64       `json:"loss_gamma1"` // mean over seeds
	Eff    *float64      `json:"n_eff"`       // null beyond the asymptote
	Gain   *float64      `json:"gain"`
	CI     *fit.Interval `json:"gain_ci"` // 95% bootstrap percentile interval over seeds
	Inside bool          `json:"inside_fitted_range"`
	Note   string        `json:"note,omitempty"`
}

func effectiveSize(ladder []Rung, bootstrap int) EffSize {
	var es EffSize
	rungs := slices.Clone(ladder)
	slices.SortFunc(rungs, func(a, b Rung) int { return cmp.Compare(a.N, b.N) })
	var pts []fit.Point
	var groups [][]float64
	var mean1 []float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rungs {
		g := values(r.G05.Overall())
		for _, v := range g {
			pts = append(pts, fit.Point{X: r.N, Y: v})
		}
		if len(g) > 0 {
			lo, hi = math.Min(lo, r.N), math.Max(hi, r.N)
		}
		groups = append(groups, g)
		m := stats.Mean(values(r.G1.Overall()), nil, 0.05).Mean
		mean1 = append(mean1, m)
	}
	law, err := fit.Fit(pts)
	if err != nil {
		es.Error = err.Error()
		return es
	}
	es.Law = &law
	for i, r := range rungs {
		rd := EffReading{Width: r.Width, N: r.N, Loss: mean1[i]}
		if n, err := law.EffectiveSize(mean1[i]); err == nil && !math.IsNaN(mean1[i]) {
			g := n/r.N - 1
			rd.Eff, rd.Gain = &n, &g
			rd.Inside = n >= lo && n <= hi
			if !rd.Inside {
				rd.Note = fmt.Sprintf("N_eff %.3g is outside the fitted sizes %.3g-%.3g: an extrapolation", n, lo, hi)
			}
		} else {
			rd.Note = "γ = 1's loss is at or below the law's asymptote E, or missing: N_eff undetermined"
		}
		es.Points = append(es.Points, rd)
	}
	// Bootstrap over seeds: the γ = 0.5 seeds of each width and the γ = 1 seeds of each width, resampled within
	// their groups, the law refitted and each gain recomputed.
	all := slices.Clone(groups)
	ok := true
	for _, r := range rungs {
		g := values(r.G1.Overall())
		ok = ok && len(g) > 0
		all = append(all, g)
	}
	for _, g := range groups {
		ok = ok && len(g) > 0
	}
	if bootstrap <= 0 || !ok {
		return es
	}
	nb := len(rungs)
	bs, err := fit.Bootstrap(all, bootstrap, 1, fit.Level95, func(means []float64) ([]float64, error) {
		p := make([]fit.Point, nb)
		for i := range p {
			p[i] = fit.Point{X: rungs[i].N, Y: means[i]}
		}
		l, err := fit.Fit(p)
		if err != nil {
			return nil, err
		}
		out := make([]float64, nb)
		for i := range out {
			n, _ := l.EffectiveSize(means[nb+i]) // +Inf beyond the asymptote: kept
			out[i] = n/rungs[i].N - 1
		}
		return out, nil
	})
	if err != nil {
		es.Error = "bootstrap: " + err.Error()
		return es
	}
	es.Reps = bootstrap
	for i := range es.Points {
		if i < len(bs.Intervals) {
			iv := bs.Intervals[i]
			es.Points[i].CI = &iv
		}
	}
	return es
}

// text is the effective size as evidence.
func (es EffSize) text() string {
	if es.Law == nil {
		return "effective model size undetermined: " + es.Error
	}
	var parts []string
	for _, r := range es.Points {
		s := fmt.Sprintf("width %d", r.Width)
		switch {
		case r.Gain == nil:
			s += ": " + r.Note
		default:
			s += fmt.Sprintf(" %+.0f%%", 100**r.Gain)
			if r.CI != nil {
				s += fmt.Sprintf(" (95%% bootstrap %+.0f%%..%+.0f%%)", 100*r.CI.Lo, 100*r.CI.Hi)
			}
			if !r.Inside {
				s += " (" + r.Note + ")"
			}
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("effective model size of γ=1 from L(N) = %.3f + %.3g·N^(−%.3f) of γ=0.5 over %d widths (the study: +44%%): %s [reported]",
		es.Law.E, es.Law.A, es.Law.Alpha, len(es.Points), strings.Join(parts, ", "))
}

// values is the finite values of an arm, in seed order.
func values(b stats.BySeed) []float64 {
	seeds := make([]int, 0, len(b))
	for s, v := range b {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			seeds = append(seeds, s)
		}
	}
	slices.Sort(seeds)
	out := make([]float64, len(seeds))
	for i, s := range seeds {
		out[i] = b[s]
	}
	return out
}
