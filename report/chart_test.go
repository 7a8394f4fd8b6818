package report

import (
	"fmt"
	"gonum.org/v1/plot"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScales: each quantity's scale maps its ends and its middle to the colours the colour bars show, and a
// missing value to grey.
func TestScales(t *testing.T) {
	for _, c := range []struct {
		s    Scale
		v    float64
		want color.RGBA
	}{
		{ScaleCosine, -1, color.RGBA{0x21, 0x66, 0xac, 0xff}}, {ScaleCosine, 0, color.RGBA{0xff, 0xff, 0xff, 0xff}},
		{ScaleCosine, 1, color.RGBA{0xb2, 0x18, 0x2b, 0xff}}, {ScaleCosine, 7, color.RGBA{0xb2, 0x18, 0x2b, 0xff}},
		{ScaleFraction, 0, color.RGBA{0xff, 0xff, 0xff, 0xff}}, {ScaleFraction, 1, color.RGBA{0x08, 0x30, 0x6b, 0xff}},
		{ScaleCosine, math.NaN(), nanColor}, {ScaleFraction, math.NaN(), nanColor},
	} {
		if got := scales[c.s].color(c.v); got != c.want {
			t.Errorf("scale %d at %g: %v, want %v", c.s, c.v, got, c.want)
		}
	}
}

// testPage is a page with every kind of panel: series with intervals and a reference segment on a log
// axis, a labelled grid with values and hatching, a plain cosine grid, and a table.
func testPage() PageSpec {
	series := Panel{Title: "loss", XLabel: "N", YLabel: "nats", LogX: true,
		Series:   []Series{{Name: "a", X: []float64{1e3, 1e4, 1e5}, Y: []float64{3, 2.5, 2.2}, Lo: []float64{2.9, 2.4, 2.1}, Hi: []float64{3.1, 2.6, 2.3}, Marks: true}, {Name: "b", X: []float64{1e3, 1e5}, Y: []float64{3.2, math.NaN()}}},
		Segments: []Segment{{X0: 1e3, Y0: 3, X1: 1e5, Y1: 2}}}
	grid := Panel{Title: "share", Grid: &Grid{Rows: []string{"4", "2"}, Cols: []string{"0.3", "0.5", "0.8"}, V: []float64{0, 0.5, 1, 0.2, math.NaN(), 0.9},
		Hatch: []bool{true, false, false, false, false, true}, Values: true, Scale: ScaleFraction}}
	cos := Panel{Title: "cosines", Grid: &Grid{NRows: 2, NCols: 2, V: []float64{1, -0.5, -0.5, 1}, Scale: ScaleCosine}}
	return PageSpec{Title: "test page", Intro: []string{"intro <b>escaped</b>"}, Sections: []Section{
		{ID: "s1", Heading: "series", Charts: []Chart{{ID: "c1", Title: "series chart", Rows: [][]Panel{{series}}}}},
		{ID: "s2", Heading: "grids", Charts: []Chart{{ID: "c2", Title: "grid chart", Rows: [][]Panel{{grid, cos}}}},
			Tables: []Table{{Header: []string{"x", "y"}, Rows: [][]string{{"1", "<2>"}}}}, Pre: "a  b\n1  2"},
	}}
}

// TestRenderPage: every chart is drawn with its points counted, a legend entry per named series and the
// colour bar of each scale used; text is escaped.
func TestRenderPage(t *testing.T) {
	b, err := RenderPage(testPage())
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{`data-figure="c1" data-points="6" data-series="2"`, `data-figure="c2" data-points="10" data-series="2"`,
		`<span class="grad frac">`, `<span class="grad">`, "intro &lt;b&gt;escaped&lt;/b&gt;", "<td>&lt;2&gt;</td>", "<pre>a  b\n1  2</pre>"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(html, "<svg"); n != 2 {
		t.Errorf("%d svg elements, want 2", n)
	}
	if n := strings.Count(html, `<li><span class="line"`); n != 2 {
		t.Errorf("%d legend entries, want 2 (series a and b)", n)
	}
}

// TestDrawChartRejectsBadGrids: a grid whose values do not fill it, or on an unknown scale, is an error
// naming the panel, not a panic or a blank figure.
func TestDrawChartRejectsBadGrids(t *testing.T) {
	for _, g := range []*Grid{{NRows: 2, NCols: 2, V: []float64{1, 2, 3}}, {NRows: 1, NCols: 1, V: []float64{1}, Scale: Scale(99)}, {}} {
		if _, err := DrawChart(Chart{Title: "bad", Rows: [][]Panel{{{Title: "p", Grid: g}}}}); err == nil || !strings.Contains(err.Error(), `"p"`) {
			t.Errorf("grid %+v: %v, want an error naming panel p", g, err)
		}
	}
	if _, err := DrawChart(Chart{Title: "empty"}); err == nil {
		t.Error("a chart without panels was drawn")
	}
}

// TestPageChromium loads the test page in headless Chromium: no console errors and both figures in the DOM.
func TestPageChromium(t *testing.T) {
	if _, err := FindChromium(); err != nil {
		t.Skip("no chromium: /usr/bin/chromium is absent (apt-get install -y chromium)")
	}
	out := t.TempDir()
	if keep := os.Getenv("SMALLINIT_REPORT_KEEP"); keep != "" {
		out = keep
	}
	page := filepath.Join(out, "page.html")
	if err := WritePage(page, testPage()); err != nil {
		t.Fatal(err)
	}
	dom, log, err := DumpDOM(page)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, log)
	}
	for _, line := range strings.Split(log, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "uncaught") || strings.Contains(l, "console error") || (strings.Contains(l, "console(") && strings.Contains(l, "error")) {
			t.Errorf("chromium console: %s", line)
		}
	}
	if n := strings.Count(dom, "<svg"); n != 2 || !strings.Contains(dom, `data-figure="c2"`) {
		t.Errorf("Chromium's DOM holds %d svg elements, want 2 with c2", n)
	}
}

