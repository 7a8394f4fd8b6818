package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/recipe"
)

// Figure is one drawn figure of a report.
type Figure struct {
	ID      string        // HTML id, e.g. "loss-curves"
	Title   string        // heading
	SVG     string        // the inline <svg> element
	Caption string        // what was run and how to read it (plain text)
	Legend  []LegendEntry // series shown under the figure
	Points  int           // data points drawn: line vertices, markers, bars and heatmap cells
	Series  int           // lines, bar groups or heatmap panels drawn
	Extra   string        // trusted HTML placed after the legend (a colour bar)
}

// LegendEntry is one series of a figure's legend.
type LegendEntry struct {
	Label  string
	Color  color.RGBA
	Dashed bool
	Swatch bool // a filled box (bars) rather than a line
}

// Omitted is a figure that was not drawn, and why.
type Omitted struct {
	ID, Title, Reason string
}

// Figure IDs: Figure.ID and the id of the figure's HTML section, in page order.
const (
	FigLossCurves   = "loss-curves"
	FigValGamma     = "val-vs-gamma"
	FigFixes        = "fixes-2x2"
	FigLossSize     = "loss-vs-size"
	FigTrajectories = "weight-trajectories"
	FigHeatmaps     = "row-cosine-heatmaps"
	FigSink         = diagrec.FigureSink
	FigNorm         = diagrec.FigureNorm
	FigCompare      = "token-difficulty"
	FigCoordcheck   = "coordinate-check"
)

// armColor is an arm's colour, the same in every figure.
func (d *Data) armColor(a *Arm) color.RGBA {
	for i, b := range d.Arms {
		if a == b {
			return colorAt(i)
		}
	}
	return color.RGBA{0, 0, 0, 0xff}
}

func (d *Data) armIndex(a *Arm) int {
	for i, b := range d.Arms {
		if a == b {
			return i
		}
	}
	return 0
}

// armName is the arm's label with its seed count (distinct seeds: the same seed run twice is one).
func armName(a *Arm) string {
	seeds := map[string]bool{}
	for _, r := range a.Runs {
		seeds[r.Value(recipe.KeySeed)] = true
	}
	switch {
	case len(seeds) > 1 && len(seeds) == len(a.Runs):
		return fmt.Sprintf("%s (%d seeds)", a.Label, len(seeds))
	case len(a.Runs) > 1:
		return fmt.Sprintf("%s (%d runs, %d seeds)", a.Label, len(a.Runs), len(seeds))
	}
	return a.Label
}

