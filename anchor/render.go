package anchor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/report"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// Render writes out/table.txt, out/condensation.json and out/diagram.html (Page, drawn by report: inline SVG, no
// scripts) for the results of g, and the table to w. The condensation diagnostics are those of the smallest
// and the largest γ at the smallest depth among the cells that fit the seen pairs (test accuracy ≥ 90%; all
// cells if none does), first seed, at that cell's chosen rate (skipped, with a line, when their models are not
// in out/runs). A model that is there but does not load, or is not the shape the grid trains, is an error
// naming it, before any file is written: a diagram without it would look complete.
func Render(g Grid, res []CellResult, out string, w io.Writer) error {
	phase, mix := Phase(res), MixCurve(res)
	conds, skipped, err := extremes(g, phase, out)
	if err != nil {
		return err
	}
	var tb bytes.Buffer
	WriteTable(&tb, phase, mix)
	if _, err := w.Write(tb.Bytes()); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(out, "table.txt"), tb.Bytes()); err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintf(w, "condensation left out: %s\n", s)
	}
	cj, _ := json.MarshalIndent(conds, "", "  ")
	if err := atomicfile.Write(filepath.Join(out, "condensation.json"), append(cj, '\n')); err != nil {
		return err
	}
	for _, c := range conds {
		fmt.Fprintf(w, "\ncondensation of %s:\n", c.Cell.Name())
		for _, m := range c.Matrices {
			fmt.Fprintf(w, "  %-20s stable rank %6.2f  mean|cos| %.3f (×%.2f random)  |cos|>0.9 %.3f\n", m.Name, m.StableRank, m.MeanAbsCos, m.CosRatio, m.FracAbove09)
		}
	}
	return report.WritePage(filepath.Join(out, "diagram.html"), Page(g, phase, mix, conds, tb.String()))
}

