package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette is Tableau 10: distinct colours for up to ten series (then it repeats with other dashes).
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

func colorAt(i int) color.RGBA { return palette[i%len(palette)] }

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}}

// lineStyle is series i's line: its colour, and from the eleventh series on a dash pattern too.
func lineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: colorAt(i), Width: vg.Points(1.5), Dashes: dashes[(i/len(palette))%len(dashes)]}
}

// sansFont is the plots' font: Liberation Sans, metric-compatible with Arial, which browsers substitute.
var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot is a plot with a title, axis labels, a light grid and sans-serif text.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, ylabel
	p.Title.TextStyle.Font = font.From(sansFont, 12)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sansFont, 11)
		ax.Tick.Label.Font = font.From(sansFont, 9)
		ax.Tick.Marker = distinctTicks{}
	}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.Gray{0xe0}, color.Gray{0xe0}
	p.Add(g)
	return p
}

// finiteXYs keeps the points whose coordinates are finite (and positive on a log axis).
func finiteXYs(xs, ys []float64, logX, logY bool) plotter.XYs {
	var out plotter.XYs
	for i := range xs {
		x, y := xs[i], ys[i]
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) || (logX && x <= 0) || (logY && y <= 0) {
			continue
		}
		out = append(out, plotter.XY{X: x, Y: y})
	}
	return out
}

// addLine adds a line, with point markers when marks (or when it has one point); it returns the points drawn.
// Legends are drawn in HTML under each figure, so that they never hide data.
func addLine(p *plot.Plot, pts plotter.XYs, sty draw.LineStyle, marks bool) int {
	if len(pts) == 0 {
		return 0
	}
	if len(pts) > 1 {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return 0
		}
		l.LineStyle = sty
		p.Add(l)
	}
	if marks || len(pts) == 1 {
		s, err := plotter.NewScatter(pts)
		if err == nil {
			s.GlyphStyle = draw.GlyphStyle{Color: sty.Color, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
			p.Add(s)
		}
	}
	return len(pts)
}

// errPoints are points with symmetric y error bars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// addErrorBars draws ±err around each point whose err is finite and positive.
func addErrorBars(p *plot.Plot, xs, ys, errs []float64, c color.Color) int {
	var e errPoints
	for i := range xs {
		if math.IsNaN(errs[i]) || math.IsInf(errs[i], 0) || errs[i] <= 0 || math.IsNaN(ys[i]) {
			continue
		}
		e.XYs = append(e.XYs, plotter.XY{X: xs[i], Y: ys[i]})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{errs[i], errs[i]})
	}
	if len(e.XYs) == 0 {
		return 0
	}
	b, err := plotter.NewYErrorBars(e)
	if err != nil {
		return 0
	}
	b.LineStyle.Color = c
	b.LineStyle.Width = vg.Points(1)
	p.Add(b)
	return len(e.XYs)
}

// bars is a bar chart in data coordinates: bar i is centred on X[i], Width wide, from 0 to Y[i], with an
// optional error bar ±Err[i] (NaN or 0: none). It exists because gonum's BarChart offsets bars in canvas
// units, which error bars in data units cannot follow.
type bars struct {
	X, Y, Err []float64
	Width     float64
	Color     color.Color
}

// Plot draws the bars and their error bars.
func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	base := 0.0
	if p.Y.Scale != nil {
		if _, ok := p.Y.Scale.(plot.LogScale); ok {
			base = p.Y.Min
		}
	}
	base = math.Max(p.Y.Min, math.Min(p.Y.Max, base))
	outline := draw.LineStyle{Color: color.Gray{0x40}, Width: vg.Points(0.5)}
	whisker := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	for i := range b.X {
		if math.IsNaN(b.Y[i]) || math.IsInf(b.Y[i], 0) {
			continue
		}
		x0, x1 := trX(b.X[i]-b.Width/2), trX(b.X[i]+b.Width/2)
		y0, y1 := trY(base), trY(b.Y[i])
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.Color, c.ClipPolygonXY(pts))
		c.StrokeLines(outline, c.ClipLinesXY(append(pts, pts[0]))...)
		if i < len(b.Err) && b.Err[i] > 0 && !math.IsNaN(b.Err[i]) && !math.IsInf(b.Err[i], 0) {
			xm := trX(b.X[i])
			lo, hi := trY(b.Y[i]-b.Err[i]), trY(b.Y[i]+b.Err[i])
			cap := (x1 - x0) / 5
			c.StrokeLine2(whisker, xm, lo, xm, hi)
			c.StrokeLine2(whisker, xm-cap, lo, xm+cap, lo)
			c.StrokeLine2(whisker, xm-cap, hi, xm+cap, hi)
		}
	}
}

