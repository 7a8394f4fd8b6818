package reproduce

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/report"
	"github.com/smallinit/smallinit/stats"
)

// FiguresFile (in the output directory) is the reproduction's own self-contained HTML page of the figures the
// verdicts rest on: the learning-rate curves of the sweep (tune.Curve), the paired γ = 1 gain against ln N with
// its interval and fitted slope, and each arm's loss beside its final norm saturation and sink rate. The run
// report (report.html) links nothing of it; it sits beside it.
const FiguresFile = "reproduce-figures.html"

// lrCurves is one plot per swept width: each γ's selection loss against the learning rate at the sweep's
// longest trials (the rung the choice was made on), the chosen LR named in the legend.
func lrCurves(res *Result) []report.Chart {
	var widths []int
	for _, t := range res.Tuned {
		if !slices.Contains(widths, t.Width) {
			widths = append(widths, t.Width)
		}
	}
	var out []report.Chart
	for _, w := range widths {
		p := report.Panel{Title: fmt.Sprintf("learning-rate sweep at width %d (selection slice, longest trials)", w), XLabel: "peak learning rate (log)", YLabel: "selection loss (nats/token)", LogX: true}
		for _, t := range res.Tuned {
			if t.Width != w {
				continue
			}
			last := 0
			for _, pt := range t.Result.Curve {
				last = max(last, pt.Steps)
			}
			s := report.Series{Name: fmt.Sprintf("γ=%g → %.3g", t.Gamma, t.Result.LR), Marks: true}
			if t.Grid != nil {
				// A full-horizon grid: each rate's mean over the tuning seeds (the quantity the choice reads).
				s.Name += fmt.Sprintf(" (mean of %d seeds)", len(t.Grid.Trials)/max(len(t.Grid.Rates), 1))
				for _, r := range t.Grid.Rates {
					if !math.IsInf(r.Loss, 0) && !math.IsNaN(r.Loss) { // a diverged rate has no mean to draw
						s.X, s.Y = append(s.X, r.LR), append(s.Y, r.Loss)
					}
				}
				p.Series = append(p.Series, s)
				continue
			}
			for _, pt := range t.Result.Curve {
				if pt.Steps == last {
					s.X, s.Y = append(s.X, pt.LR), append(s.Y, pt.Loss)
				}
			}
			p.Series = append(p.Series, s)
		}
		out = append(out, report.Chart{ID: fmt.Sprintf("lr-curves-d%d", w), Title: fmt.Sprintf("Learning-rate curves at width %d", w),
			Caption: "Each γ's selection loss against the peak learning rate; the legend gives the chosen LR.", Rows: [][]report.Panel{{p}}, Width: 560, RowHeight: 320})
	}
	return out
}

// gainFigure is the paired γ = 1 gain L(γ=0.5) − L(γ=1) against ln N over the ladder, each width's mean with its
// t-interval (at claim 2's per-comparison α), and the fitted line of the mean per-seed slope with its interval.
func gainFigure(res *Result) report.Chart {
	ch := report.Chart{ID: "gain-vs-size", Title: "γ = 1 gain against model size", Width: 560, RowHeight: 320}
	p := report.Panel{Title: "paired γ = 1 gain against ln N (both fixes)", XLabel: "N, non-embedding parameters (log)", YLabel: "L(γ=0.5) − L(γ=1), nats", LogX: true}
	if res.Inputs == nil || len(res.Inputs.Ladder) == 0 {
		ch.Rows, ch.Caption = [][]report.Panel{{p}}, "no ladder"
		return ch
	}
	alpha := ClaimAlpha
	s := report.Series{Name: "mean gain, t-interval", Marks: true}
	var xs, ys []float64
	for _, r := range res.Inputs.Ladder {
		d := gain(r.G05.Overall(), r.G1.Overall())
		e := stats.Mean(d.Values, d.Seeds, alpha)
		s.X, s.Y, s.Lo, s.Hi = append(s.X, r.N), append(s.Y, e.Mean), append(s.Lo, e.Lo), append(s.Hi, e.Hi)
		if !math.IsNaN(e.Mean) {
			xs, ys = append(xs, math.Log(r.N)), append(ys, e.Mean)
		}
	}
	p.Series = []report.Series{s}
	note := "slope not estimated"
	for _, c := range res.Claims {
		for _, t := range c.Tests {
			if c.N == 2 && strings.HasPrefix(t.Name, "slope of the gain") && t.Estimate.N > 0 && len(xs) >= 2 {
				e := t.Estimate
				var mx, my float64
				for i := range xs {
					mx, my = mx+xs[i]/float64(len(xs)), my+ys[i]/float64(len(xs))
				}
				a, b := xs[0], xs[len(xs)-1]
				p.Segments = append(p.Segments, report.Segment{X0: math.Exp(a), Y0: my + e.Mean*(a-mx), X1: math.Exp(b), Y1: my + e.Mean*(b-mx)})
				note = fmt.Sprintf("slope %+.4f nats per ln N, %.3g%% CI [%+.4f, %+.4f] on %d df (n = %d seeds); dashed: the mean slope through the mean point", e.Mean, 100*(1-e.Alpha), e.Lo, e.Hi, e.DF, e.N)
			}
		}
	}
	ch.Rows, ch.Caption = [][]report.Panel{{p}}, note
	return ch
}

