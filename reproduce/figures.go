package reproduce

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/stats"
)

// FiguresFile (in the output directory) is the reproduction's own self-contained HTML page of the figures the
// verdicts rest on: the learning-rate curves of the sweep (tune.Curve), the paired γ = 1 gain against ln N with
// its interval and fitted slope, and each arm's loss beside its final norm saturation and sink rate. The run
// report (report.html) links nothing of it; it sits beside it.
const FiguresFile = "reproduce-figures.html"

// svgPlot is a small x-y plot: series of points (optionally with intervals), log or linear x.
type svgPlot struct {
	title, xlabel, ylabel string
	logX                  bool
	series                []svgSeries
	lines                 [][2][2]float64 // extra segments in data coordinates
}

type svgSeries struct {
	name   string
	x, y   []float64
	lo, hi []float64 // intervals (nil: none)
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

func (p svgPlot) render() string {
	const w, h, ml, mr, mt, mb = 520.0, 300.0, 60.0, 150.0, 30.0, 45.0
	tx := func(x float64) float64 {
		if p.logX {
			return math.Log(x)
		}
		return x
	}
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	upd := func(x, y float64) {
		if math.IsNaN(y) || math.IsInf(y, 0) || math.IsNaN(x) {
			return
		}
		x0, x1, y0, y1 = math.Min(x0, tx(x)), math.Max(x1, tx(x)), math.Min(y0, y), math.Max(y1, y)
	}
	for _, s := range p.series {
		for i := range s.x {
			upd(s.x[i], s.y[i])
			if s.lo != nil {
				upd(s.x[i], s.lo[i])
				upd(s.x[i], s.hi[i])
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`, w, h)
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13">%s</text>`, ml, html.EscapeString(p.title))
	if math.IsInf(x0, 0) {
		b.WriteString(`<text x="60" y="150">no data</text></svg>`)
		return b.String()
	}
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	if y1 == y0 {
		y0, y1 = y0-1, y1+1
	}
	pad := (y1 - y0) * 0.08
	y0, y1 = y0-pad, y1+pad
	px := func(x float64) float64 { return ml + (tx(x)-x0)/(x1-x0)*(w-ml-mr) }
	py := func(y float64) float64 { return h - mb - (y-y0)/(y1-y0)*(h-mt-mb) }
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`, ml, mt, w-ml-mr, h-mt-mb)
	for k := 0; k <= 4; k++ {
		y := y0 + (y1-y0)*float64(k)/4
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%.3g</text>`, ml-4, py(y)+4, y)
		xv := x0 + (x1-x0)*float64(k)/4
		if p.logX {
			xv = math.Exp(xv)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.3g</text>`, px(xv), h-mb+14, xv)
	}
	if y0 < 0 && y1 > 0 {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#bbb" stroke-dasharray="3,3"/>`, ml, w-mr, py(0), py(0))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, ml+(w-ml-mr)/2, h-8, html.EscapeString(p.xlabel))
	fmt.Fprintf(&b, `<text x="14" y="%.0f" transform="rotate(-90 14 %.0f)" text-anchor="middle">%s</text>`, mt+(h-mt-mb)/2, mt+(h-mt-mb)/2, html.EscapeString(p.ylabel))
	for i, s := range p.series {
		c := palette[i%len(palette)]
		var pts []string
		for j := range s.x {
			if math.IsNaN(s.y[j]) || math.IsInf(s.y[j], 0) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.x[j]), py(s.y[j])))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(s.x[j]), py(s.y[j]), c)
			if s.lo != nil && !math.IsNaN(s.lo[j]) {
				fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, px(s.x[j]), px(s.x[j]), py(s.lo[j]), py(s.hi[j]), c)
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s"/>`, strings.Join(pts, " "), c)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`, w-mr+8, mt+12+14*float64(i), c, html.EscapeString(s.name))
	}
	for _, l := range p.lines {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#444" stroke-dasharray="6,3"/>`, px(l[0][0]), px(l[1][0]), py(l[0][1]), py(l[1][1]))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// lrCurves is one plot per swept width: each γ's selection loss against the learning rate at the sweep's
// longest trials (the rung the choice was made on), the chosen LR named in the legend.
func lrCurves(res *Result) []string {
	var widths []int
	for _, t := range res.Tuned {
		if !slices.Contains(widths, t.Width) {
			widths = append(widths, t.Width)
		}
	}
	var out []string
	for _, w := range widths {
		p := svgPlot{title: fmt.Sprintf("learning-rate sweep at width %d (selection slice, longest trials)", w), xlabel: "peak learning rate (log)", ylabel: "selection loss (nats/token)", logX: true}
		for _, t := range res.Tuned {
			if t.Width != w {
				continue
			}
			last := 0
			for _, pt := range t.Result.Curve {
				last = max(last, pt.Steps)
			}
			s := svgSeries{name: fmt.Sprintf("γ=%g → %.3g", t.Gamma, t.Result.LR)}
			for _, pt := range t.Result.Curve {
				if pt.Steps == last {
					s.x, s.y = append(s.x, pt.LR), append(s.y, pt.Loss)
				}
			}
			p.series = append(p.series, s)
		}
		out = append(out, p.render())
	}
	return out
}

// gainFigure is the paired γ = 1 gain L(γ=0.5) − L(γ=1) against ln N over the ladder, each width's mean with its
// t-interval (at claim 2's per-comparison α), and the fitted line of the mean per-seed slope with its interval.
func gainFigure(res *Result) (string, string) {
	if res.Inputs == nil || len(res.Inputs.Ladder) == 0 {
		return svgPlot{title: "γ = 1 gain against ln N"}.render(), "no ladder"
	}
	alpha := ClaimAlpha / 2
	s := svgSeries{name: "mean gain, t-interval"}
	var xs, ys []float64
	for _, r := range res.Inputs.Ladder {
		d := gain(r.G05.Overall(), r.G1.Overall())
		e := stats.Mean(d.Values, d.Seeds, alpha)
		s.x, s.y, s.lo, s.hi = append(s.x, r.N), append(s.y, e.Mean), append(s.lo, e.Lo), append(s.hi, e.Hi)
		if !math.IsNaN(e.Mean) {
			xs, ys = append(xs, math.Log(r.N)), append(ys, e.Mean)
		}
	}
	p := svgPlot{title: "paired γ = 1 gain against ln N (both fixes)", xlabel: "N, non-embedding parameters (log)", ylabel: "L(γ=0.5) − L(γ=1), nats", logX: true, series: []svgSeries{s}}
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
				p.lines = append(p.lines, [2][2]float64{{math.Exp(a), my + e.Mean*(a-mx)}, {math.Exp(b), my + e.Mean*(b-mx)}})
				note = fmt.Sprintf("slope %+.4f nats per ln N, %.3g%% CI [%+.4f, %+.4f] on %d df (n = %d seeds); dashed: the mean slope through the mean point", e.Mean, 100*(1-e.Alpha), e.Lo, e.Hi, e.DF, e.N)
			}
		}
	}
	return p.render(), note
}

