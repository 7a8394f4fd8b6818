package report

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/fit"
)

// figureBlock returns the HTML of the figure with the given id ("" if absent).
func figureBlock(html, id string) string {
	start := strings.Index(html, `<section id="`+id+`">`)
	if start < 0 {
		return ""
	}
	end := strings.Index(html[start:], "</section>")
	if end < 0 {
		return html[start:]
	}
	return html[start : start+end]
}

var dataPoints = regexp.MustCompile(`data-points="(\d+)"`)

// checkSelfContained fails unless the page is one well-formed, script-free, network-free HTML document whose
// inline SVGs are well-formed XML.
func checkSelfContained(t *testing.T, html string) {
	t.Helper()
	if !strings.HasPrefix(html, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(html), "</html>") {
		t.Error("not an HTML5 document")
	}
	for _, bad := range []string{"http://", "https://", "<script", "<link", "<iframe", "@import", "url(http"} {
		if strings.Contains(html, bad) {
			i := strings.Index(html, bad)
			t.Errorf("page contains %q: ...%s...", bad, html[max(0, i-80):min(len(html), i+80)])
		}
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"#][^"]*)"`).FindAllStringSubmatch(html, -1) {
		if !strings.HasPrefix(m[1], "data:") {
			t.Errorf("external reference %q", m[0])
		}
	}
	for _, tag := range []string{"html", "head", "body", "main", "section", "figure", "svg", "table", "ul", "figcaption", "style"} {
		open := len(regexp.MustCompile(`<`+tag+`[\s>]`).FindAllString(html, -1))
		if closed := strings.Count(html, "</"+tag+">"); open != closed {
			t.Errorf("<%s>: %d opened, %d closed", tag, open, closed)
		}
	}
	for i, svg := range regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(html, -1) {
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("svg %d is not well-formed XML: %v", i, err)
				break
			}
		}
	}
}

