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
		report.Section{ID: "mechanism", Heading: "Loss, norm saturation and sink rate per arm", Text: []string{"Whole validation split; saturation s = ε/(mean(x²)+ε) and sink rate (% of heads with α > 0.3) from each run's last diagnostics record, mean over seeds."},
			Tables: []report.Table{mechanismTable(res.Arms)}})
	if lc := lossCurves(res.RunScores); len(lc) > 0 {
		page.Sections = append(page.Sections, report.Section{ID: "loss-curves", Heading: "Loss curves per arm", Charts: lc})
	}
	return report.WritePage(path, page)
}