// horizonFigure is γ = 1's paired gain against the horizon series: at each γ's tuned rate per seed (thin lines),
// their mean with its 95% t-interval, and at every matched rate of the LR grid (the tuning seeds' mean). ok is
// false without a series.
func horizonFigure(res *Result) (ch report.Chart, ok bool) {
	ev := res.Inputs
	if ev == nil || ev.Primaries == nil || ev.Primaries.TokensPerParam <= 0 || len(res.Horizons) == 0 {
		return ch, false
	}
	type point struct {
		h   float64
		g05 *ArmEvidence
		g1  *ArmEvidence
	}
	var pts []point
	for i := range res.Horizons {
		pts = append(pts, point{res.Horizons[i].Horizon, &res.Horizons[i].G05, &res.Horizons[i].G1})
	}
	pts = append(pts, point{ev.Primaries.TokensPerParam, ev.gammaArm(0.5), ev.gammaArm(1)})
	tuned := report.Panel{Title: "each γ at its rate tuned at the primary horizon", XLabel: "tokens per non-embedding parameter (log)", YLabel: "L(γ=0.5) − L(γ=1), nats", LogX: true}
	perSeed := map[int]*report.Series{}
	var seeds []int
	mean := report.Series{Name: "mean, 95% t-interval", Marks: true, Width: 2.5, Color: 1}
	for _, p := range pts {
		d := gain(p.g05.Overall(), p.g1.Overall())
		for i, sd := range d.Seeds {
			s := perSeed[sd]
			if s == nil {
				s = &report.Series{Width: 0.8, Color: 2}
				perSeed[sd] = s
				seeds = append(seeds, sd)
			}
			s.X, s.Y = append(s.X, p.h), append(s.Y, d.Values[i])
		}
		e := stats.Mean(d.Values, d.Seeds, 0.05)
		mean.X, mean.Y, mean.Lo, mean.Hi = append(mean.X, p.h), append(mean.Y, e.Mean), append(mean.Lo, e.Lo), append(mean.Hi, e.Hi)
	}
	slices.Sort(seeds)
	for i, sd := range seeds {
		s := perSeed[sd]
		if i == 0 {
			s.Name = "one seed"
		}
		tuned.Series = append(tuned.Series, *s)
	}
	tuned.Series = append(tuned.Series, mean)
	lo, hi := pts[0].h, pts[len(pts)-1].h
	zero := report.Series{X: []float64{lo, hi}, Y: []float64{0, 0}, Black: true, Width: 0.8}
	tuned.Series = append(tuned.Series, zero)
	panels := []report.Panel{tuned}
	if len(res.Matched) > 0 {
		matched := report.Panel{Title: "both γ at one rate (the LR grid, tuning seeds' mean)", XLabel: "tokens per non-embedding parameter (log)", YLabel: "L(γ=0.5) − L(γ=1), nats", LogX: true}
		type key struct{ lr, h float64 }
		sum, n := map[key]float64{}, map[key]int{}
		var lrs []float64
		for _, m := range res.Matched {
			if math.IsNaN(m.Gain) {
				continue
			}
			k := key{m.LR, m.Horizon}
			if _, seen := n[k]; !seen && !slices.Contains(lrs, m.LR) {
				lrs = append(lrs, m.LR)
			}
			sum[k] += m.Gain
			n[k]++
		}
		slices.Sort(lrs)
		for i, lr := range lrs {
			s := report.Series{Name: fmt.Sprintf("LR %g", lr), Marks: true, Color: 3 + i}
			for _, p := range pts {
				if c := n[key{lr, p.h}]; c > 0 {
					s.X, s.Y = append(s.X, p.h), append(s.Y, sum[key{lr, p.h}]/float64(c))
				}
			}
			matched.Series = append(matched.Series, s)
		}
		matched.Series = append(matched.Series, zero)
		panels = append(panels, matched)
	}
	ch = report.Chart{ID: "gain-vs-horizon", Title: "γ = 1 gain against the horizon", Width: 560, RowHeight: 320, Rows: [][]report.Panel{panels},
		Caption: fmt.Sprintf("Width %d, both fixes; the shorter horizons are cooldown branches of the primary runs at the rates tuned at %g tokens per parameter. Above zero, γ = 1 is ahead. Whole validation split (left), LR-selection slice (right).", ev.Width, ev.Primaries.TokensPerParam)}
	return ch, true
}

