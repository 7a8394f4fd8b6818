package anchor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"sort"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/train"
)

// Render writes out/table.txt, out/condensation.json and out/diagram.html (self-contained: inline SVG, no
// scripts) for the results of g, and the table to w. The condensation diagnostics are those of the smallest
// and the largest γ at the smallest depth among the cells that fit the seen pairs (test accuracy ≥ 90%; all
// cells if none does), first seed, at that cell's chosen rate (skipped when their models are not in out/runs).
func Render(g Grid, res []CellResult, out string, w io.Writer) error {
	phase, mix := Phase(res), MixCurve(res)
	var tb bytes.Buffer
	WriteTable(&tb, phase, mix)
	if _, err := w.Write(tb.Bytes()); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(out, "table.txt"), tb.Bytes()); err != nil {
		return err
	}
	conds := extremes(g, phase, out)
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
	return atomicfile.Write(filepath.Join(out, "diagram.html"), HTML(g, phase, mix, conds, tb.String()))
}

// extremes loads and condenses the γ-extreme models of the smallest depth and the first seed.
func extremes(g Grid, phase []PhaseCell, out string) []Condensation {
	if len(phase) == 0 || len(g.Seeds) == 0 {
		return nil
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
	var conds []Condensation
	for _, p := range []PhaseCell{at[0], at[len(at)-1]} {
		c := Cell{Task: TaskComposite, Gamma: p.Gamma, Layers: p.Layers, LR: p.LRs[0], Seed: p.SeedIDs[0]}
		m, _, err := model.Load(filepath.Join(out, "runs", c.Name(), train.FinalDir), 1, pool)
		if err != nil {
			continue
		}
		conds = append(conds, Condense(m, c))
	}
	return conds
}

// colour maps v in [0, 1] to a white-to-dark-blue ramp (NaN: grey).
func colour(v float64) string {
	if math.IsNaN(v) {
		return "#ccc"
	}
	v = math.Max(0, math.Min(1, v))
	r := 255 - v*(255-8)
	gg := 255 - v*(255-48)
	b := 255 - v*(255-107)
	return fmt.Sprintf("#%02x%02x%02x", int(r), int(gg), int(b))
}

// cosColour maps a cosine in [−1, 1] to blue (−1), white (0), red (1).
func cosColour(v float64) string {
	if math.IsNaN(v) {
		return "#ccc"
	}
	v = math.Max(-1, math.Min(1, v))
	if v >= 0 {
		return fmt.Sprintf("#ff%02x%02x", int(255-v*200), int(255-v*200))
	}
	return fmt.Sprintf("#%02x%02xff", int(255+v*200), int(255+v*200))
}

// phaseSVG draws one γ × depth heatmap of value(cell) with the value printed in each cell; cells whose
// seen-pair test accuracy is below 90% are hatched, as 2405.05409 Fig. 2 shades them.
func phaseSVG(title string, phase []PhaseCell, value func(PhaseCell) float64) string {
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
	sort.Ints(ll)
	for i, k := range gl {
		gs[k] = i
	}
	for i, k := range ll {
		ls[k] = i
	}
	const cw, ch, left, top = 56, 40, 50, 30
	W, H := left+cw*len(gl)+10, top+ch*len(ll)+45
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`, W, H)
	b.WriteString(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="1.5"/></pattern></defs>`)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="12" font-weight="bold">%s</text>`, left, html.EscapeString(title))
	for _, p := range phase {
		x, y := left+cw*gs[p.Gamma], top+ch*(len(ll)-1-ls[p.Layers])
		v := value(p)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"/>`, x, y, cw, ch, colour(v))
		if p.SeenTest < 0.9 {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="url(#hatch)" opacity="0.6"/>`, x, y, cw, ch)
		}
		tc := "#000"
		if v > 0.6 {
			tc = "#fff"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s">%.2f</text>`, x+cw/2, y+ch/2+4, tc, v)
	}
	for k, i := range gs {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%.2g</text>`, left+cw*i+cw/2, top+ch*len(ll)+14, k)
	}
	for k, i := range ls {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%d</text>`, left-6, top+ch*(len(ll)-1-i)+ch/2+4, k)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">initialization rate γ (σ = d_in^−γ)</text>`, left+cw*len(gl)/2, top+ch*len(ll)+32)
	fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">depth</text>`, top+ch*len(ll)/2, top+ch*len(ll)/2)
	b.WriteString(`</svg>`)
	return b.String()
}

