package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/recipe"
)

// Options say what to draw beyond the runs themselves.
type Options struct {
	Title       string        // page title (default "smallinit report")
	Law         *Law          // a size law to draw on the loss-against-N figure (ReadLaw), besides any fitted here
	Heatmaps    []HeatmapSet  // row-cosine heatmaps (analyze.Heatmaps); none: the figure is listed as not drawn
	HeatTensor  string        // the tensor asked for, named when there are no heatmaps
	Compare     *CompareData  // a token-difficulty comparison (analyze.CompareModels or ReadCompare)
	Coordchecks []*Coordcheck // coordinate checks (ReadCoordcheck)
	MaxArms     int           // arms drawn in the per-arm small multiples (default 8)
	Generated   string        // a line for the header, e.g. the time and command (empty: none)
	Notes       []string      // extra notes listed at the end (e.g. what could not be computed)
}

// Page is a rendered report.
type Page struct {
	HTML     []byte
	Figures  []Figure  // the figures drawn, in page order
	Omitted  []Omitted // the figures not drawn, and why
	HeightPx int       // an estimate of the page's height at 1200 px wide (for screenshots)
}

// Render draws the report of d as one self-contained HTML page.
func Render(d *Data, o Options) ([]byte, error) {
	p, err := Build(d, o)
	if err != nil {
		return nil, err
	}
	return p.HTML, nil
}

// figureRow is one figure of the report: its ID, its title (named in the list of figures not drawn) and how it
// is drawn from the runs and the options (a figure, or nil and why not).
type figureRow struct {
	id, title string
	draw      func(d *Data, o Options) (*Figure, string)
}

// figureTable is every figure of the report, in page order: a new figure is one row here.
func figureTable() []figureRow {
	return []figureRow{
		{FigLossCurves, "Loss curves", func(d *Data, _ Options) (*Figure, string) { return d.figLossCurves() }},
		{FigValGamma, "Validation loss against γ", func(d *Data, _ Options) (*Figure, string) { return d.figValGamma() }},
		{FigFixes, "The 2×2 of fixes", func(d *Data, _ Options) (*Figure, string) { return d.figFixes() }},
		{FigLossSize, "Loss against model size N", func(d *Data, o Options) (*Figure, string) { return d.figLossSize(o.Law) }},
		{FigTrajectories, "Weight trajectories", func(d *Data, o Options) (*Figure, string) { return d.figTrajectories(o.MaxArms) }},
		{FigHeatmaps, "Row-cosine heatmaps", func(d *Data, o Options) (*Figure, string) { return d.figHeatmaps(o.Heatmaps, o.HeatTensor) }},
		{diagrec.FigureSink, "Attention sink", func(d *Data, _ Options) (*Figure, string) { return d.figSink() }},
		{diagrec.FigureNorm, "Norm saturation", func(d *Data, _ Options) (*Figure, string) { return d.figNorm() }},
		{FigCompare, "A against B by token difficulty", func(_ *Data, o Options) (*Figure, string) { return figCompare(o.Compare) }},
		{FigCoordcheck, "Coordinate check", func(_ *Data, o Options) (*Figure, string) { return figCoordcheck(o.Coordchecks) }},
	}
}

// Build draws every figure whose data exists and lays out the page.
func Build(d *Data, o Options) (*Page, error) {
	if o.Title == "" {
		o.Title = "smallinit report"
	}
	if o.MaxArms <= 0 {
		o.MaxArms = 8
	}
	if o.HeatTensor == "" {
		o.HeatTensor = DefaultHeatmapTensor
	}
	pg := &Page{}
	for _, row := range figureTable() {
		if f, why := row.draw(d, o); f != nil {
			pg.Figures = append(pg.Figures, *f)
		} else {
			pg.Omitted = append(pg.Omitted, Omitted{ID: row.id, Title: row.title, Reason: why})
		}
	}

	v := d.view(o, pg)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v.page()); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	pg.HTML = buf.Bytes()
	pg.HeightPx = 260 + 34*len(v.Runs) + 34*len(v.Arms) + 30*(len(pg.Omitted)+len(v.Notes))
	for _, f := range pg.Figures {
		pg.HeightPx += svgHeightPx(f.SVG) + 170
	}
	return pg, nil
}