// meanCurve averages the runs' metric by step: tokens and value per step, over the runs that logged it.
func meanCurve(runs []*Run, val bool) (xs, ys []float64) {
	type acc struct {
		tok  float64
		sum  float64
		n    int
		step int
	}
	by := map[int]*acc{}
	for _, r := range runs {
		for _, m := range r.Metrics {
			var v float64
			switch {
			case val && m.ValLoss != nil:
				v = *m.ValLoss
			case !val && m.Loss != 0:
				v = m.Loss
			default:
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			a := by[m.Step]
			if a == nil {
				a = &acc{tok: float64(m.Tokens), step: m.Step}
				by[m.Step] = a
			}
			a.sum += v
			a.n++
		}
	}
	var steps []int
	for s := range by {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	for _, s := range steps {
		a := by[s]
		xs, ys = append(xs, a.tok), append(ys, a.sum/float64(a.n))
	}
	return xs, ys
}

// figLossCurves draws the training and validation loss of every arm against tokens.
func (d *Data) figLossCurves() (*Figure, string) {
	f := &Figure{ID: FigLossCurves, Title: "Loss curves"}
	tr := newPlot("training loss", "tokens", "loss (nats/token)")
	va := newPlot("validation loss", "tokens", "loss (nats/token)")
	var runs []*Run
	nVal := 0
	for _, a := range d.Arms {
		i, c := d.armIndex(a), d.armColor(a)
		xs, ys := meanCurve(a.Runs, false)
		n := addLine(tr, finiteXYs(xs, ys, false, false), lineStyle(i), false)
		xs, ys = meanCurve(a.Runs, true)
		m := addLine(va, finiteXYs(xs, ys, false, false), lineStyle(i), true)
		if n+m > 0 {
			f.Points += n + m
			f.Series++
			nVal += m
			runs = append(runs, a.Runs...)
			f.Legend = append(f.Legend, LegendEntry{Label: armName(a), Color: c, Dashed: i >= len(palette)})
		}
	}
	if f.Points == 0 {
		return nil, "no run has logged a loss"
	}
	row := []*plot.Plot{tr}
	if nVal > 0 {
		row = append(row, va)
	}
	var err error
	if f.SVG, err = renderPlots([][]*plot.Plot{row}, vg.Points(780), vg.Points(300), f.Title); err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " Each line is an arm's mean over its seeds at each logged step; training loss is the " +
		"mean over the steps since the previous log line, validation loss is the training-time estimate measured every " +
		"train.eval_interval steps on the first train.eval_windows windows of data.val (the final losses elsewhere in this " +
		"report score every token of the validation split where a plan's summary.json holds them)."
	return f, ""
}

// valPoint is an arm's final validation loss over seeds.
type valPoint struct {
	arm      *Arm
	x        float64
	mean, se float64
	n        int
}

// seriesBy groups the arms with complete runs by their label without the keys drop selects; each series'
// points are sorted by x.
func (d *Data) seriesBy(drop func(string) bool, x func(*Arm) float64) (keys []string, labels map[string]string, pts map[string][]valPoint) {
	labels, pts = map[string]string{}, map[string][]valPoint{}
	for _, a := range d.Arms {
		mean, se, n := a.FinalVal()
		if n == 0 {
			continue
		}
		k, l := d.labelWithout(a, drop)
		if _, ok := pts[k]; !ok {
			keys = append(keys, k)
			labels[k] = l
		}
		pts[k] = append(pts[k], valPoint{arm: a, x: x(a), mean: mean, se: se, n: n})
	}
	for _, k := range keys {
		sort.SliceStable(pts[k], func(i, j int) bool { return pts[k][i].x < pts[k][j].x })
	}
	return keys, labels, pts
}

// seedNote says how many seeds stand behind the points and what the error bars are.
func seedNote(ps []valPoint) string {
	lo, hi := math.MaxInt, 0
	for _, p := range ps {
		lo, hi = min(lo, p.n), max(hi, p.n)
	}
	switch {
	case hi <= 1:
		return " One seed per point, so no error bars."
	case lo == hi:
		return fmt.Sprintf(" Points are the mean over %d seeds; error bars are ± one standard error of that mean.", lo)
	}
	return fmt.Sprintf(" Points are the mean over %d–%d seeds; error bars are ± one standard error (none where a point has one seed).", lo, hi)
}

// figValGamma draws the final validation loss against γ, one line per arm of the other keys (ε, gate, ...).
func (d *Data) figValGamma() (*Figure, string) {
	keys, labels, pts := d.seriesBy(func(k string) bool { return k == recipe.KeyGamma }, func(a *Arm) float64 { return a.Gamma })
	gammas := map[float64]bool{}
	for _, k := range keys {
		for _, p := range pts[k] {
			gammas[p.x] = true
		}
	}
	if len(gammas) < 2 {
		return nil, fmt.Sprintf("needs complete runs at two or more values of γ (have %d)", len(gammas))
	}
	f := &Figure{ID: FigValGamma, Title: "Validation loss against γ"}
	p := newPlot("final validation loss against init scale γ (σ = d_in^−γ)", "γ", "validation loss (nats/token)")
	var all []valPoint
	var runs []*Run
	for i, k := range keys {
		ps := pts[k]
		xs, ys, es := make([]float64, len(ps)), make([]float64, len(ps)), make([]float64, len(ps))
		for j, q := range ps {
			xs[j], ys[j], es[j] = q.x, q.mean, q.se
			runs = append(runs, q.arm.Complete()...)
		}
		f.Points += addLine(p, finiteXYs(xs, ys, false, false), lineStyle(i), true)
		addErrorBars(p, xs, ys, es, colorAt(i))
		f.Series++
		f.Legend = append(f.Legend, LegendEntry{Label: labels[k], Color: colorAt(i), Dashed: i >= len(palette)})
		all = append(all, ps...)
	}
	padY(p, 0.05)
	var err error
	if f.SVG, err = renderPlots([][]*plot.Plot{{p}}, vg.Points(560), vg.Points(340), f.Title); err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " Final validation loss of the complete runs (" + valLossSource(runs) + "), one line per " +
		"combination of the other varying keys; the study expects a U-shape with its minimum near γ = 1 once ε = 1e-12 and the gate are in." + seedNote(all)
	return f, ""
}

// figFixes draws the 2×2 of fixes: for each γ, bars for the default arm (ε = 1e-5, no gate), the fixed arm
// (ε = 1e-12 with a gate) and the single fixes when they were run.
func (d *Data) figFixes() (*Figure, string) {
	drop := func(k string) bool { return k == recipe.KeyGamma || k == recipe.KeyNormEps || k == recipe.KeyAttnGate }
	keys, labels, pts := d.seriesBy(drop, func(a *Arm) float64 { return a.Gamma })
	f := &Figure{ID: FigFixes, Title: "The 2×2 of fixes: γ × {default, fixed}"}
	var rows [][]*plot.Plot
	var runs []*Run
	var all []valPoint
	used := map[int]bool{}
	for _, k := range keys {
		byGamma := map[float64]map[int]valPoint{}
		for _, q := range pts[k] {
			if byGamma[q.x] == nil {
				byGamma[q.x] = map[int]valPoint{}
			}
			byGamma[q.x][fixKind(q.arm)] = q
		}
		var gammas []float64
		for g, kinds := range byGamma {
			_, def := kinds[0]
			_, fix := kinds[3]
			if def && fix {
				gammas = append(gammas, g)
			}
		}
		if len(gammas) == 0 || len(rows) == 4 {
			continue
		}
		sort.Float64s(gammas)
		kinds := map[int]bool{}
		for _, g := range gammas {
			for kind := range byGamma[g] {
				kinds[kind] = true
			}
		}
		var order []int
		for kind := 0; kind < 4; kind++ {
			if kinds[kind] {
				order = append(order, kind)
			}
		}
		title := "final validation loss"
		if labels[k] != "all runs" {
			title += ": " + labels[k]
		}
		p := newPlot(title, "", "validation loss (nats/token)")
		width := 0.8 / float64(len(order))
		lo, hi := math.Inf(1), math.Inf(-1)
		var ticks labelTicks
		for gi, g := range gammas {
			ticks.At = append(ticks.At, float64(gi))
			ticks.Labels = append(ticks.Labels, "γ = "+strconv.FormatFloat(g, 'g', -1, 64))
		}
		for oi, kind := range order {
			b := &bars{Width: width * 0.92, Color: fixColor(kind)}
			for gi, g := range gammas {
				q, ok := byGamma[g][kind]
				if !ok {
					continue
				}
				b.X = append(b.X, float64(gi)-0.4+width*(float64(oi)+0.5))
				b.Y = append(b.Y, q.mean)
				b.Err = append(b.Err, q.se)
				e := q.se
				if math.IsNaN(e) {
					e = 0
				}
				lo, hi = math.Min(lo, q.mean-e), math.Max(hi, q.mean+e)
				runs = append(runs, q.arm.Complete()...)
				all = append(all, q)
			}
			p.Add(b)
			f.Points += len(b.X)
			f.Series++
			used[kind] = true
		}
		p.X.Tick.Marker = ticks
		p.X.Min, p.X.Max = -0.5, float64(len(gammas))-0.5
		span := math.Max(hi-lo, 0.02*math.Abs(hi))
		p.Y.Min, p.Y.Max = lo-0.6*span, hi+0.25*span
		rows = append(rows, []*plot.Plot{p})
	}
	if len(rows) == 0 {
		return nil, "needs, at some γ, complete runs of both the default arm (ε = 1e-5, no gate) and the fixed arm (ε = 1e-12 with an attention gate)"
	}
	for kind := 0; kind < 4; kind++ {
		if used[kind] {
			f.Legend = append(f.Legend, LegendEntry{Label: fixNames[kind], Color: fixColor(kind), Swatch: true})
		}
	}
	var err error
	if f.SVG, err = renderPlots(rows, vg.Points(560), vg.Points(float64(300*len(rows))), f.Title); err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " Final validation loss by γ and fix (" + valLossSource(runs) + "); the y axis is cut above zero to show the differences." + seedNote(all)
	return f, ""
}

func fixColor(kind int) color.RGBA {
	return []color.RGBA{{0x9e, 0x9e, 0x9e, 0xff}, {0x6b, 0xae, 0xd6, 0xff}, {0xfd, 0xae, 0x6b, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}}[kind]
}

// figLossSize draws the final validation loss against the non-embedding parameter count N, one line per arm
// of the other keys, with L(N) = E + A·N^(−α) fitted where a line has four or more sizes (and law, when given).
func (d *Data) figLossSize(law *Law) (*Figure, string) {
	keys, labels, pts := d.seriesBy(isSizeKey, func(a *Arm) float64 { return float64(a.N) })
	most := 0 // the most sizes in one line: the gate's weights alone change N, so count within lines
	for _, k := range keys {
		xs := make([]float64, len(pts[k]))
		for i, q := range pts[k] {
			xs[i] = q.x
		}
		most = max(most, distinct(xs))
	}
	if most < 2 {
		return nil, fmt.Sprintf("needs complete runs of otherwise equal configs at two or more model sizes (have at most %d)", most)
	}
	f := &Figure{ID: FigLossSize, Title: "Loss against model size N"}
	p := newPlot("final validation loss against non-embedding parameters N", "N (non-embedding parameters)", "validation loss (nats/token)")
	useLogX(p)
	var runs []*Run
	var all []valPoint
	var fits, refused []string
	nmin, nmax := math.Inf(1), math.Inf(-1)
	for i, k := range keys {
		ps := pts[k]
		xs, ys, es := make([]float64, len(ps)), make([]float64, len(ps)), make([]float64, len(ps))
		for j, q := range ps {
			xs[j], ys[j], es[j] = q.x, q.mean, q.se
			nmin, nmax = math.Min(nmin, q.x), math.Max(nmax, q.x)
			runs = append(runs, q.arm.Complete()...)
		}
		all = append(all, ps...)
		f.Points += addLine(p, finiteXYs(xs, ys, true, false), lineStyle(i), true)
		addErrorBars(p, xs, ys, es, colorAt(i))
		f.Series++
		f.Legend = append(f.Legend, LegendEntry{Label: labels[k], Color: colorAt(i)})
		if distinct(xs) >= fit.MinSizes {
			points := make([]fit.Point, len(xs))
			for j := range xs {
				points[j] = fit.Point{X: xs[j], Y: ys[j]}
			}
			fitted, err := fit.Fit(points)
			if err != nil {
				refused = append(refused, labels[k]+": "+err.Error())
			} else {
				fl := Law{PowerLaw: fitted.PowerLaw}
				fx, fy := fl.curve(xs[0], xs[len(xs)-1], 60)
				sty := lineStyle(i)
				sty.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				sty.Width = vg.Points(1)
				f.Points += addLine(p, finiteXYs(fx, fy, true, false), sty, false)
				f.Legend = append(f.Legend, LegendEntry{Label: "fit " + labels[k] + ": " + fl.String(), Color: colorAt(i), Dashed: true})
				fits = append(fits, labels[k])
			}
		}
	}
	if law != nil && !math.IsInf(nmin, 0) {
		lo, hi := nmin, nmax
		if lo == hi {
			lo, hi = lo/2, hi*2
		}
		fx, fy := law.curve(lo, hi, 60)
		sty := draw.LineStyle{Color: color.RGBA{0, 0, 0, 0xff}, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
		f.Points += addLine(p, finiteXYs(fx, fy, true, false), sty, false)
		name := law.Source
		if name == "" {
			name = "given law"
		}
		f.Legend = append(f.Legend, LegendEntry{Label: name + ": " + law.String(), Color: color.RGBA{0, 0, 0, 0xff}, Dashed: true})
	}
	padY(p, 0.05)
	var err error
	if f.SVG, err = renderPlots([][]*plot.Plot{{p}}, vg.Points(600), vg.Points(340), f.Title); err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " Final validation loss: " + valLossSource(runs) + ". N counts every parameter except the token embedding and an untied LM head."
	if len(fits) > 0 {
		f.Caption += " Dashed: L(N) = E + A·N^(−α) fitted by least squares (fit.Fit, docs/definitions.md §4) to the means of " + strings.Join(fits, "; ") + "."
	}
	if len(refused) > 0 {
		f.Caption += " No law is drawn for " + strings.Join(refused, "; ") + "."
	}
	if len(fits)+len(refused) == 0 {
		f.Caption += fmt.Sprintf(" No line has %d or more sizes, so no law is fitted here.", fit.MinSizes)
	}
	f.Caption += seedNote(all)
	return f, ""
}

func distinct(xs []float64) int {
	m := map[float64]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return len(m)
}

// classOrder lists the tensor classes seen in the arms' diagnostics, in a stable order.
func classOrder(arms []*Arm) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range arms {
		for _, r := range a.Runs {
			for _, p := range r.Diagnostics {
				for _, c := range p.Classes {
					if !seen[c.Class] {
						seen[c.Class] = true
						out = append(out, c.Class)
					}
				}
			}
		}
	}
	return out
}

// classCurve averages a class metric over the arm's runs by diagnostics step.
func classCurve(a *Arm, class string, metric func(diagrec.ClassSummary) float64) (xs, ys []float64) {
	sum, n := map[int]float64{}, map[int]int{}
	for _, r := range a.Runs {
		for _, p := range r.Diagnostics {
			for _, c := range p.Classes {
				if v := metric(c); c.Class == class && !math.IsNaN(v) && !math.IsInf(v, 0) {
					sum[p.Step] += v
					n[p.Step]++
				}
			}
		}
	}
	var steps []int
	for s := range sum {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	for _, s := range steps {
		xs, ys = append(xs, float64(s)), append(ys, sum[s]/float64(n[s]))
	}
	return xs, ys
}

// figTrajectories draws, per arm, the stable rank and the row-cosine ratio of every tensor class over the
// diagnostics steps: condensation (rows align, stable rank drops) and then expansion.
func (d *Data) figTrajectories(maxArms int) (*Figure, string) {
	var arms []*Arm
	skipped := 0
	for _, a := range d.Arms {
		steps := map[int]bool{}
		for _, r := range a.Runs {
			for _, p := range r.Diagnostics {
				if len(p.Classes) > 0 {
					steps[p.Step] = true
				}
			}
		}
		if len(steps) >= 2 {
			if len(arms) < maxArms {
				arms = append(arms, a)
			} else {
				skipped++
			}
		}
	}
	if len(arms) == 0 {
		return nil, "needs an arm with weight diagnostics at two or more steps (train.diagnostics_interval > 0)"
	}
	classes := classOrder(arms)
	var metrics []diagrec.WeightMetric // the table's plotted metrics, one panel each
	var names []string
	for _, m := range diagrec.WeightMetrics {
		if m.Axis != "" {
			metrics, names = append(metrics, m), append(names, m.Name)
		}
	}
	f := &Figure{ID: FigTrajectories, Title: "Weight trajectories: " + strings.Join(names, " and ") + " per tensor class"}
	var rows [][]*plot.Plot
	var runs []*Run
	for _, a := range arms {
		var row []*plot.Plot
		for _, m := range metrics {
			p := newPlot(m.Name+" — "+a.Label, "step", m.Axis)
			if m.LogY {
				useLogY(p)
			}
			for ci, class := range classes {
				xs, ys := classCurve(a, class, func(c diagrec.ClassSummary) float64 { return c.Mean(m.Key) })
				f.Points += addLine(p, finiteXYs(xs, ys, false, m.LogY), lineStyle(ci), len(xs) <= 12)
			}
			row = append(row, p)
		}
		f.Series += len(metrics) * len(classes)
		rows = append(rows, row)
		runs = append(runs, a.Runs...)
	}
	for ci, class := range classes {
		f.Legend = append(f.Legend, LegendEntry{Label: class, Color: colorAt(ci), Dashed: ci >= len(palette)})
	}
	var err error
	if f.SVG, err = renderPlots(rows, vg.Points(780), vg.Points(float64(230*len(rows))), f.Title); err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " One row per arm (mean over its seeds), one line per tensor class (mean over layers); " +
		"from diagnostics.jsonl. Condensation shows as a falling stable rank and a rising cosine ratio (rows align), expansion as the reverse."
	if skipped > 0 {
		f.Caption += fmt.Sprintf(" %d more arm%s with diagnostics not shown (--max-arms).", skipped, plural(skipped))
	}
	return f, ""
}

// logTicks labels 1, 2 and 5 times powers of ten within the range (all powers of ten when it spans more than
// two decades).
type logTicks struct{}

// Ticks returns the tick marks between min and max.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return plot.LogTicks{Prec: -1}.Ticks(math.Max(min, 1e-300), math.Max(max, 1e-300))
	}
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	mults := []float64{1, 2, 5}
	if hi-lo > 2 {
		mults = []float64{1}
	}
	var out []plot.Tick
	for e := lo; e <= hi; e++ {
		for m := 1.0; m < 10; m++ {
			v := m * math.Pow(10, e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			for _, mm := range mults {
				if m == mm {
					t.Label = strconv.FormatFloat(v, 'g', 3, 64)
				}
			}
			out = append(out, t)
		}
	}
	labels := 0
	for _, t := range out {
		if t.Label != "" {
			labels++
		}
	}
	if labels < 2 { // a narrow range: label every tick, or fall back to plain ticks
		out = out[:0]
		for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
			if t.Value > 0 {
				if t.Label != "" {
					t.Label = strconv.FormatFloat(t.Value, 'g', 6, 64)
				}
				out = append(out, t)
			}
		}
	}
	return out
}

// lastLayers averages, over the arm's runs, a per-layer metric of each run's last diagnostics line.
func lastLayers(a *Arm, metric func(diagrec.LayerActivations) float64) (xs, ys []float64, steps []int) {
	sum, n := map[int]float64{}, map[int]int{}
	for _, r := range a.Runs {
		p := r.LastDiag()
		if p == nil {
			continue
		}
		steps = append(steps, p.Step)
		for _, l := range p.Activations.Layers {
			if v := metric(l); !math.IsNaN(v) && !math.IsInf(v, 0) {
				sum[l.Layer] += v
				n[l.Layer]++
			}
		}
	}
	var layers []int
	for l := range sum {
		layers = append(layers, l)
	}
	sort.Ints(layers)
	for _, l := range layers {
		xs, ys = append(xs, float64(l)), append(ys, sum[l]/float64(n[l]))
	}
	return xs, ys, steps
}

// layerPanels draws a panel for each metric of diagrec.LayerMetrics in figure fig: its value against the layer,
// one line per arm (from each run's last diagnostics line, mean over the arm's seeds), with the y range its
// row asks for. The points drawn are added to f.
func (d *Data) layerPanels(fig string, arms []*Arm, f *Figure) []*plot.Plot {
	var ps []*plot.Plot
	var ms []diagrec.LayerMetric
	for _, m := range diagrec.LayerMetrics {
		if m.Figure != fig {
			continue
		}
		p := newPlot(m.Title, "layer", m.Axis)
		for _, a := range arms {
			xs, ys, _ := lastLayers(a, m.Of)
			f.Points += addLine(p, finiteXYs(xs, ys, false, false), lineStyle(d.armIndex(a)), true)
		}
		p.X.Tick.Marker = intTicks{}
		ps, ms = append(ps, p), append(ms, m)
	}
	lo, hi, shared := math.Inf(1), math.Inf(-1), false
	for i, p := range ps {
		if ms[i].SharedY {
			shared = true
			lo, hi = math.Min(lo, p.Y.Min), math.Max(hi, math.Max(p.Y.Max, ms[i].YAtLeast))
			continue
		}
		if ms[i].YFrom0 {
			p.Y.Min = 0
		}
		if ms[i].YAtLeast != 0 {
			p.Y.Max = math.Max(p.Y.Max, ms[i].YAtLeast)
		}
	}
	if shared {
		for i, p := range ps {
			if ms[i].SharedY {
				p.Y.Min, p.Y.Max = lo, hi
				padY(p, 0.04)
			}
		}
	}
	return ps
}

// activationArms are the arms with an activation diagnostics line, and the steps of those lines.
func (d *Data) activationArms() (arms []*Arm, steps map[int]bool) {
	steps = map[int]bool{}
	for _, a := range d.Arms {
		has := false
		for _, r := range a.Runs {
			if p := r.LastDiag(); p != nil {
				has = true
				steps[p.Step] = true
			}
		}
		if has {
			arms = append(arms, a)
		}
	}
	return arms, steps
}

func stepList(steps map[int]bool) string {
	var s []string
	for st := range steps {
		s = append(s, strconv.Itoa(st))
	}
	return strings.Join(sortedValues(toSet(s)), ", ")
}

// figSink draws the first-token attention mass and the sink rate per layer, from each arm's last diagnostics.
func (d *Data) figSink() (*Figure, string) {
	arms, steps := d.activationArms()
	if len(arms) == 0 {
		return nil, "needs activation diagnostics (diagnostics.jsonl)"
	}
	f := &Figure{ID: FigSink, Title: "Attention sink: first-token mass and sink rate per layer"}
	var runs []*Run
	gates := map[string]bool{}
	for _, a := range arms {
		i := d.armIndex(a)
		f.Series++
		f.Legend = append(f.Legend, LegendEntry{Label: armName(a), Color: d.armColor(a), Dashed: i >= len(palette)})
		runs = append(runs, a.Runs...)
		gates[a.Gate] = true
	}
	var err error
	if f.SVG, err = renderPlots([][]*plot.Plot{d.layerPanels(diagrec.FigureSink, arms, f)}, vg.Points(780), vg.Points(300), f.Title); err != nil {
		return nil, err.Error()
	}
	var gs []string
	for g := range gates {
		gs = append(gs, g)
	}
	f.Caption = d.describe(runs) + fmt.Sprintf(" From each run's last diagnostics line (step %s), mean over the arm's seeds; attention gate: %s. "+
		"α is a head's mean attention to the first token over all queries; a head with α > %g is a sink. The study expects the gate to remove the sink.",
		stepList(steps), strings.Join(sortedValues(toSet(gs)), ", "), diagrec.SinkThreshold)
	return f, ""
}

// figNorm draws the norms' output RMS r = sqrt(m/(m+ε)) per layer: r < 1 means ε eats into the signal.
func (d *Data) figNorm() (*Figure, string) {
	arms, steps := d.activationArms()
	if len(arms) == 0 {
		return nil, "needs activation diagnostics (diagnostics.jsonl)"
	}
	f := &Figure{ID: FigNorm, Title: "Norm saturation: output RMS r per layer"}
	var runs []*Run
	eps := map[string]bool{}
	for _, a := range arms {
		i := d.armIndex(a)
		f.Series++
		f.Legend = append(f.Legend, LegendEntry{Label: armName(a), Color: d.armColor(a), Dashed: i >= len(palette)})
		runs = append(runs, a.Runs...)
		eps[strconv.FormatFloat(a.NormEps, 'g', -1, 64)] = true
	}
	var err error
	if f.SVG, err = renderPlots([][]*plot.Plot{d.layerPanels(diagrec.FigureNorm, arms, f)}, vg.Points(780), vg.Points(300), f.Title); err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + fmt.Sprintf(" From each run's last diagnostics line (step %s), mean over seeds and probe tokens; ε ∈ {%s}. "+
		"m is the mean square under the root; with small activations (γ = 1) and ε = 1e-5, r falls below 1.",
		stepList(steps), strings.Join(sortedValues(eps), ", "))
	return f, ""
}