// DataRange covers every bar, its error bar and zero.
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, 0
	for i := range b.X {
		if math.IsNaN(b.Y[i]) || math.IsInf(b.Y[i], 0) {
			continue
		}
		xmin, xmax = math.Min(xmin, b.X[i]-b.Width/2), math.Max(xmax, b.X[i]+b.Width/2)
		e := 0.0
		if i < len(b.Err) && !math.IsNaN(b.Err[i]) && !math.IsInf(b.Err[i], 0) {
			e = b.Err[i]
		}
		ymin, ymax = math.Min(ymin, b.Y[i]-e), math.Max(ymax, b.Y[i]+e)
	}
	return
}

// Thumbnail draws the legend's colour swatch.
func (b *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.Color, pts)
}

// labelTicks puts the given labels at the given x positions.
type labelTicks struct {
	At     []float64
	Labels []string
}

// Ticks returns the labelled positions.
func (t labelTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for i, x := range t.At {
		out = append(out, plot.Tick{Value: x, Label: t.Labels[i]})
	}
	return out
}

// distinctTicks are gonum's default ticks with plain labels (plainLabel: "25", not "25.00"), given more
// decimals where that prints two of them alike (4.4, 4.4, 4.5 for 4.40, 4.44, 4.48): a reader must tell them
// apart.
type distinctTicks struct{}

// Ticks returns plot.DefaultTicks's ticks, plainly labelled, with more decimals only when two major labels
// coincide.
func (distinctTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = plainLabel(ticks[i].Value)
		}
	}
	if !duplicateLabels(ticks) {
		return ticks
	}
	for prec := 1; prec <= 8; prec++ {
		out := slices.Clone(ticks)
		for i := range out {
			if out[i].Label != "" {
				out[i].Label = strconv.FormatFloat(out[i].Value, 'f', prec, 64)
			}
		}
		if !duplicateLabels(out) {
			return out
		}
	}
	return ticks
}

// plainLabel is a tick value as a reader writes it: no trailing zeros ("25", "0.5", "7.26"), the value rounded
// to 6 significant digits so that binary fractions (0.30000000000000004) do not show; from ten thousand on, a
// k, M or B suffix ("200k", "1M", "1.5B": token and parameter counts), and an exponent only below 1e-4.
func plainLabel(v float64) string {
	a := math.Abs(v)
	if a != 0 && a < 1e-4 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	for _, u := range []struct {
		at     float64
		suffix string
	}{{1e9, "B"}, {1e6, "M"}, {1e4, "k"}} {
		if a >= u.at {
			div := u.at
			if u.suffix == "k" {
				div = 1e3
			}
			return plainLabel(v/div) + u.suffix
		}
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// duplicateLabels says whether two major (labelled) ticks carry the same label.
func duplicateLabels(ticks []plot.Tick) bool {
	seen := map[string]bool{}
	for _, t := range ticks {
		if t.Label == "" {
			continue
		}
		if seen[t.Label] {
			return true
		}
		seen[t.Label] = true
	}
	return false
}

// useLogX and useLogY switch an axis to a log scale with log ticks.
func useLogX(p *plot.Plot) { p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{} }
func useLogY(p *plot.Plot) { p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{} }

// intTicks labels integers (layers), at most about eight of them.
type intTicks struct{}

// Ticks returns integer ticks between min and max.
func (intTicks) Ticks(min, max float64) []plot.Tick {
	step := math.Max(1, math.Ceil((max-min)/8))
	var out []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max+1e-9; v += step {
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return out
}

// padY widens the y range by a fraction of itself on both sides, so that points do not sit on the frame.
func padY(p *plot.Plot, frac float64) {
	if p.Y.Max > p.Y.Min {
		d := (p.Y.Max - p.Y.Min) * frac
		p.Y.Min -= d
		p.Y.Max += d
	}
}

var (
	svgHead     = regexp.MustCompile(`(?s)^.*?<svg`)
	svgXMLNS    = regexp.MustCompile(`\s+xmlns(:xlink)?="[^"]*"`)
	svgFontName = regexp.MustCompile(`font-family:([^;"]+)`)
)

// inlineSVG turns vgsvg's standalone document into an element for inline use in HTML: no XML prolog or
// comment, no namespace declarations (the HTML parser supplies them), and a font stack behind the Liberation
// family the text was measured with. It also makes the picture scale with the page.
func inlineSVG(b []byte, title string) string {
	s := svgHead.ReplaceAllString(string(b), "<svg")
	s = svgXMLNS.ReplaceAllString(s, "")
	s = svgFontName.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.TrimSpace(strings.TrimPrefix(m, "font-family:"))
		generic := "sans-serif"
		switch {
		case strings.Contains(name, "Serif"):
			generic = "'Times New Roman',serif"
		case strings.Contains(name, "Mono"):
			generic = "'Courier New',monospace"
		default:
			generic = "Arial,Helvetica,sans-serif"
		}
		return "font-family:'" + name + "'," + generic
	})
	s = strings.Replace(s, "<svg", `<svg role="img" aria-label="`+attrEscape(title)+`" preserveAspectRatio="xMidYMid meet"`, 1)
	return strings.TrimSpace(s)
}

// renderPlots draws a grid of plots (rows of columns) on one SVG canvas of w × h. gonum/plot panics on some
// degenerate inputs; that becomes an error, so that one bad figure cannot stop a report.
func renderPlots(rows [][]*plot.Plot, w, h vg.Length, title string) (svg string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing %q: %v", title, r)
		}
	}()
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	drawGrid(rows, dc)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	return inlineSVG(buf.Bytes(), title), nil
}

