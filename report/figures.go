package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

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
	ch := Chart{ID: FigLossCurves, Title: "Loss curves", Width: 780, RowHeight: 300}
	tr := Panel{Title: "training loss", XLabel: "tokens", YLabel: "loss (nats/token)", Tight: true}
	va := Panel{Title: "validation loss", XLabel: "tokens", YLabel: "loss (nats/token)", Tight: true}
	var runs []*Run
	nTrain, nVal := 0, 0
	for _, a := range d.Arms {
		i, c := d.armIndex(a), d.armColor(a)
		xs, ys := meanCurve(a.Runs, false)
		n := len(finiteXYs(xs, ys, false, false))
		tr.Series = append(tr.Series, Series{X: xs, Y: ys, Color: i + 1})
		xs, ys = meanCurve(a.Runs, true)
		m := len(finiteXYs(xs, ys, false, false))
		va.Series = append(va.Series, Series{X: xs, Y: ys, Color: i + 1, Marks: true})
		if n+m > 0 {
			nTrain, nVal = nTrain+n, nVal+m
			runs = append(runs, a.Runs...)
			ch.Legend = append(ch.Legend, LegendEntry{Label: armName(a), Color: c, Dashed: i >= len(palette)})
		}
	}
	if nTrain+nVal == 0 {
		return nil, "no run has logged a loss"
	}
	ch.Rows = [][]Panel{{tr}}
	if nVal > 0 {
		ch.Rows[0] = append(ch.Rows[0], va)
	}
	f, err := DrawChart(ch)
	if err != nil {
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
	ch := Chart{ID: FigValGamma, Title: "Validation loss against γ", Width: 560, RowHeight: 340}
	p := Panel{Title: "final validation loss against init scale γ (σ = d_in^−γ)", XLabel: "γ", YLabel: "validation loss (nats/token)"}
	var all []valPoint
	var runs []*Run
	for i, k := range keys {
		ps := pts[k]
		xs, ys, es := make([]float64, len(ps)), make([]float64, len(ps)), make([]float64, len(ps))
		for j, q := range ps {
			xs[j], ys[j], es[j] = q.x, q.mean, q.se
			runs = append(runs, q.arm.Complete()...)
		}
		p.Series = append(p.Series, Series{X: xs, Y: ys, Err: es, Marks: true})
		ch.Legend = append(ch.Legend, LegendEntry{Label: labels[k], Color: colorAt(i), Dashed: i >= len(palette)})
		all = append(all, ps...)
	}
	lo, hi, sd, measured := pointsRange(all)
	p.YRange = []float64{0, 0}
	p.YRange[0], p.YRange[1] = noiseRange(lo, hi, sd)
	ch.Rows = [][]Panel{{p}}
	f, err := DrawChart(ch)
	if err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " Final validation loss of the complete runs (" + valLossSource(runs) + "), one line per " +
		"combination of the other varying keys; the study expects a U-shape with its minimum near γ = 1 once ε = 1e-12 and the gate are in." +
		seedNote(all) + noiseCaption(sd, measured)
	return f, ""
}

// pointsRange is the extent of final-loss points with their error bars, and the seed-to-seed SD they are
// judged against (seedNoise).
func pointsRange(ps []valPoint) (lo, hi, sd float64, measured bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	ses, ns := make([]float64, len(ps)), make([]int, len(ps))
	for i, q := range ps {
		e := q.se
		if math.IsNaN(e) {
			e = 0
		}
		lo, hi = math.Min(lo, q.mean-e), math.Max(hi, q.mean+e)
		ses[i], ns[i] = q.se, q.n
	}
	sd, measured = seedNoise(ses, ns)
	return lo, hi, sd, measured
}