var svgSize = regexp.MustCompile(`^<svg[^>]*?width="([0-9.]+)pt" height="([0-9.]+)pt"`)

// svgHeightPx is the displayed height of an inline SVG in a page column 1100 px wide.
func svgHeightPx(svg string) int {
	m := svgSize.FindStringSubmatch(svg)
	if m == nil {
		return 400
	}
	w, _ := strconv.ParseFloat(m[1], 64)
	h, _ := strconv.ParseFloat(m[2], 64)
	px := h * 4 / 3
	if w*4/3 > 1100 {
		px *= 1100 / (w * 4 / 3)
	}
	return int(px)
}

// view is what the report of runs shows; page lays it out as the page template's sections.
type view struct {
	Title     string
	Generated string
	Summary   string
	Reading   string // the headline: two sentences on the final losses (Data.reading)
	Figures   []figView
	Omitted   []Omitted
	Arms      []armView
	Runs      []runView
	HasBPB    bool
	ValSource string // where the val losses come from (valLossSource)
	Notes     []string
}

type figView struct {
	Figure
	SVGHTML template.HTML
	Extra   template.HTML
	Legend  []legendView
}

type legendView struct {
	Label string
	Style template.CSS
	Class string
}

type armView struct {
	Label, Runs, Seeds, Complete, Val, N string
	Color                                template.CSS
}

type runView struct {
	ID, Arm, Seed, State, Steps, Tokens, Train, Val, BPB, TokS, N string
	Complete                                                      bool
}