// fixLogRanges makes every log axis' range positive and non-empty (gonum widens an empty range by ±1, which
// a log scale cannot take).
func fixLogRanges(p *plot.Plot) {
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		if _, ok := ax.Scale.(plot.LogScale); !ok {
			continue
		}
		switch {
		case !(ax.Min > 0) || math.IsInf(ax.Max, 0) || ax.Max < ax.Min:
			ax.Min, ax.Max = 1, 10
		case ax.Max == ax.Min:
			ax.Min, ax.Max = ax.Min/1.5, ax.Max*1.5
		}
	}
}

// drawGrid aligns and draws a grid of plots on dc.
func drawGrid(rows [][]*plot.Plot, dc draw.Canvas) {
	for _, r := range rows {
		for _, p := range r {
			if p != nil {
				fixLogRanges(p)
			}
		}
	}
	if len(rows) == 1 && len(rows[0]) == 1 {
		rows[0][0].Draw(dc)
		return
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	t := draw.Tiles{Rows: len(rows), Cols: cols, PadX: vg.Points(14), PadY: vg.Points(10), PadTop: vg.Points(4),
		PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	full := make([][]*plot.Plot, len(rows))
	for i, r := range rows {
		full[i] = make([]*plot.Plot, cols)
		copy(full[i], r)
	}
	cs := alignTiles(full, t, dc)
	for i := range full {
		for j, p := range full[i] {
			if p != nil {
				p.Draw(cs[i][j])
			}
		}
	}
}

// alignTiles is each plot's canvas within its tile such that the data areas of a row share their bottom and
// top and those of a column their left and right: every plot's canvas is its tile shrunk by how much less room
// its axes and title take than the largest of its row (top, bottom) and column (left, right). Unlike
// plot.Align, which moves canvases to equalise data sizes and can push a title past the top of the picture,
// no canvas leaves its tile.
func alignTiles(plots [][]*plot.Plot, t draw.Tiles, dc draw.Canvas) [][]draw.Canvas {
	type pad struct{ l, r, b, t vg.Length }
	pads := make([][]pad, len(plots))
	colL, colR := make([]vg.Length, t.Cols), make([]vg.Length, t.Cols)
	rowB, rowT := make([]vg.Length, t.Rows), make([]vg.Length, t.Rows)
	for i, row := range plots {
		pads[i] = make([]pad, len(row))
		for j, p := range row {
			if p == nil {
				continue
			}
			c := t.At(dc, j, i)
			d := p.DataCanvas(c)
			pd := pad{d.Min.X - c.Min.X, c.Max.X - d.Max.X, d.Min.Y - c.Min.Y, c.Max.Y - d.Max.Y}
			pads[i][j] = pd
			colL[j], colR[j] = max(colL[j], pd.l), max(colR[j], pd.r)
			rowB[i], rowT[i] = max(rowB[i], pd.b), max(rowT[i], pd.t)
		}
	}
	out := make([][]draw.Canvas, len(plots))
	for i, row := range plots {
		out[i] = make([]draw.Canvas, len(row))
		for j := range row {
			pd := pads[i][j]
			out[i][j] = draw.Crop(t.At(dc, j, i), colL[j]-pd.l, -(colR[j] - pd.r), rowB[i]-pd.b, -(rowT[i] - pd.t))
		}
	}
	return out
}

func attrEscape(s string) string {
	r := strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;")
	return r.Replace(s)
}
