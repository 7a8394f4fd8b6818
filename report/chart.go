package report

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart is a figure as data: rows of panels, each x-y series or a grid of coloured cells. Packages that have
// figures to show (reproduce, anchor) build Charts and hand them to WritePage, and report draws them with
// the page's palette, fonts and colour scales; no other package writes SVG.
type Chart struct {
	ID, Title, Caption string
	Rows               [][]Panel
	Width, RowHeight   float64       // points (0: 780 wide, 300 per row)
	Legend             []LegendEntry // entries after those of the named series
}

// Panel is one plot of a Chart: bars and series, or a Grid.
type Panel struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Bars                  []Bars    // bar groups, drawn under the series
	Series                []Series  // series i has the palette's colour i in every panel, unless it names its own
	Segments              []Segment // dashed reference segments in data coordinates
	Grid                  *Grid     // a grid of cells instead of bars and series

	// The axes: by default each spans its data, the y axis widened by 5% on both sides.
	Tight    bool      // the y axis spans the data exactly
	YFrom0   bool      // the y axis starts at 0
	YAtLeast float64   // the y axis reaches at least this (0: no minimum)
	YRange   []float64 // [lo, hi]: a fixed y range, instead of all the above
	XRange   []float64 // [lo, hi]: a fixed x range
	XTicks   []Tick    // labelled x positions (nil: automatic ticks)
	IntX     bool      // integer x ticks (layers)
}

// Tick is a labelled position on an axis.
type Tick struct {
	At    float64
	Label string
}

// Series is a line of points, with an optional interval [Lo, Hi] or error bar ±Err around each point.
type Series struct {
	Name   string // legend label ("": not in the legend)
	X, Y   []float64
	Lo, Hi []float64 // nil: no intervals
	Err    []float64 // symmetric error bars ±Err[i] (nil, or a value that is not finite and positive: none)
	Marks  bool      // point markers
	// Color is 1 + the palette index of the series' colour, so that an arm keeps its colour in every figure;
	// 0: the series' place in its panel.
	Color  int
	Width  float64   // line width in points (0: 1.5)
	Dashes []float64 // dash lengths in points, for a fitted or reference curve (nil: solid, or the palette's dashes)
	Black  bool      // drawn in black: a curve not from the data (a given law, a predicted slope)
}

// Bars is a group of bars in data coordinates: bar i centred on X[i], Width wide, from 0 to Y[i], with an
// optional error bar ±Err[i].
type Bars struct {
	X, Y, Err []float64
	Width     float64
	Color     color.RGBA // fill (zero: the palette's colour of the group's place in its panel)
}

// colorIndex is the palette index of series i of a panel.
func (s Series) colorIndex(i int) int {
	if s.Color > 0 {
		return s.Color - 1
	}
	return i
}

// style is the line style of series i of a panel.
func (s Series) style(i int) draw.LineStyle {
	sty := lineStyle(s.colorIndex(i))
	if s.Black {
		sty.Color = color.RGBA{0, 0, 0, 0xff}
	}
	if s.Width > 0 {
		sty.Width = vg.Points(s.Width)
	}
	if s.Dashes != nil {
		sty.Dashes = make([]vg.Length, len(s.Dashes))
		for i, d := range s.Dashes {
			sty.Dashes[i] = vg.Points(d)
		}
	}
	return sty
}

// Segment is a dashed straight line from (X0, Y0) to (X1, Y1).
type Segment struct{ X0, Y0, X1, Y1 float64 }

// Grid is a matrix of values shown as coloured cells on one of the page's colour scales; row 0 is drawn at
// the top.
type Grid struct {
	Rows, Cols []string // row and column labels (nil: none; then the grid is NRows × NCols)
	NRows      int      // used when Rows is nil
	NCols      int      // used when Cols is nil
	V          []float64
	Scale      Scale
	Values     bool   // print each cell's value
	Hatch      []bool // cells drawn hatched (nil: none)
}