// mechanismTable is each arm's loss beside its final norm saturation and sink rate.
func mechanismTable(arms []ArmSummary) string {
	var b strings.Builder
	b.WriteString("<table><tr><th>group</th><th>arm</th><th>seeds</th><th>γ</th><th>width</th><th>ε</th><th>gate</th><th>LR</th><th>val loss (± SE)</th><th>norm saturation (mean, first norm)</th><th>sink rate %</th></tr>\n")
	for _, a := range arms {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%g</td><td>%d</td><td>%.3g</td><td>%s</td><td>%.3g</td><td>%s ± %s</td><td>%s, %s</td><td>%s</td></tr>\n",
			html.EscapeString(a.Group), html.EscapeString(a.Arm), a.Seeds, a.Gamma, a.Width, a.Eps, html.EscapeString(a.Gate), a.LR,
			fmtNum("%.4f", a.Loss), fmtNum("%.4f", a.LossSE), fmtNum("%.3g", a.NormSaturation), fmtNum("%.3g", a.FirstNormSat), fmtNum("%.1f", a.SinkRate))
	}
	b.WriteString("</table>")
	return b.String()
}

// writeFigures writes FiguresFile.
func writeFigures(path string, res *Result) error {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=\"utf-8\"><title>smallinit reproduce: figures</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>smallinit reproduce: figures</h1><p>%d runs of %d steps, %d seeds per verdict arm, tier %s. %s</p>\n", res.Runs, res.Steps, res.Seeds, html.EscapeString(res.Tier), html.EscapeString(res.Smoke))
	b.WriteString("<h2>Learning-rate curves</h2><p>Each γ's selection loss (LR-selection slice, never the validation split) at the sweep's longest trials; the legend gives the chosen LR.</p>\n")
	for _, s := range lrCurves(res) {
		b.WriteString(s + "\n")
	}
	fig, note := gainFigure(res)
	fmt.Fprintf(&b, "<h2>γ = 1 gain against model size</h2>%s<p>%s</p>\n", fig, html.EscapeString(note))
	b.WriteString("<h2>Loss, norm saturation and sink rate per arm</h2><p>Whole validation split; saturation s = ε/(mean(x²)+ε) and sink rate (% of heads with α > 0.3) from each run's last diagnostics record, mean over seeds.</p>\n")
	b.WriteString(mechanismTable(res.Arms))
	b.WriteString("\n</body></html>\n")
	return atomicfile.Write(path, []byte(b.String()))
}