// mechanismTable is each arm's loss beside its final norm saturation and sink rate.
func mechanismTable(arms []ArmSummary) report.Table {
	t := report.Table{Header: []string{"group", "arm", "seeds", "γ", "width", "ε", "gate", "LR", "val loss (± SE)", "norm saturation (mean, first norm)", "sink rate %"}}
	for _, a := range arms {
		t.Rows = append(t.Rows, []string{a.Group, a.Arm, strconv.Itoa(a.Seeds), fmt.Sprintf("%g", a.Gamma), strconv.Itoa(a.Width),
			fmt.Sprintf("%.3g", a.Eps), a.Gate, fmt.Sprintf("%.3g", a.LR), fmtNum("%.4f", a.Loss) + " ± " + fmtNum("%.4f", a.LossSE),
			fmtNum("%.3g", a.NormSaturation) + ", " + fmtNum("%.3g", a.FirstNormSat), fmtNum("%.1f", a.SinkRate)})
	}
	return t
}

// lossCurves is one loss-curve chart per arm of the scored runs (report.ArmLossCurves), in run order; an arm
// whose runs logged nothing readable is left out.
func lossCurves(recs []RunRecord) []report.Chart {
	var keys []string
	dirs := map[string][]string{}
	for _, r := range recs {
		key := r.Group + "/" + r.Arm
		if r.Arm == "" {
			key = r.Group + fmt.Sprintf("/γ=%g d=%d", r.Gamma, r.Width)
		}
		if _, ok := dirs[key]; !ok {
			keys = append(keys, key)
		}
		dirs[key] = append(dirs[key], r.Dir)
	}
	var out []report.Chart
	for i, k := range keys {
		if ch, err := report.ArmLossCurves(fmt.Sprintf("loss-curves-%d", i+1), k, dirs[k]); err == nil {
			out = append(out, ch)
		}
	}
	return out
}

// writeFigures writes FiguresFile: the figures as data, drawn and laid out by report.
func writeFigures(path string, res *Result) error {
	page := report.PageSpec{Title: "smallinit reproduce: figures",
		Intro: []string{fmt.Sprintf("%d runs of %d steps, %d seeds per verdict arm, tier %s. %s", res.Runs, res.Steps, res.Seeds, res.Tier, res.Smoke)}}
	page.Sections = append(page.Sections,
		report.Section{ID: "lr-curves", Heading: "Learning-rate curves", Text: []string{"Each γ's selection loss (LR-selection slice, never the validation split) at the sweep's longest trials; the legend gives the chosen LR."}, Charts: lrCurves(res)},
		report.Section{ID: "gain", Heading: "γ = 1 gain against model size", Charts: []report.Chart{gainFigure(res)}},
	)
	if hc, ok := horizonFigure(res); ok {
		page.Sections = append(page.Sections, report.Section{ID: "horizon", Heading: "γ = 1 gain against the horizon", Charts: []report.Chart{hc}})
	}
	page.Sections = append(page.Sections,
		report.Section{ID: "mechanism", Heading: "Loss, norm saturation and sink rate per arm", Text: []string{"Whole validation split; saturation s = ε/(mean(x²)+ε) and sink rate (% of heads with α > 0.3) from each run's last diagnostics record, mean over seeds."},
			Tables: []report.Table{mechanismTable(res.Arms)}})
	if lc := lossCurves(res.RunScores); len(lc) > 0 {
		page.Sections = append(page.Sections, report.Section{ID: "loss-curves", Heading: "Loss curves per arm", Charts: lc})
	}
	return report.WritePage(path, page)
}