func (g *Grid) dims() (rows, cols int) {
	rows, cols = g.NRows, g.NCols
	if g.Rows != nil {
		rows = len(g.Rows)
	}
	if g.Cols != nil {
		cols = len(g.Cols)
	}
	return rows, cols
}

// Scale is a colour scale for one quantity: every figure of a quantity uses its scale.
type Scale int

const (
	// ScaleCosine is for cosines in [−1, 1]: blue (−1), white (0), red (+1).
	ScaleCosine Scale = iota
	// ScaleFraction is for shares and accuracies in [0, 1]: white (0) to dark blue (1).
	ScaleFraction
)

// scaleSpec is a scale's colours and its colour bar.
type scaleSpec struct {
	color func(v float64) color.RGBA
	bar   string // inline HTML colour bar (trusted)
	dark  float64
}

// scales is the table of colour scales.
var scales = map[Scale]scaleSpec{
	ScaleCosine:   {color: cosineColor, bar: ColorBarHTML, dark: 0.7},
	ScaleFraction: {color: fractionColor, bar: `<div class="colorbar"><span>0</span><span class="grad frac"></span><span>1</span></div>`, dark: 0.6},
}

// nanColor is a missing or non-finite value on every scale.
var nanColor = color.RGBA{0x80, 0x80, 0x80, 0xff}

// cosineColor maps a cosine in [−1, 1] to a diverging blue–white–red colour.
func cosineColor(x float64) color.RGBA {
	if math.IsNaN(x) {
		return nanColor
	}
	x = math.Max(-1, math.Min(1, x))
	end := [3]float64{0xb2, 0x18, 0x2b} // red for +1
	if x < 0 {
		end, x = [3]float64{0x21, 0x66, 0xac}, -x // blue for −1
	}
	mix := func(e float64) uint8 { return uint8(math.Round(255 + (e-255)*x)) }
	return color.RGBA{mix(end[0]), mix(end[1]), mix(end[2]), 0xff}
}

// fractionColor maps v in [0, 1] to a white-to-dark-blue ramp.
func fractionColor(v float64) color.RGBA {
	if math.IsNaN(v) {
		return nanColor
	}
	v = math.Max(0, math.Min(1, v))
	mix := func(e float64) uint8 { return uint8(math.Round(255 + (e-255)*v)) }
	return color.RGBA{mix(0x08), mix(0x30), mix(0x6b), 0xff}
}

// gridImage is the grid as an image, row 0 at the top.
func gridImage(g *Grid) image.Image {
	rows, cols := g.dims()
	col := scales[g.Scale].color
	img := image.NewRGBA(image.Rect(0, 0, cols, rows))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			img.SetRGBA(j, i, col(g.V[i*cols+j]))
		}
	}
	return img
}

// gridCells draws a grid cell by cell, with values printed and hatching: cell (i, j) covers x ∈ [j, j+1]
// and y ∈ [rows−1−i, rows−i].
type gridCells struct{ g *Grid }

// Plot draws the cells.
func (gc gridCells) Plot(c draw.Canvas, p *plot.Plot) {
	g := gc.g
	rows, cols := g.dims()
	spec := scales[g.Scale]
	trX, trY := p.Transforms(&c)
	hatch := draw.LineStyle{Color: color.Gray{0x88}, Width: vg.Points(1)}
	txt := draw.TextStyle{Font: font.From(sansFont, 9), XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			v := g.V[i*cols+j]
			x0, x1 := trX(float64(j)), trX(float64(j+1))
			y0, y1 := trY(float64(rows-1-i)), trY(float64(rows-i))
			pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			c.FillPolygon(spec.color(v), c.ClipPolygonXY(pts))
			c.StrokeLines(draw.LineStyle{Color: color.White, Width: vg.Points(1)}, c.ClipLinesXY(append(pts, pts[0]))...)
			if g.Hatch != nil && g.Hatch[i*cols+j] {
				at := func(u, v float64) (vg.Length, vg.Length) {
					return x0 + vg.Length(u)*(x1-x0), y0 + vg.Length(v)*(y1-y0)
				}
				for k := 1; k < 8; k++ { // the diagonals u + v = t of the cell's unit square
					t := float64(k) / 4
					ua, va, ub, vb := t, 0.0, 0.0, t
					if t > 1 {
						ua, va, ub, vb = 1, t-1, t-1, 1
					}
					xa, ya := at(ua, va)
					xb, yb := at(ub, vb)
					c.StrokeLine2(hatch, xa, ya, xb, yb)
				}
			}
			if g.Values {
				txt.Color = color.Black
				if v > spec.dark {
					txt.Color = color.White
				}
				label := "—"
				if !math.IsNaN(v) {
					label = strconv.FormatFloat(v, 'f', 2, 64)
				}
				c.FillText(txt, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, label)
			}
		}
	}
}