// figFixes draws the 2×2 of fixes: for each γ, bars for the default arm (ε = 1e-5, no gate), the fixed arm
// (ε = 1e-12 with a gate) and the single fixes when they were run.
func (d *Data) figFixes() (*Figure, string) {
	drop := func(k string) bool { return k == recipe.KeyGamma || k == recipe.KeyNormEps || k == recipe.KeyAttnGate }
	keys, labels, pts := d.seriesBy(drop, func(a *Arm) float64 { return a.Gamma })
	ch := Chart{ID: FigFixes, Title: "The 2×2 of fixes: γ × {default, fixed}", Width: 560, RowHeight: 300}
	var runs []*Run
	var all []valPoint
	var noiseSD float64
	var noiseMeasured bool
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
		if len(gammas) == 0 || len(ch.Rows) == 4 {
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
		p := Panel{Title: title, YLabel: "validation loss (nats/token)", XRange: []float64{-0.5, float64(len(gammas)) - 0.5}}
		width := 0.8 / float64(len(order))
		var panel []valPoint
		for gi, g := range gammas {
			p.XTicks = append(p.XTicks, Tick{At: float64(gi), Label: "γ = " + strconv.FormatFloat(g, 'g', -1, 64)})
		}
		for oi, kind := range order {
			b := Bars{Width: width * 0.92, Color: fixColor(kind)}
			for gi, g := range gammas {
				q, ok := byGamma[g][kind]
				if !ok {
					continue
				}
				b.X = append(b.X, float64(gi)-0.4+width*(float64(oi)+0.5))
				b.Y = append(b.Y, q.mean)
				b.Err = append(b.Err, q.se)
				runs = append(runs, q.arm.Complete()...)
				panel = append(panel, q)
			}
			p.Bars = append(p.Bars, b)
			used[kind] = true
		}
		// The bars' cut axis spans at least four seed-to-seed SDs, with room below the shortest bar.
		lo, hi, sd, measured := pointsRange(panel)
		noiseSD, noiseMeasured = math.Max(noiseSD, sd), noiseMeasured || measured
		span := math.Max(hi-lo, 4*sd)
		p.YRange = []float64{lo - 0.6*span, hi + 0.25*span}
		ch.Rows = append(ch.Rows, []Panel{p})
		all = append(all, panel...)
	}
	if len(ch.Rows) == 0 {
		return nil, "needs, at some γ, complete runs of both the default arm (ε = 1e-5, no gate) and the fixed arm (ε = 1e-12 with an attention gate)"
	}
	for kind := 0; kind < 4; kind++ {
		if used[kind] {
			ch.Legend = append(ch.Legend, LegendEntry{Label: fixNames[kind], Color: fixColor(kind), Swatch: true})
		}
	}
	f, err := DrawChart(ch)
	if err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " Final validation loss by γ and fix (" + valLossSource(runs) + "); the y axis is cut above zero." +
		seedNote(all) + noiseCaption(noiseSD, noiseMeasured)
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
	ch := Chart{ID: FigLossSize, Title: "Loss against model size N", Width: 600, RowHeight: 340}
	p := Panel{Title: "final validation loss against non-embedding parameters N", XLabel: "N (non-embedding parameters)",
		YLabel: "validation loss (nats/token)", LogX: true}
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
		p.Series = append(p.Series, Series{X: xs, Y: ys, Err: es, Marks: true, Color: i + 1})
		ch.Legend = append(ch.Legend, LegendEntry{Label: labels[k], Color: colorAt(i)})
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
				p.Series = append(p.Series, Series{X: fx, Y: fy, Color: i + 1, Width: 1, Dashes: []float64{5, 3}})
				ch.Legend = append(ch.Legend, LegendEntry{Label: "fit " + labels[k] + ": " + fl.String(), Color: colorAt(i), Dashed: true})
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
		p.Series = append(p.Series, Series{X: fx, Y: fy, Black: true, Width: 1.2, Dashes: []float64{2, 2}})
		name := law.Source
		if name == "" {
			name = "given law"
		}
		ch.Legend = append(ch.Legend, LegendEntry{Label: name + ": " + law.String(), Color: color.RGBA{0, 0, 0, 0xff}, Dashed: true})
	}
	ch.Rows = [][]Panel{{p}}
	f, err := DrawChart(ch)
	if err != nil {
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
	ch := Chart{ID: FigTrajectories, Title: "Weight trajectories: " + strings.Join(names, " and ") + " per tensor class", Width: 780, RowHeight: 230}
	var runs []*Run
	for _, a := range arms {
		var row []Panel
		for _, m := range metrics {
			p := Panel{Title: m.Name + " — " + a.Label, XLabel: "step", YLabel: m.Axis, LogY: m.LogY, Tight: true}
			for _, class := range classes {
				xs, ys := classCurve(a, class, func(c diagrec.ClassSummary) float64 { return c.Mean(m.Key) })
				p.Series = append(p.Series, Series{X: xs, Y: ys, Marks: len(xs) <= 12})
			}
			row = append(row, p)
		}
		ch.Rows = append(ch.Rows, row)
		runs = append(runs, a.Runs...)
	}
	shareColumns(ch.Rows)
	for ci, class := range classes {
		ch.Legend = append(ch.Legend, LegendEntry{Label: class, Color: colorAt(ci), Dashed: ci >= len(palette)})
	}
	f, err := DrawChart(ch)
	if err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + " One row per arm (mean over its seeds), one line per tensor class (mean over layers); " +
		"from diagnostics.jsonl. Every row shares its column's axes, so arms compare by position. " +
		"Condensation shows as a falling stable rank and a rising cosine ratio (rows align), expansion as the reverse."
	if skipped > 0 {
		f.Caption += fmt.Sprintf(" %d more arm%s with diagnostics not shown (--max-arms).", skipped, plural(skipped))
	}
	return f, ""
}