// extremes loads and condenses the γ-extreme models of the smallest depth and the first seed. A model that is
// not there (its run was not trained, or not to the end) is left out and named in skipped; one that is there
// but does not load, or is not the shape the grid trains (another vocabulary, width or depth: a directory of
// another diagram), is an error.
func extremes(g Grid, phase []PhaseCell, out string) (conds []Condensation, skipped []string, err error) {
	if len(phase) == 0 || len(g.Seeds) == 0 {
		return nil, nil, nil
	}
	minL := phase[0].Layers
	var at, fit []PhaseCell
	for _, p := range phase {
		if p.Layers == minL {
			at = append(at, p)
			if p.SeenTest >= 0.9 {
				fit = append(fit, p)
			}
		}
	}
	if len(fit) > 0 {
		at = fit // compare models that fit the seen pairs, as 2405.05409 Fig. 5 compares γ = 0.5 with γ = 0.8
	}
	pool := kernel.NewPool(1)
	defer pool.Close()
	for _, p := range []PhaseCell{at[0], at[len(at)-1]} {
		c := Cell{Task: TaskComposite, Gamma: p.Gamma, Layers: p.Layers, LR: p.LRs[0], Seed: p.SeedIDs[0]}
		dir := filepath.Join(out, "runs", c.Name())
		broken := func(err error) error {
			return fmt.Errorf("anchor render %s: the condensation model of cell %s: %w (remove %s to draw the diagram without it, or train it again)", out, c.Name(), err, dir)
		}
		run, err := train.OpenRun(dir)
		if errors.Is(err, fs.ErrNotExist) {
			skipped = append(skipped, fmt.Sprintf("%s: %v", c.Name(), err))
			continue
		}
		if err != nil {
			return nil, nil, broken(err)
		}
		m, err := run.FinalModel(1, pool)
		if errors.Is(err, fs.ErrNotExist) && !exists(filepath.Join(dir, rundir.FinalDir)) {
			skipped = append(skipped, fmt.Sprintf("%s: %v", c.Name(), err))
			continue
		}
		if err != nil {
			return nil, nil, broken(err)
		}
		want, err := RunConfig(c, g.Shape, g.Budget, tokPath(out, c.Task, c.Seed))
		if err != nil {
			return nil, nil, broken(err)
		}
		w, h := want.Model.Config, m.Config
		if h.Vocab != w.Vocab || h.Dim != w.Dim || h.Layers != w.Layers || h.Heads != w.Heads || h.HeadDim != w.HeadDim {
			return nil, nil, broken(fmt.Errorf("the model is vocab %d, d %d, %d layers, %d×%d heads; the grid trains vocab %d, d %d, %d layers, %d×%d heads",
				h.Vocab, h.Dim, h.Layers, h.Heads, h.HeadDim, w.Vocab, w.Dim, w.Layers, w.Heads, w.HeadDim))
		}
		conds = append(conds, Condense(m, c))
	}
	return conds, skipped, nil
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// phaseChart is one γ × depth grid of value(cell) on the fraction scale with the value printed in each cell,
// the deepest row at the top; cells whose seen-pair test accuracy is below 90% are hatched, as 2405.05409
// Fig. 2 shades them.
func phaseChart(id, title string, phase []PhaseCell, value func(PhaseCell) float64) report.Chart {
	gs, ls := map[float64]int{}, map[int]int{}
	for _, p := range phase {
		gs[p.Gamma], ls[p.Layers] = 0, 0
	}
	var gl []float64
	var ll []int
	for k := range gs {
		gl = append(gl, k)
	}
	for k := range ls {
		ll = append(ll, k)
	}
	sort.Float64s(gl)
	sort.Sort(sort.Reverse(sort.IntSlice(ll)))
	g := &report.Grid{Scale: report.ScaleFraction, Values: true}
	for i, k := range gl {
		gs[k] = i
		g.Cols = append(g.Cols, strconv.FormatFloat(k, 'g', 2, 64))
	}
	for i, k := range ll {
		ls[k] = i
		g.Rows = append(g.Rows, strconv.Itoa(k))
	}
	g.V, g.Hatch = make([]float64, len(gl)*len(ll)), make([]bool, len(gl)*len(ll))
	for i := range g.V {
		g.V[i] = math.NaN()
	}
	for _, p := range phase {
		at := ls[p.Layers]*len(gl) + gs[p.Gamma]
		g.V[at], g.Hatch[at] = value(p), p.SeenTest < 0.9
	}
	pn := report.Panel{Title: title, XLabel: "initialization rate γ (σ = d_in^−γ)", YLabel: "depth", Grid: g}
	return report.Chart{ID: id, Title: title, Rows: [][]report.Panel{{pn}}, Width: float64(90 + 56*len(gl)), RowHeight: float64(90 + 40*len(ll))}
}

// mixChart is memory and reasoning accuracy against γ with ±1 sd bars.
func mixChart(mix []MixPoint) report.Chart {
	series := []struct {
		name string
		v    func(MixPoint) (float64, float64)
	}{
		{"memory", func(p MixPoint) (float64, float64) { return p.Memory, p.SDMem }},
		{"reasoning (train)", func(p MixPoint) (float64, float64) { return p.RsnTrain, p.SDRsnTr }},
		{"reasoning (test, M)", func(p MixPoint) (float64, float64) { return p.RsnTest, p.SDRsnTest }},
	}
	pn := report.Panel{Title: "accuracy against γ (mean ± sd over seeds)", XLabel: "initialization rate γ", YLabel: "accuracy"}
	for _, s := range series {
		sr := report.Series{Name: s.name, Marks: true}
		for _, p := range mix {
			m, sd := s.v(p)
			sr.X, sr.Y = append(sr.X, p.Gamma), append(sr.Y, m)
			sr.Lo, sr.Hi = append(sr.Lo, math.Max(0, m-sd)), append(sr.Hi, math.Min(1, m+sd))
		}
		pn.Series = append(pn.Series, sr)
	}
	return report.Chart{ID: "mix", Title: "Reasoning and memory accuracy", Rows: [][]report.Panel{{pn}}, Width: 460, RowHeight: 280}
}

// cosinePanel is an n × n cosine matrix on the cosine scale.
func cosinePanel(title string, c []float32, n int) report.Panel {
	v := make([]float64, len(c))
	for i, x := range c {
		v[i] = float64(x)
	}
	return report.Panel{Title: title, Grid: &report.Grid{NRows: n, NCols: n, V: v, Scale: report.ScaleCosine}}
}

// Page is the diagram's page as data (report draws it): the phase grids, the mix task's accuracies, the
// condensation of the γ extremes and the table.
func Page(g Grid, phase []PhaseCell, mix []MixPoint, conds []Condensation, table string) report.PageSpec {
	gj, _ := json.Marshal(g)
	pg := report.PageSpec{Title: "Reasoning against memorisation: the anchor-function phase diagram"}
	pg.Sections = append(pg.Sections, report.Section{ID: "phase", Heading: "Phase diagram",
		Text: []string{"Composite anchors of Zhang et al. 2024 (arXiv 2405.05409): share of the held-out pair (4,3)'s predictions that are " +
			"inferential (x−10) or symmetric (x−6), mean over seeds. Hatched: seen-pair test accuracy below 90% (the paper's shaded zone). Grid: " + string(gj)},
		Charts: []report.Chart{
			phaseChart("phase-inferential", "(4,3) inferential share (x−10)", phase, func(p PhaseCell) float64 { return p.Inf }),
			phaseChart("phase-symmetric", "(4,3) symmetric share (x−6)", phase, func(p PhaseCell) float64 { return p.Sym }),
			phaseChart("phase-seen", "seen pairs: test accuracy", phase, func(p PhaseCell) float64 { return p.SeenTest }),
		}},
		report.Section{ID: "phase-best", Heading: "The paper's own selection",
			Text: []string{"Per mapping, the best (4,3) accuracy over the learning rates."},
			Charts: []report.Chart{
				phaseChart("phase-inferential-best", "inferential, best over rates (Fig. 2b)", phase, func(p PhaseCell) float64 { return p.InfBest }),
				phaseChart("phase-symmetric-best", "symmetric, best over rates (Fig. 2a)", phase, func(p PhaseCell) float64 { return p.SymBest }),
			}})
	if len(mix) > 0 {
		pg.Sections = append(pg.Sections, report.Section{ID: "mix", Heading: "Reasoning and memory anchors (Yao et al. 2025, arXiv 2502.04375)",
			Text:   []string{"Accuracy after the same budget, mean ± sd over seeds: memory on every key-anchor combination, reasoning on training pairs and on the held-out pairs M."},
			Charts: []report.Chart{mixChart(mix)}})
	}
	for i, c := range conds {
		s := report.Section{ID: fmt.Sprintf("condensation-%d", i+1),
			Heading: fmt.Sprintf("Condensation: γ = %.2g, depth %d, lr %.0e, seed %d", c.Cell.Gamma, c.Cell.Layers, c.Cell.LR, c.Cell.Seed),
			Text: []string{"Row cosines of the first block's W_Q (rows clustered, as in 2405.05409 Fig. 5a-b) and of the item embeddings 20-99 " +
				"in value order (Fig. 5c-d's ordinal structure shows as bands); and diag's summaries."},
			Charts: []report.Chart{{ID: fmt.Sprintf("condensation-%d-cosines", i+1), Title: "row cosines", Width: 560, RowHeight: 280,
				Rows: [][]report.Panel{{cosinePanel("W_Q(1) rows, clustered", c.QCos, c.QRows), cosinePanel("item embeddings 20-99", c.EmbedCos, c.EmbedItems)}}}}}
		t := report.Table{Header: []string{"matrix", "stable rank", "mean |cos|", "× random", "|cos| > 0.9"}}
		for _, m := range c.Matrices {
			t.Rows = append(t.Rows, []string{m.Name, fmt.Sprintf("%.2f", m.StableRank), fmt.Sprintf("%.3f", m.MeanAbsCos), fmt.Sprintf("%.2f", m.CosRatio), fmt.Sprintf("%.3f", m.FracAbove09)})
		}
		s.Tables = append(s.Tables, t)
		pg.Sections = append(pg.Sections, s)
	}
	pg.Sections = append(pg.Sections, report.Section{ID: "table", Heading: "Table", Pre: table})
	return pg
}