// mixSVG draws memory and reasoning accuracy against γ with ±1 sd bars.
func mixSVG(mix []MixPoint) string {
	const W, H, left, right, top, bottom = 460, 260, 50, 130, 20, 40
	if len(mix) == 0 {
		return ""
	}
	g0, g1 := mix[0].Gamma, mix[len(mix)-1].Gamma
	if g1 == g0 {
		g1 = g0 + 1
	}
	px := func(g float64) float64 { return left + (g-g0)/(g1-g0)*(W-left-right) }
	py := func(a float64) float64 { return top + (1-a)*(H-top-bottom) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`, W, H)
	for _, a := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%d" y="%.1f" text-anchor="end">%.2f</text>`, left, W-right, py(a), py(a), left-4, py(a)+4, a)
	}
	for _, p := range mix {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.2g</text>`, px(p.Gamma), H-bottom+14, p.Gamma)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">initialization rate γ</text>`, (left+W-right)/2, H-8)
	series := []struct {
		name string
		col  string
		v    func(MixPoint) (float64, float64)
	}{
		{"memory", "#d62728", func(p MixPoint) (float64, float64) { return p.Memory, p.SDMem }},
		{"reasoning (train)", "#1f77b4", func(p MixPoint) (float64, float64) { return p.RsnTrain, p.SDRsnTr }},
		{"reasoning (test, M)", "#2ca02c", func(p MixPoint) (float64, float64) { return p.RsnTest, p.SDRsnTest }},
	}
	for si, s := range series {
		var pts bytes.Buffer
		for _, p := range mix {
			m, sd := s.v(p)
			fmt.Fprintf(&pts, "%.1f,%.1f ", px(p.Gamma), py(m))
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, px(p.Gamma), px(p.Gamma), py(math.Min(1, m+sd)), py(math.Max(0, m-sd)), s.col)
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(p.Gamma), py(m), s.col)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, pts.String(), s.col)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`, W-right+10, W-right+28, top+10+16*si, top+10+16*si, s.col, W-right+32, top+14+16*si, s.name)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// cosSVG draws an n × n cosine matrix, px pixels per entry.
func cosSVG(title string, c []float32, n, px int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11" shape-rendering="crispEdges">`, n*px+10, n*px+28)
	fmt.Fprintf(&b, `<text x="0" y="14">%s</text>`, html.EscapeString(title))
	for i := range n {
		for j := range n {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, j*px, 20+i*px, px, px, cosColour(float64(c[i*n+j])))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// HTML is the diagram's self-contained page.
func HTML(g Grid, phase []PhaseCell, mix []MixPoint, conds []Condensation, table string) []byte {
	var b bytes.Buffer
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>smallinit: anchor-function phase diagram</title>
<style>body{font-family:sans-serif;max-width:1100px;margin:20px auto;color:#222} figure{display:inline-block;margin:8px;vertical-align:top} pre{background:#f6f6f6;padding:8px;font-size:12px;overflow-x:auto} td,th{padding:2px 8px;text-align:right}</style></head><body>`)
	b.WriteString(`<h1>Reasoning against memorisation: the anchor-function phase diagram</h1>`)
	gj, _ := json.Marshal(g)
	fmt.Fprintf(&b, `<p>Composite anchors of Zhang et al. 2024 (arXiv 2405.05409): share of the held-out pair (4,3)'s predictions that are inferential (x−10) or symmetric (x−6), mean over seeds. Hatched: seen-pair test accuracy below 90%% (the paper's shaded zone). Grid: <code>%s</code></p>`, html.EscapeString(string(gj)))
	b.WriteString(`<figure>` + phaseSVG("(4,3) inferential share (x−10)", phase, func(p PhaseCell) float64 { return p.Inf }) + `</figure>`)
	b.WriteString(`<figure>` + phaseSVG("(4,3) symmetric share (x−6)", phase, func(p PhaseCell) float64 { return p.Sym }) + `</figure>`)
	b.WriteString(`<figure>` + phaseSVG("seen pairs: test accuracy", phase, func(p PhaseCell) float64 { return p.SeenTest }) + `</figure>`)
	b.WriteString(`<p>The paper's own selection (per mapping, the best (4,3) accuracy over the learning rates):</p>`)
	b.WriteString(`<figure>` + phaseSVG("inferential, best over rates (Fig. 2b)", phase, func(p PhaseCell) float64 { return p.InfBest }) + `</figure>`)
	b.WriteString(`<figure>` + phaseSVG("symmetric, best over rates (Fig. 2a)", phase, func(p PhaseCell) float64 { return p.SymBest }) + `</figure>`)
	if len(mix) > 0 {
		b.WriteString(`<h2>Reasoning and memory anchors (Yao et al. 2025, arXiv 2502.04375)</h2><p>Accuracy after the same budget, mean ± sd over seeds: memory on every key-anchor combination, reasoning on training pairs and on the held-out pairs M.</p>`)
		b.WriteString(`<figure>` + mixSVG(mix) + `</figure>`)
	}
	if len(conds) > 0 {
		b.WriteString(`<h2>Condensation</h2><p>Row cosines of the first block's W_Q (rows clustered, as in 2405.05409 Fig. 5a-b) and of the item embeddings 20-99 in value order (Fig. 5c-d's ordinal structure shows as bands), red = +1, blue = −1; and diag's summaries.</p>`)
		for _, c := range conds {
			fmt.Fprintf(&b, `<h3>γ = %.2g, depth %d, lr %.0e, seed %d</h3>`, c.Cell.Gamma, c.Cell.Layers, c.Cell.LR, c.Cell.Seed)
			px := max(1, 256/c.QRows)
			b.WriteString(`<figure>` + cosSVG("W_Q(1) rows, clustered", c.QCos, c.QRows, px) + `</figure>`)
			b.WriteString(`<figure>` + cosSVG("item embeddings 20-99", c.EmbedCos, c.EmbedItems, 3) + `</figure>`)
			b.WriteString(`<table><tr><th>matrix</th><th>stable rank</th><th>mean |cos|</th><th>× random</th><th>|cos| &gt; 0.9</th></tr>`)
			for _, m := range c.Matrices {
				fmt.Fprintf(&b, `<tr><td>%s</td><td>%.2f</td><td>%.3f</td><td>%.2f</td><td>%.3f</td></tr>`, html.EscapeString(m.Name), m.StableRank, m.MeanAbsCos, m.CosRatio, m.FracAbove09)
			}
			b.WriteString(`</table>`)
		}
	}
	fmt.Fprintf(&b, `<h2>Table</h2><pre>%s</pre></body></html>`, html.EscapeString(table))
	return b.Bytes()
}