// shareColumns gives every panel of a column the column's x and y ranges: the extent of all its panels' finite
// points (positive ones on a log axis), padded by 5% (of the range, or of its logarithm), so that the rows of a
// small multiple are read on one scale instead of each zoomed to its own data.
func shareColumns(rows [][]Panel) {
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	for j := 0; j < cols; j++ {
		xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		logY := false
		for _, r := range rows {
			if j >= len(r) {
				continue
			}
			p := r[j]
			logY = logY || p.LogY
			for _, s := range p.Series {
				for _, pt := range finiteXYs(s.X, s.Y, p.LogX, p.LogY) {
					xlo, xhi, ylo, yhi = math.Min(xlo, pt.X), math.Max(xhi, pt.X), math.Min(ylo, pt.Y), math.Max(yhi, pt.Y)
				}
			}
		}
		if math.IsInf(ylo, 0) || math.IsInf(xlo, 0) {
			continue
		}
		if logY {
			f := math.Pow(yhi/ylo, 0.05)
			ylo, yhi = ylo/f, yhi*f
		} else {
			d := 0.05 * (yhi - ylo)
			ylo, yhi = ylo-d, yhi+d
		}
		for i := range rows {
			if j < len(rows[i]) {
				rows[i][j].XRange, rows[i][j].YRange = []float64{xlo, xhi}, []float64{ylo, yhi}
			}
		}
	}
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
	if math.Log10(max/min) > 2 { // more than two decades: the powers of ten alone
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
					t.Label = plainLabel(v)
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
					t.Label = plainLabel(t.Value)
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

// layerPanels are the panels of figure fig, one for each metric of diagrec.LayerMetrics that names it: its value
// against the layer, one line per arm in the arm's colour (from each run's last diagnostics line, mean over the
// arm's seeds), with the y range its row asks for (panels of a shared range span all their data, widened by 4%).
func (d *Data) layerPanels(fig string, arms []*Arm) []Panel {
	var ps []Panel
	var shared []int
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range diagrec.LayerMetrics {
		if m.Figure != fig {
			continue
		}
		p := Panel{Title: m.Title, XLabel: "layer", YLabel: m.Axis, IntX: true, Tight: true, YFrom0: m.YFrom0, YAtLeast: m.YAtLeast}
		for _, a := range arms {
			xs, ys, _ := lastLayers(a, m.Of)
			p.Series = append(p.Series, Series{X: xs, Y: ys, Color: d.armIndex(a) + 1, Marks: true})
			if m.SharedY {
				for _, pt := range finiteXYs(xs, ys, false, false) {
					lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
				}
			}
		}
		if m.SharedY {
			p.YFrom0, p.YAtLeast = false, 0
			hi = math.Max(hi, m.YAtLeast)
			shared = append(shared, len(ps))
		}
		ps = append(ps, p)
	}
	if len(shared) > 0 && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		if hi > lo {
			d := (hi - lo) * 0.04
			lo, hi = lo-d, hi+d
		}
		for _, i := range shared {
			ps[i].YRange = []float64{lo, hi}
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
	ch := Chart{ID: diagrec.FigureSink, Title: "Attention sink: first-token mass and sink rate per layer", Width: 780, RowHeight: 300,
		Rows: [][]Panel{d.layerPanels(diagrec.FigureSink, arms)}}
	var runs []*Run
	gates := map[string]bool{}
	for _, a := range arms {
		i := d.armIndex(a)
		ch.Legend = append(ch.Legend, LegendEntry{Label: armName(a), Color: d.armColor(a), Dashed: i >= len(palette)})
		runs = append(runs, a.Runs...)
		gates[a.Gate] = true
	}
	f, err := DrawChart(ch)
	if err != nil {
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
	ch := Chart{ID: diagrec.FigureNorm, Title: "Norm saturation: output RMS r per layer", Width: 780, RowHeight: 300,
		Rows: [][]Panel{d.layerPanels(diagrec.FigureNorm, arms)}}
	var runs []*Run
	eps := map[string]bool{}
	for _, a := range arms {
		i := d.armIndex(a)
		ch.Legend = append(ch.Legend, LegendEntry{Label: armName(a), Color: d.armColor(a), Dashed: i >= len(palette)})
		runs = append(runs, a.Runs...)
		eps[strconv.FormatFloat(a.NormEps, 'g', -1, 64)] = true
	}
	f, err := DrawChart(ch)
	if err != nil {
		return nil, err.Error()
	}
	f.Caption = d.describe(runs) + fmt.Sprintf(" From each run's last diagnostics line (step %s), mean over seeds and probe tokens; ε ∈ {%s}. "+
		"m is the mean square under the root; with small activations (γ = 1) and ε = 1e-5, r falls below 1.",
		stepList(steps), strings.Join(sortedValues(eps), ", "))
	return f, ""
}