// DataRange is the grid's extent.
func (gc gridCells) DataRange() (xmin, xmax, ymin, ymax float64) {
	rows, cols := gc.g.dims()
	return 0, float64(cols), 0, float64(rows)
}

// gridPlot is a panel's grid as a plot: cells with values or hatching drawn one by one, a plain grid as an
// embedded image (crisp: the page styles SVG images as pixelated).
func gridPlot(pn Panel) (*plot.Plot, int, error) {
	g := pn.Grid
	rows, cols := g.dims()
	if rows*cols == 0 || len(g.V) != rows*cols {
		return nil, 0, fmt.Errorf("grid %q: %d values for %d × %d cells", pn.Title, len(g.V), rows, cols)
	}
	if _, ok := scales[g.Scale]; !ok {
		return nil, 0, fmt.Errorf("grid %q: unknown colour scale %d", pn.Title, g.Scale)
	}
	var p *plot.Plot
	if g.Values || g.Hatch != nil || g.Rows != nil || g.Cols != nil {
		p = newPlot(pn.Title, pn.XLabel, pn.YLabel)
		p.Add(gridCells{g})
	} else { // a matrix picture: a small title, no grid or axes
		p = plot.New()
		p.Title.Text = pn.Title
		p.Title.TextStyle.Font = font.From(sansFont, 8)
		p.Add(plotter.NewImage(gridImage(g), 0, 0, float64(cols), float64(rows)))
	}
	if g.Cols != nil {
		var t labelTicks
		for j, l := range g.Cols {
			t.At, t.Labels = append(t.At, float64(j)+0.5), append(t.Labels, l)
		}
		p.X.Tick.Marker = t
	}
	if g.Rows != nil {
		var t labelTicks
		for i, l := range g.Rows {
			t.At, t.Labels = append(t.At, float64(rows-1-i)+0.5), append(t.Labels, l)
		}
		p.Y.Tick.Marker = t
	}
	if g.Rows == nil && g.Cols == nil {
		p.HideAxes()
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, float64(cols), 0, float64(rows)
	return p, rows * cols, nil
}

// seriesPlot is a panel of bars and series as a plot, and the points drawn.
func seriesPlot(pn Panel) (*plot.Plot, int) {
	p := newPlot(pn.Title, pn.XLabel, pn.YLabel)
	if pn.LogX {
		useLogX(p)
	}
	if pn.LogY {
		useLogY(p)
	}
	n := 0
	for i, b := range pn.Bars {
		c := b.Color
		if c == (color.RGBA{}) {
			c = colorAt(i)
		}
		p.Add(&bars{X: b.X, Y: b.Y, Err: b.Err, Width: b.Width, Color: c})
		n += len(b.X)
	}
	for i, s := range pn.Series {
		sty := s.style(i)
		n += addLine(p, finiteXYs(s.X, s.Y, pn.LogX, pn.LogY), sty, s.Marks)
		if s.Lo != nil && s.Hi != nil {
			addIntervals(p, s, sty.Color)
		}
		if s.Err != nil {
			addErrorBars(p, s.X, s.Y, s.Err, sty.Color)
		}
	}
	for _, sg := range pn.Segments {
		sty := draw.LineStyle{Color: color.RGBA{0x44, 0x44, 0x44, 0xff}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}
		n += addLine(p, finiteXYs([]float64{sg.X0, sg.X1}, []float64{sg.Y0, sg.Y1}, pn.LogX, pn.LogY), sty, false)
	}
	if pn.XTicks != nil {
		var t labelTicks
		for _, tk := range pn.XTicks {
			t.At, t.Labels = append(t.At, tk.At), append(t.Labels, tk.Label)
		}
		p.X.Tick.Marker = t
	}
	if pn.IntX {
		p.X.Tick.Marker = intTicks{}
	}
	if len(pn.XRange) == 2 {
		p.X.Min, p.X.Max = pn.XRange[0], pn.XRange[1]
	}
	switch {
	case len(pn.YRange) == 2:
		p.Y.Min, p.Y.Max = pn.YRange[0], pn.YRange[1]
	default:
		if !pn.Tight {
			padY(p, 0.05)
		}
		if pn.YFrom0 {
			p.Y.Min = 0
		}
		if pn.YAtLeast != 0 {
			p.Y.Max = math.Max(p.Y.Max, pn.YAtLeast)
		}
	}
	return p, n
}

// addIntervals draws the series' intervals [Lo, Hi] as error bars.
func addIntervals(p *plot.Plot, s Series, c color.Color) {
	var e errPoints
	for i := range s.X {
		if i >= len(s.Lo) || i >= len(s.Hi) || math.IsNaN(s.Y[i]) || math.IsNaN(s.Lo[i]) || math.IsNaN(s.Hi[i]) {
			continue
		}
		e.XYs = append(e.XYs, plotter.XY{X: s.X[i], Y: s.Y[i]})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{s.Y[i] - s.Lo[i], s.Hi[i] - s.Y[i]})
	}
	if len(e.XYs) == 0 {
		return
	}
	if b, err := plotter.NewYErrorBars(e); err == nil {
		b.LineStyle.Color, b.LineStyle.Width = c, vg.Points(1)
		p.Add(b)
	}
}