func fmtLoss(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func cssColor(c interface{ RGBA() (r, g, b, a uint32) }) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// newFigView is a drawn figure as the page templates show it: its SVG and colour bar as trusted HTML (report
// drew them) and its legend as styled swatches.
func newFigView(f Figure) figView {
	fv := figView{Figure: f, SVGHTML: template.HTML(f.SVG), Extra: template.HTML(f.Extra)}
	for _, l := range f.Legend {
		lv := legendView{Label: l.Label, Class: "line"}
		switch {
		case l.Swatch:
			lv.Class = "box"
			lv.Style = template.CSS("background:" + cssColor(l.Color))
		case l.Dashed:
			lv.Style = template.CSS("border-top:2px dashed " + cssColor(l.Color))
		default:
			lv.Style = template.CSS("border-top:3px solid " + cssColor(l.Color))
		}
		fv.Legend = append(fv.Legend, lv)
	}
	return fv
}

func (d *Data) view(o Options, pg *Page) view {
	v := view{Title: o.Title, Generated: o.Generated, Omitted: pg.Omitted, Reading: d.reading()}
	complete := 0
	for _, r := range d.Runs {
		if r.Complete {
			complete++
		}
	}
	v.Summary = fmt.Sprintf("%d run%s (%d complete) in %d arm%s, from %s.", len(d.Runs), plural(len(d.Runs)), complete,
		len(d.Arms), plural(len(d.Arms)), strings.Join(d.Inputs, ", "))
	if len(d.Varying) > 0 {
		var ks []string
		for _, k := range d.Varying {
			ks = append(ks, recipe.ShortName(k))
		}
		v.Summary += " Arms differ in " + strings.Join(ks, ", ") + "."
	}
	for _, f := range pg.Figures {
		v.Figures = append(v.Figures, newFigView(f))
	}
	for _, a := range d.Arms {
		mean, se, n := a.FinalVal()
		val := "—"
		if n > 0 {
			val = armResult{mean: mean, se: se, n: n}.lossText()
		}
		var seeds []string
		for _, s := range a.Seeds() {
			seeds = append(seeds, strconv.FormatUint(s, 10))
		}
		v.Arms = append(v.Arms, armView{Label: a.Label, Runs: strconv.Itoa(len(a.Runs)), Seeds: strings.Join(seeds, ", "),
			Complete: strconv.Itoa(len(a.Complete())), Val: val, N: groupDigits(a.N), Color: template.CSS("background:" + cssColor(d.armColor(a)))})
	}
	v.ValSource = valLossSource(d.Runs)
	for _, r := range d.Runs {
		rv := runView{ID: r.ID, State: r.State(), Complete: r.Complete, Tokens: groupDigits(r.Tokens()),
			Train: fmtLoss(r.TrainLoss()), Val: fmtLoss(r.ValLoss()), BPB: "—", TokS: "—", Arm: "—", Seed: "—", N: "—"}
		if r.HasConfig {
			rv.Steps = fmt.Sprintf("%d / %d", r.LastStep(), r.TotalSteps)
			rv.Seed = strconv.FormatUint(r.Seed(), 10)
			rv.N = groupDigits(r.N())
		} else {
			rv.Steps = strconv.Itoa(r.LastStep())
		}
		if r.Arm != nil {
			rv.Arm = r.Arm.Label
		}
		if t := r.TokensPerS(); !math.IsNaN(t) {
			rv.TokS = strconv.FormatFloat(t, 'f', 0, 64)
		}
		if r.Summary != nil {
			v.HasBPB = true
			rv.BPB = strconv.FormatFloat(r.Summary.ValBPB, 'f', 4, 64)
		}
		v.Runs = append(v.Runs, rv)
		for _, p := range r.Problems {
			if !strings.Contains(r.Reason, p) && p != r.Reason {
				v.Notes = append(v.Notes, r.ID+": "+p)
			}
		}
	}
	for _, s := range d.Skipped {
		v.Notes = append(v.Notes, "input "+s.Path+": "+s.Reason)
	}
	if len(d.Ignored) > 0 {
		v.Notes = append(v.Notes, "runs also differ in "+strings.Join(d.Ignored, ", ")+" (logging, intervals or data paths), which do not split arms")
	}
	for _, s := range o.Heatmaps {
		for _, p := range s.Problems {
			v.Notes = append(v.Notes, "heatmap "+s.Run.ID+": "+p)
		}
	}
	v.Notes = append(v.Notes, o.Notes...)
	return v
}

// pageCSS is the style of every page report writes.
const pageCSS = `{{define "css"}}body{margin:0;background:#fafafa;color:#222;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px 28px 48px;background:#fff}
h1{font-size:26px;margin:0 0 6px}
h2{font-size:19px;margin:34px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555;margin:2px 0}
nav ol{columns:2;column-gap:56px;margin:8px 0 0;padding-left:22px}
nav li{break-inside:avoid;overflow-wrap:anywhere}
figure{margin:18px 0 30px}
figure svg{display:block;max-width:100%;height:auto;margin:0 auto}
svg image{image-rendering:pixelated;image-rendering:crisp-edges}
figcaption{color:#333;font-size:13.5px;margin-top:6px}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px;margin:8px 0 4px;padding:0;list-style:none}
.legend li{display:flex;align-items:center;gap:6px}
.legend .line{display:inline-block;width:26px;height:0}
.legend .box{display:inline-block;width:14px;height:12px;border:1px solid #444}
.colorbar{display:flex;align-items:center;gap:8px;font-size:13px;margin:6px 0}
.colorbar .grad{display:inline-block;width:220px;height:12px;border:1px solid #999;background:linear-gradient(to right,#2166ac,#ffffff,#b2182b)}
.colorbar .grad.frac{background:linear-gradient(to right,#ffffff,#08306b)}
table{border-collapse:collapse;font-size:13px;margin:8px 0 16px;width:100%}
th,td{border-bottom:1px solid #e4e4e4;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f2f2f2}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.incomplete td{color:#8a5a00;background:#fff8e6}
.sw{display:inline-block;width:12px;height:12px;border:1px solid #555;margin-right:6px;vertical-align:-1px}
.omitted li,.notes li{margin:2px 0}
pre{background:#f6f6f6;padding:8px;font-size:12px;overflow-x:auto}
caption{text-align:left;font-weight:bold;padding:4px 0}
{{end}}{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{template "css"}}</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{end}}`

// page lays the report out: the summary, the results (the reading and the arms' final losses) before the list
// of the other sections, a section per figure, the runs, the figures not drawn and the notes.
func (v view) page() pageView {
	p := pageView{Title: v.Title, Intro: []string{v.Summary}}
	if v.Generated != "" {
		p.Intro = append(p.Intro, v.Generated)
	}
	results := sectionView{ID: "results", Heading: "Results", Text: []string{v.Reading}, Meta: []string{"Final val loss: " +
		v.ValSource + "; the mean over an arm's complete runs ± its standard error over seeds (SD/√n; one seed has none)."}}
	if len(v.Arms) > 0 {
		t := tableView{Class: "arms", Header: []string{"arm", "N", "runs", "complete", "seeds", "final val loss (mean ± SE over seeds)"}}
		for _, a := range v.Arms {
			t.Rows = append(t.Rows, rowView{Cells: []cellView{{Text: a.Label, Swatch: a.Color}, {Text: a.N, Class: "num"},
				{Text: a.Runs, Class: "num"}, {Text: a.Complete, Class: "num"}, {Text: a.Seeds}, {Text: a.Val, Class: "num"}}})
		}
		results.Tables = append(results.Tables, t)
	}
	p.Lead = append(p.Lead, results)
	for _, f := range v.Figures {
		p.Nav = append(p.Nav, navView{ID: f.ID, Title: f.Title})
		p.Sections = append(p.Sections, sectionView{ID: f.ID, Heading: f.Title, Figures: []figView{f}})
	}
	p.Nav = append(p.Nav, navView{ID: "runs", Title: "Runs"})
	runs := sectionView{ID: "runs", Heading: "Runs", Meta: []string{"Train loss is the last logged value (mean over the last " +
		"logging interval); tokens/s is the throughput over the logged intervals. Val loss, here and in the results' final val loss: " +
		v.ValSource + ". Incomplete runs are listed but left out of the final-loss figures."}}
	t := tableView{Class: "runs", Header: []string{"run", "arm", "seed", "state", "steps", "tokens", "train loss", "val loss"}}
	if v.HasBPB {
		t.Header = append(t.Header, "val bits/byte (demo, whole split)")
	}
	t.Header = append(t.Header, "tokens/s")
	for _, r := range v.Runs {
		row := rowView{Cells: []cellView{{Text: r.ID}, {Text: r.Arm}, {Text: r.Seed, Class: "num"}, {Text: r.State},
			{Text: r.Steps, Class: "num"}, {Text: r.Tokens, Class: "num"}, {Text: r.Train, Class: "num"}, {Text: r.Val, Class: "num"}}}
		if v.HasBPB {
			row.Cells = append(row.Cells, cellView{Text: r.BPB, Class: "num"})
		}
		row.Cells = append(row.Cells, cellView{Text: r.TokS, Class: "num"})
		if !r.Complete {
			row.Class = "incomplete"
		}
		t.Rows = append(t.Rows, row)
	}
	runs.Tables = append(runs.Tables, t)
	p.Sections = append(p.Sections, runs)
	if len(v.Omitted) > 0 {
		p.Nav = append(p.Nav, navView{ID: "not-drawn", Title: "Figures not drawn"})
		s := sectionView{ID: "not-drawn", Heading: "Figures not drawn", ItemsClass: "omitted"}
		for _, om := range v.Omitted {
			s.Items = append(s.Items, itemView{Bold: om.Title, Text: om.Reason})
		}
		p.Sections = append(p.Sections, s)
	}
	if len(v.Notes) > 0 {
		s := sectionView{ID: "notes", Heading: "Notes", ItemsClass: "notes"}
		for _, n := range v.Notes {
			s.Items = append(s.Items, itemView{Text: n})
		}
		p.Sections = append(p.Sections, s)
	}
	return p
}