func TestReportFigures(t *testing.T) {
	type want struct {
		figures   map[string]int // figure id → minimum SVG <path> elements (or <image> for heatmaps)
		omitted   []string
		runs      int
		arms      int
		complete  int
		heatmaps  bool
		compare   bool
		coord     bool
		tableText []string
	}
	sizeSweep := func() []synthRun {
		var rs []synthRun
		for _, d := range []int{16, 32, 48, 64} {
			for _, g := range []float64{0.5, 1} {
				rs = append(rs, synthRun{name: "d" + strconv.Itoa(d) + "-g" + strconv.FormatFloat(g, 'g', -1, 64), gamma: g, eps: 1e-12,
					gate: arch.GateElementwise, dim: d, final: finalDummy})
			}
		}
		return rs
	}
	gammaSweep := func() []synthRun {
		var rs []synthRun
		for _, g := range []float64{0.25, 0.5, 0.75, 1, 1.25} {
			for seed := uint64(0); seed < 3; seed++ {
				rs = append(rs, synthRun{name: "g" + strconv.FormatFloat(g, 'g', -1, 64) + "-s" + strconv.FormatUint(seed, 10), gamma: g,
					eps: 1e-12, gate: arch.GateElementwise, seed: seed, final: finalDummy})
			}
		}
		return rs
	}
	partial := []synthRun{
		{name: "done", gamma: 1, eps: 1e-12, gate: arch.GateElementwise, final: finalDummy, diag: true},
		{name: "stopped", gamma: 0.5, eps: 1e-12, gate: arch.GateElementwise, stopAt: 30, diag: true},
		{name: "nofinal", gamma: 0.75, eps: 1e-12, gate: arch.GateElementwise},
		{name: "noconfig", gamma: 1, eps: 1e-5, gate: arch.GateNone, noConfig: true},
	}
	cases := []struct {
		name  string
		runs  []synthRun
		setup func(t *testing.T, root string) // extra damage or files
		want  want
	}{
		{
			name: "demo corners with diagnostics and models",
			runs: corners(0, true, finalReal, []int{20, 60}),
			want: want{runs: 4, arms: 4, complete: 4, heatmaps: true,
				figures: map[string]int{FigLossCurves: 8, FigValGamma: 4, FigFixes: 8, FigTrajectories: 4 * 2 * 7, FigHeatmaps: 0,
					diagrec.FigureSink: 4 * 2 * 2, diagrec.FigureNorm: 4 * 2 * 2},
				omitted:   []string{FigLossSize, FigCompare, FigCoordcheck},
				tableText: []string{"g1-fixed-seed0", "γ=1 · ε=1e-12 · gate=elementwise", "60 / 60"}},
		},
		{
			name: "two seeds of the corners",
			runs: append(corners(0, false, finalDummy, nil), corners(1, false, finalDummy, nil)...),
			want: want{runs: 8, arms: 4, complete: 8,
				figures: map[string]int{FigLossCurves: 8, FigValGamma: 4, FigFixes: 8},
				omitted: []string{FigLossSize, FigTrajectories, FigHeatmaps, diagrec.FigureSink, diagrec.FigureNorm}},
		},
		{
			name: "gamma sweep with three seeds",
			runs: gammaSweep(),
			want: want{runs: 15, arms: 5, complete: 15,
				figures: map[string]int{FigLossCurves: 5, FigValGamma: 5},
				omitted: []string{FigFixes, FigLossSize, FigTrajectories, diagrec.FigureSink, diagrec.FigureNorm}},
		},
		{
			name: "size sweep",
			runs: sizeSweep(),
			want: want{runs: 8, arms: 8, complete: 8,
				figures: map[string]int{FigLossCurves: 8, FigValGamma: 4, FigLossSize: 8},
				omitted: []string{FigFixes, FigTrajectories}},
		},
		{
			name: "partial and broken runs",
			runs: partial,
			setup: func(t *testing.T, root string) {
				// a run killed while writing a metrics line, one with a garbage config, one empty
				d := synthRun{name: "truncated", gamma: 1.25, eps: 1e-12, gate: arch.GateElementwise}.write(t, root)
				f, _ := os.OpenFile(filepath.Join(d, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(`{"step": 70, "tok`)
				f.Close()
				os.MkdirAll(filepath.Join(root, "garbage"), 0o755)
				os.WriteFile(filepath.Join(root, "garbage", "config.toml"), []byte("this is = = not toml"), 0o644)
				os.MkdirAll(filepath.Join(root, "empty", "nothing"), 0o755)
			},
			want: want{runs: 6, arms: 4, complete: 1,
				figures:   map[string]int{FigLossCurves: 4, FigTrajectories: 2, diagrec.FigureSink: 2, diagrec.FigureNorm: 2},
				omitted:   []string{FigValGamma, FigFixes, FigLossSize},
				tableText: []string{"incomplete: stopped at step 30 of 60", "incomplete: no final model", "incomplete: no config.toml", "garbage", "incomplete: run config"}},
		},
		{
			name:  "compare and coordinate check only",
			runs:  nil,
			setup: func(t *testing.T, root string) { os.MkdirAll(filepath.Join(root, "x"), 0o755) },
			want: want{runs: 0, arms: 0, compare: true, coord: true,
				figures: map[string]int{FigCompare: 10, FigCoordcheck: 6},
				omitted: []string{FigLossCurves, FigValGamma, FigFixes, FigLossSize, FigTrajectories, FigHeatmaps, diagrec.FigureSink, diagrec.FigureNorm}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, r := range tc.runs {
				r.write(t, root)
			}
			if tc.setup != nil {
				tc.setup(t, root)
			}
			d, err := Gather([]string{root, filepath.Join(root, "does-not-exist")})
			if err != nil {
				t.Fatal(err)
			}
			complete := 0
			for _, r := range d.Runs {
				if r.Complete {
					complete++
				}
			}
			if len(d.Runs) != tc.want.runs || len(d.Arms) != tc.want.arms || complete != tc.want.complete {
				t.Fatalf("%d runs (%d complete) in %d arms, want %d (%d) in %d", len(d.Runs), complete, len(d.Arms), tc.want.runs, tc.want.complete, tc.want.arms)
			}
			o := Options{Title: "test <report>"}
			if tc.want.heatmaps {
				sets, problems := synthHeatmaps(d, 8)
				if len(problems) > 0 || len(sets) != 4 {
					t.Fatalf("heatmaps: %d sets, problems %v", len(sets), problems)
				}
				for _, s := range sets {
					if len(s.Panels) != 3 || s.Panels[1].Step != 20 || s.Panels[2].Step != 60 {
						t.Fatalf("heatmap set of %s: %d panels %+v", s.Run.ID, len(s.Panels), s.Panels)
					}
				}
				o.Heatmaps = sets
			}
			if tc.want.compare {
				o.Compare = &CompareData{A: "runs/a", B: "runs/b", Tokens: "val.tok", Cmp: synthComparison(10)}
			}
			if tc.want.coord {
				o.Coordchecks = []*Coordcheck{synthCoordcheck(1), synthCoordcheck(0.5)}
			}
			pg, err := Build(d, o)
			if err != nil {
				t.Fatal(err)
			}
			html := string(pg.HTML)
			checkSelfContained(t, html)
			drawn := map[string]Figure{}
			for _, f := range pg.Figures {
				drawn[f.ID] = f
			}
			for id, minPaths := range tc.want.figures {
				f, ok := drawn[id]
				if !ok {
					t.Errorf("figure %s missing (omitted: %+v)", id, pg.Omitted)
					continue
				}
				block := figureBlock(html, id)
				if block == "" {
					t.Errorf("figure %s not in the page", id)
					continue
				}
				m := dataPoints.FindStringSubmatch(block)
				if m == nil || m[1] == "0" || f.Points == 0 {
					t.Errorf("figure %s has no data points (%v)", id, m)
				}
				paths := strings.Count(block, "<path")
				if paths < minPaths {
					t.Errorf("figure %s: %d SVG paths, want ≥ %d", id, paths, minPaths)
				}
				if id == FigHeatmaps && strings.Count(block, "<image") != 12 {
					t.Errorf("heatmaps: %d images, want 12 (4 arms × init, checkpoint, final)", strings.Count(block, "<image"))
				}
				if !strings.Contains(block, "<figcaption>") || len(f.Caption) < 40 {
					t.Errorf("figure %s: caption %q", id, f.Caption)
				}
				if len(tc.runs) > 0 && id != FigCompare && id != FigCoordcheck && !strings.Contains(f.Caption, "run") {
					t.Errorf("figure %s: caption does not say what was run: %q", id, f.Caption)
				}
			}
			for _, id := range tc.want.omitted {
				if _, ok := drawn[id]; ok {
					t.Errorf("figure %s drawn, want it omitted", id)
				}
				found := false
				for _, o := range pg.Omitted {
					found = found || (o.ID == id && o.Reason != "")
				}
				if !found {
					t.Errorf("figure %s not listed as omitted with a reason", id)
				}
			}
			if len(drawn)+len(pg.Omitted) != len(figureTable()) {
				t.Errorf("%d drawn + %d omitted figures, want %d", len(drawn), len(pg.Omitted), len(figureTable()))
			}
			if rows := strings.Count(figureBlock(html, "runs"), "<tr"); rows != 1+tc.want.runs {
				t.Errorf("the run table has %d rows, want a header and a row per run", rows)
			}
			// The page opens with the results: the reading, then a row per arm, before the list of sections.
			results := figureBlock(html, "results")
			if rows := strings.Count(results, "<tr"); rows != tc.want.arms+boolInt(tc.want.arms > 0) {
				t.Errorf("the results table has %d rows, want a header and a row per arm", rows)
			}
			if nav := strings.Index(html, "<nav>"); results == "" || nav >= 0 && strings.Index(html, `<section id="results">`) > nav {
				t.Error("the results are not the page's first section, before the list of sections")
			}
			if reading := pageReading(results); strings.Count(reading, ". ") != 1 || !strings.HasSuffix(reading, ".") {
				t.Errorf("the reading is not two sentences: %q", reading)
			}
			for _, s := range tc.want.tableText {
				if !strings.Contains(html, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if !strings.Contains(html, "does-not-exist") || !strings.Contains(html, "test &lt;report&gt;") {
				t.Error("missing input not noted, or title not escaped")
			}
		})
	}
}

// pageReading is the first paragraph of a section: the results' reading.
func pageReading(section string) string {
	_, after, _ := strings.Cut(section, "<p>")
	text, _, _ := strings.Cut(after, "</p>")
	return html.UnescapeString(text)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func synthComparison(bins int) diagrec.Comparison {
	c := diagrec.Comparison{Windows: 8, All: diagrec.GapBin{Count: 1000, MeanDeltaSym: 0.02, MeanLossA: 4, MeanLossB: 4.05, LossReduction: 0.05, WinShareA: 0.55}}
	for i := 0; i < bins; i++ {
		c.Bins = append(c.Bins, diagrec.GapBin{Lo: float64(i), Hi: float64(i) + 1, Count: 100, MeanDeltaSym: 0.05 - 0.01*float64(i),
			MeanLossA: float64(i), MeanLossB: float64(i) + 0.1 - 0.02*float64(i), LossReduction: 0.1 - 0.02*float64(i), WinShareA: 0.5})
	}
	return c
}

func synthCoordcheck(gamma float64) *Coordcheck {
	c := &Coordcheck{Source: "coord.json", Coordcheck: diagrec.Coordcheck{Gamma: gamma}}
	for _, s := range []int{0, 10} {
		for _, w := range []int{64, 128, 256} {
			for l := 0; l < 2; l++ {
				r := math.Pow(float64(w), 1-gamma) * 0.1 * float64(s+1)
				c.Points = append(c.Points, diagrec.CoordPoint{Width: w, Step: s, Layer: l, HiddenRMS: 1, AttnRatio: r, FFNRatio: r / 2})
			}
		}
		c.Fits = append(c.Fits, diagrec.CoordFit{Step: s, Layer: 0, AttnExp: 1 - gamma, FFNExp: 1 - gamma})
	}
	return c
}

func TestReportArmsAndCaptions(t *testing.T) {
	root := t.TempDir()
	for _, r := range append(corners(0, false, finalDummy, nil), corners(1, false, finalDummy, nil)...) {
		r.write(t, root)
	}
	d, err := Gather([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.Varying, ","); got != "init.gamma,model.norm_eps,model.attn_gate" {
		t.Errorf("varying keys %s", got)
	}
	want := []string{"γ=0.5 · ε=1e-05 · gate=none", "γ=0.5 · ε=1e-12 · gate=elementwise", "γ=1 · ε=1e-05 · gate=none", "γ=1 · ε=1e-12 · gate=elementwise"}
	for i, a := range d.Arms {
		if a.Label != want[i] || len(a.Runs) != 2 || a.Runs[0].Seed() != 0 || a.Runs[1].Seed() != 1 {
			t.Errorf("arm %d: %q with %d runs", i, a.Label, len(a.Runs))
		}
		mean, se, n := a.FinalVal()
		if n != 2 || math.IsNaN(se) || se <= 0 || math.Abs(mean-(a.Runs[0].ValLoss()+a.Runs[1].ValLoss())/2) > 1e-12 {
			t.Errorf("arm %s: val %g ± %g over %d", a.Label, mean, se, n)
		}
	}
	cap := d.describe(d.Runs)
	for _, s := range []string{"8 runs in 4 arms", "γ ∈ {0.5, 1}", "ε ∈ {1e-12, 1e-05}", "seeds {0, 1}", "60 steps × 4×16 = 3,840 tokens per run"} {
		if !strings.Contains(cap, s) {
			t.Errorf("caption %q lacks %q", cap, s)
		}
	}
}

func TestReportReadLaw(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fit.json")
	os.WriteFile(p, []byte(`{"baseline": "init.gamma=0.5", "laws": [{"kind": "data", "law": null}, {"kind": "size", "law": {"E": 1, "A": 2, "alpha": 0.5}}]}`), 0o644)
	l, err := ReadLaw(p)
	if err != nil || l.E != 1 || l.A != 2 || l.Alpha != 0.5 || !strings.Contains(l.Source, "init.gamma=0.5") {
		t.Fatalf("ReadLaw: %+v, %v", l, err)
	}
	os.WriteFile(p, []byte(`{"E": 1, "A": 2, "alpha": 0.5}`), 0o644)
	if l, err = ReadLaw(p); err != nil || l.Alpha != 0.5 {
		t.Fatalf("ReadLaw bare: %+v, %v", l, err)
	}
	os.WriteFile(p, []byte(`{"laws": []}`), 0o644)
	if _, err = ReadLaw(p); err == nil {
		t.Error("ReadLaw accepted a file without a law")
	}
}

func TestReportReadInputs(t *testing.T) {
	dir := t.TempDir()
	cmp := synthComparison(5)
	b, _ := json.Marshal(map[string]any{"a": "m1", "b": "m2", "tokens": "val.tok", "comparison": cmp})
	p := filepath.Join(dir, "cmp.json")
	os.WriteFile(p, b, 0o644)
	c, err := ReadCompare(p)
	if err != nil || c.A != "m1" || c.B != "m2" || len(c.Cmp.Bins) != 5 {
		t.Fatalf("ReadCompare: %+v, %v", c, err)
	}
	b, _ = json.Marshal(cmp)
	os.WriteFile(p, b, 0o644)
	if c, err = ReadCompare(p); err != nil || len(c.Cmp.Bins) != 5 {
		t.Fatalf("ReadCompare bare: %+v, %v", c, err)
	}
	cc := synthCoordcheck(1)
	b, _ = json.Marshal(map[string]any{"gamma": 1, "predicted_attn_exponent": 0, "points": cc.Points, "fits": cc.Fits})
	p = filepath.Join(dir, "coord.json")
	os.WriteFile(p, b, 0o644)
	got, err := ReadCoordcheck(p)
	if err != nil || len(got.Points) != len(cc.Points) || got.Gamma != 1 || got.Source != "coord.json" {
		t.Fatalf("ReadCoordcheck: %+v, %v", got, err)
	}
}

// TestReportDegenerateInputs feeds the figures flat, single-point and half-broken data: the page must still
// be built, valid and self-contained, with nothing drawn from nothing.
func TestReportDegenerateInputs(t *testing.T) {
	root := t.TempDir()
	// a run that logged only its step-0 validation loss, with one diagnostics line, an error line and a line
	// whose weights have nulls and no class summary
	d0 := synthRun{name: "just-started", gamma: 1, eps: 1e-5, gate: arch.GateNone, stopAt: 5, diag: true}.write(t, root)
	os.WriteFile(filepath.Join(d0, "diagnostics.jsonl"), []byte(
		`{"step": 0, "diagnostics": {"weights": [{"name": "w", "class": "q", "stable_rank": null, "cos_ratio": 1.5}, {"name": "w2", "class": "q", "stable_rank": 3, "cos_ratio": null}]}}`+"\n"+
			`{"step": 2, "error": "json: unsupported value: NaN"}`+"\n"), 0o644)
	// a finished run with flat losses
	synthRun{name: "flat", gamma: 0.5, eps: 1e-5, gate: arch.GateNone, final: finalDummy}.write(t, root)
	d, err := Gather([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	var r *Run
	for _, x := range d.Runs {
		if x.ID == "just-started" {
			r = x
		}
	}
	if r == nil || len(r.Diagnostics) != 2 || r.Diagnostics[1].Err == "" || len(r.Diagnostics[0].Classes) != 1 ||
		r.Diagnostics[0].Classes[0].Mean(diagrec.MetricStableRank) != 3 || r.Diagnostics[0].Classes[0].Mean(diagrec.MetricCosRatio) != 1.5 || r.Complete {
		t.Fatalf("run just-started: %+v", r)
	}
	flat := &Coordcheck{Source: "flat.json", Coordcheck: diagrec.Coordcheck{Gamma: 1, Points: []diagrec.CoordPoint{{Width: 64, AttnRatio: 0.1, FFNRatio: 0}}}}
	one := diagrec.Comparison{Windows: 1, Bins: []diagrec.GapBin{{Count: 3}}}
	pg, err := Build(d, Options{Coordchecks: []*Coordcheck{flat, synthCoordcheck(0.5)}, Compare: &CompareData{A: "a", B: "b", Cmp: one},
		Law: &Law{PowerLaw: fit.PowerLaw{E: 1, A: 1, Alpha: 0.5}}, Heatmaps: nil})
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, string(pg.HTML))
	for _, f := range pg.Figures {
		if f.Points == 0 {
			t.Errorf("figure %s drawn with no points", f.ID)
		}
	}
	for _, o := range pg.Omitted {
		if strings.HasPrefix(o.Reason, "drawing") {
			t.Errorf("figure %s failed to draw: %s", o.ID, o.Reason)
		}
	}
}

func TestReportWritePage(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "r.html")
	if err := writePage(p, []byte("<!DOCTYPE html>")); err != nil {
		t.Fatal(err)
	}
	if err := writePage(p, []byte("<!DOCTYPE html><html></html>")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("%v %v", st, err)
	}
	es, _ := os.ReadDir(filepath.Dir(p))
	if len(es) != 1 {
		t.Errorf("temporary files left: %v", es)
	}
}

// TestHeatmapSourcesTakeStepZeroFromRunFiles: the step-0 panel comes from the run's own init/ weights; a run
// without them (trained before they were written) gets no step-0 panel and a note saying so, never weights
// redrawn with this build's init code.
func TestHeatmapSourcesTakeStepZeroFromRunFiles(t *testing.T) {
	root := t.TempDir()
	with := synthRun{name: "with", gamma: 1, eps: 1e-12, gate: "elementwise", final: finalReal, ckpts: []int{20}}
	without := with
	without.name, without.noInit, without.gamma = "without", true, 0.5
	with.write(t, root)
	without.write(t, root)
	d, err := Gather([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	srcs, problems := HeatmapSources(d, 8)
	if len(problems) > 0 || len(srcs) != 2 {
		t.Fatalf("%d sources, problems %v", len(srcs), problems)
	}
	for _, s := range srcs {
		switch s.Run.ID {
		case "with":
			if len(s.Panels) != 3 || s.Panels[0].Step != 0 || s.Panels[0].Dir != s.Run.InitDir || s.Panels[2].Dir != s.Run.FinalDir || len(s.Problems) > 0 {
				t.Errorf("with init/: panels %+v, problems %v; want init/ at step 0, the checkpoint at 20 and final/ at 60", s.Panels, s.Problems)
			}
		case "without":
			if len(s.Panels) != 2 || s.Panels[0].Step == 0 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "no step-0 weights") {
				t.Errorf("without init/: panels %+v, problems %v; want no step-0 panel and a note", s.Panels, s.Problems)
			}
		}
	}
}