// DrawChart draws a chart as a report figure: its panels on one SVG canvas, a legend of its named series
// (one entry per colour, named by the first series of that colour) and the colour bar of each scale its grids
// use. It is the one way a figure of the report is drawn.
func DrawChart(ch Chart) (*Figure, error) {
	f := &Figure{ID: ch.ID, Title: ch.Title, Caption: ch.Caption}
	var rows [][]*plot.Plot
	names := map[int]string{}
	bars := map[Scale]bool{}
	cols := 0
	for _, r := range ch.Rows {
		var row []*plot.Plot
		for _, pn := range r {
			if pn.Grid != nil {
				p, n, err := gridPlot(pn)
				if err != nil {
					return nil, err
				}
				row = append(row, p)
				f.Points += n
				f.Series++
				if !bars[pn.Grid.Scale] {
					bars[pn.Grid.Scale] = true
					f.Extra += scales[pn.Grid.Scale].bar
				}
				continue
			}
			p, n := seriesPlot(pn)
			row = append(row, p)
			f.Points += n
			f.Series += len(pn.Bars)
			for i, s := range pn.Series {
				f.Series++
				if ci := s.colorIndex(i); s.Name != "" && !s.Black {
					if _, ok := names[ci]; !ok {
						names[ci] = s.Name
					}
				}
			}
		}
		cols = max(cols, len(row))
		rows = append(rows, row)
	}
	if len(rows) == 0 || cols == 0 {
		return nil, fmt.Errorf("chart %q has no panels", ch.Title)
	}
	last := -1
	for i := range names {
		last = max(last, i)
	}
	for i := 0; i <= last; i++ {
		if n, ok := names[i]; ok {
			f.Legend = append(f.Legend, LegendEntry{Label: n, Color: colorAt(i), Dashed: i >= len(palette)})
		}
	}
	f.Legend = append(f.Legend, ch.Legend...)
	w, h := ch.Width, ch.RowHeight
	if w == 0 {
		w = 780
	}
	if h == 0 {
		h = 300
	}
	var err error
	if f.SVG, err = renderPlots(rows, vg.Points(w), vg.Points(h*float64(len(rows))), f.Title); err != nil {
		return nil, err
	}
	return f, nil
}
