package report

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// Coordcheck is a coordinate check (diagrec.Coordcheck, the output of `smallinit coordcheck --json`) and the file
// it was read from.
type Coordcheck struct {
	Source string // the file's base name
	diagrec.Coordcheck
}

// ReadCoordcheck reads a coordinate check saved from `smallinit coordcheck --json`.
func ReadCoordcheck(path string) (*Coordcheck, error) {
	b, err := inputfile.ReadFile(path, inputfile.MaxTable)
	if err != nil {
		return nil, fmt.Errorf("coordinate check: %w", err)
	}
	var c Coordcheck
	if err := json.Unmarshal(b, &c.Coordcheck); err != nil {
		return nil, fmt.Errorf("coordinate check %s: %w", path, err)
	}
	if len(c.Points) == 0 {
		return nil, fmt.Errorf("coordinate check %s: no points (want the JSON output of smallinit coordcheck)", path)
	}
	c.Source = filepath.Base(path)
	return &c, nil
}

// figCoordcheck draws, for each check, layer 0's attention and FFN residual ratio against width on log-log
// axes, one line per step, with the predicted slope 1 − γ for reference.
func figCoordcheck(ccs []*Coordcheck) (*Figure, string) {
	if len(ccs) == 0 {
		return nil, "no --coordcheck given"
	}
	ch := Chart{ID: FigCoordcheck, Title: "Coordinate check: residual ratio against width", Width: 780, RowHeight: 260}
	var notes []string
	stepIdx := map[int]int{}
	var stepsSeen []int
	for _, cc := range ccs {
		attn := Panel{Title: fmt.Sprintf("attention, layer 0 — γ = %g", cc.Gamma), XLabel: "width d", YLabel: "RMS(Attn(Norm x)) / RMS(x)",
			LogX: true, LogY: true, Tight: true}
		ffn := Panel{Title: fmt.Sprintf("FFN, layer 0 — γ = %g", cc.Gamma), XLabel: "width d", YLabel: "RMS(FFN(Norm h)) / RMS(h)",
			LogX: true, LogY: true, Tight: true}
		steps := map[int]bool{}
		for _, p := range cc.Points {
			steps[p.Step] = true
		}
		var ss []int
		for s := range steps {
			ss = append(ss, s)
		}
		sort.Ints(ss)
		for _, s := range ss {
			if _, ok := stepIdx[s]; !ok {
				stepIdx[s] = len(stepsSeen)
				stepsSeen = append(stepsSeen, s)
			}
			var xs, ya, yf []float64
			for _, p := range cc.Points {
				if p.Step == s && p.Layer == 0 {
					xs, ya, yf = append(xs, float64(p.Width)), append(ya, p.AttnRatio), append(yf, p.FFNRatio)
				}
			}
			attn.Series = append(attn.Series, Series{X: xs, Y: ya, Color: stepIdx[s] + 1, Marks: true})
			ffn.Series = append(ffn.Series, Series{X: xs, Y: yf, Color: stepIdx[s] + 1, Marks: true})
			if s == ss[0] && len(xs) >= 2 { // the prediction 1 − γ through the first point at the first step
				slope := 1 - cc.Gamma
				if cc.Predicted != nil {
					slope = *cc.Predicted
				}
				lo, hi := xs[0], xs[len(xs)-1]
				attn.Series = append(attn.Series, Series{X: []float64{lo, hi}, Y: []float64{ya[0], ya[0] * math.Pow(hi/lo, slope)},
					Black: true, Width: 0.8, Dashes: []float64{2, 2}})
			}
		}
		var fits []string
		for _, ft := range cc.Fits {
			if ft.Layer == 0 {
				fits = append(fits, fmt.Sprintf("step %d: attention %+.2f, FFN %+.2f", ft.Step, ft.AttnExp, ft.FFNExp))
			}
		}
		note := fmt.Sprintf("%s (γ = %g, predicted attention exponent %+.2f at init)", cc.Source, cc.Gamma, 1-cc.Gamma)
		if len(fits) > 0 {
			note += ": fitted layer-0 exponents " + strings.Join(fits, "; ")
		}
		notes = append(notes, note)
		ch.Rows = append(ch.Rows, []Panel{attn, ffn})
	}
	for _, s := range stepsSeen {
		label := fmt.Sprintf("after %d step%s", s, plural(s))
		if s == 0 {
			label = "at init"
		}
		ch.Legend = append(ch.Legend, LegendEntry{Label: label, Color: colorAt(stepIdx[s])})
	}
	ch.Legend = append(ch.Legend, LegendEntry{Label: "predicted slope 1 − γ", Color: color.RGBA{0, 0, 0, 0xff}, Dashed: true})
	f, err := DrawChart(ch)
	if err != nil {
		return nil, err.Error()
	}
	f.Caption = "μP-style coordinate check from smallinit coordcheck --json: the residual ratio of layer 0 against width at init and " +
		"after a few AdamW steps on random tokens (tiny preset shape, T = 64, ε = 1e-12). " + strings.Join(notes, ". ") + "."
	return f, ""
}