// TestDrawChartBarsStylesAndAxes: a chart with a bar group (its own fill, and the palette's by default), a
// series in an arm's palette colour with error bars, a dashed fitted curve in the same colour, a black
// reference curve, labelled x ticks and a fixed y range: every bar and line is drawn and counted, each in
// its colour and dashes, the legend names a colour once, and the ticks' labels are on the axis.
func TestDrawChartBarsStylesAndAxes(t *testing.T) {
	grey := color.RGBA{0x9e, 0x9e, 0x9e, 0xff}
	bars := Panel{Title: "bars", XTicks: []Tick{{0, "γ = 0.5"}, {1, "γ = 1"}}, XRange: []float64{-0.5, 1.5}, YRange: []float64{2, 4},
		Bars: []Bars{{X: []float64{-0.2, 0.8}, Y: []float64{3, 3.5}, Err: []float64{0.1, math.NaN()}, Width: 0.3, Color: grey},
			{X: []float64{0.2, 1.2}, Y: []float64{2.5, 3.2}, Width: 0.3}}}
	lines := Panel{Title: "lines", LogX: true, Series: []Series{
		{Name: "arm 4", X: []float64{1e3, 1e4, 1e5}, Y: []float64{3, 2.6, 2.4}, Err: []float64{0.1, 0, 0.1}, Marks: true, Color: 4},
		{Name: "fit of arm 4", X: []float64{1e3, 1e5}, Y: []float64{3, 2.4}, Color: 4, Width: 1, Dashes: []float64{5, 3}},
		{Name: "a given law", X: []float64{1e3, 1e5}, Y: []float64{3.1, 2.5}, Black: true, Width: 1.2, Dashes: []float64{2, 2}},
	}}
	f, err := DrawChart(Chart{ID: "styled", Title: "styled", Rows: [][]Panel{{bars, lines}}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Points != 4+3+2+2 || f.Series != 2+3 {
		t.Errorf("points %d series %d, want 11 and 5", f.Points, f.Series)
	}
	arm := colorAt(3) // Color 4 is the palette's fourth colour, whatever the series' place
	svg := strings.ToUpper(f.SVG)
	for _, want := range []string{
		"FILL:#9E9E9E", "FILL:" + hexColor(colorAt(1)), // the bars' own fill; the second group's palette colour
		"STROKE:" + hexColor(arm), "STROKE-DASHARRAY:5,3", "STROKE-DASHARRAY:2,2", "Γ = 0.5",
	} {
		if !strings.Contains(svg, strings.ToUpper(want)) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if len(f.Legend) != 1 || f.Legend[0].Label != "arm 4" || f.Legend[0].Color != arm {
		t.Errorf("legend %+v, want one entry: arm 4 in the palette's fourth colour", f.Legend)
	}
}

// hexColor is a colour as the SVG writer spells it, #RRGGBB.
func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// TestTickLabelsDistinct: on a narrow range gonum's default labels print two major ticks alike (the 8 h
// record's LR curves showed 4.4, 4.4, 4.5); the axes' ticks give them the decimals that tell them apart, and
// leave labels that were already distinct as they were.
func TestTickLabelsDistinct(t *testing.T) {
	for _, r := range [][2]float64{{4.3, 4.362}, {4.3, 4.374}, {4.381, 4.528}, {4.39, 4.52}, {0.4, 0.46}, {-0.09, 0.05}, {0, 9000}, {1e-4, 3e-4}} {
		def := plot.DefaultTicks{}.Ticks(r[0], r[1])
		got := distinctTicks{}.Ticks(r[0], r[1])
		if duplicateLabels(got) {
			t.Errorf("range %v: duplicate labels %v", r, got)
		}
		if len(got) != len(def) {
			t.Fatalf("range %v: %d ticks, want gonum's %d", r, len(got), len(def))
		}
		for i := range got {
			if got[i].Value != def[i].Value || (def[i].Label == "") != (got[i].Label == "") {
				t.Errorf("range %v: tick %d moved or changed kind: %+v against %+v", r, i, got[i], def[i])
			}
			if !duplicateLabels(def) && got[i].Label != def[i].Label {
				t.Errorf("range %v: distinct label %q relabelled %q", r, def[i].Label, got[i].Label)
			}
		}
	}
	if !duplicateLabels(plot.DefaultTicks{}.Ticks(4.3, 4.362)) {
		t.Error("gonum's default ticks no longer repeat a label on 4.3-4.362: pick a range that exercises the relabelling")
	}
}
