package report

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// CompareData is a token-level comparison of two models (diagrec.Compare) and what was compared: made by
// analyze.CompareModels or read from a file (ReadCompare).
type CompareData struct {
	A, B   string // the models (run or model directories, or the labels a compare JSON gives)
	Tokens string // the token file they were scored on
	Cmp    diagrec.Comparison
}

// ReadCompare reads a comparison from `smallinit compare --json` output ({"a", "b", "tokens", "comparison"})
// or a bare diagrec.Comparison.
func ReadCompare(path string) (*CompareData, error) {
	b, err := inputfile.ReadFile(path, inputfile.MaxTable)
	if err != nil {
		return nil, fmt.Errorf("comparison: %w", err)
	}
	var wrapped diagrec.CompareRecord
	if err := json.Unmarshal(b, &wrapped); err != nil {
		return nil, fmt.Errorf("comparison %s: %w", path, err)
	}
	if wrapped.Comparison != nil {
		return &CompareData{A: wrapped.A, B: wrapped.B, Tokens: wrapped.Tokens, Cmp: *wrapped.Comparison}, nil
	}
	var c diagrec.Comparison
	if err := json.Unmarshal(b, &c); err != nil || len(c.Bins) == 0 {
		return nil, fmt.Errorf("comparison %s: no difficulty bins (want the JSON output of smallinit compare)", path)
	}
	return &CompareData{A: "A", B: "B", Cmp: c}, nil
}

// figCompare draws the mean Δ_sym and the mean loss reduction of A over B per token-difficulty bin.
func figCompare(c *CompareData) (*Figure, string) {
	if c == nil {
		return nil, "no --compare given"
	}
	bins := c.Cmp.Bins
	if len(bins) == 0 {
		return nil, "the comparison has no difficulty bins"
	}
	ch := Chart{ID: FigCompare, Title: "A against B by token difficulty", Width: 780, RowHeight: 300}
	xlabel := "token difficulty bin (mean loss of A and B, nats)"
	ds := Panel{Title: "mean Δ_sym = (p_A − p_B)/(p_A + p_B)", XLabel: xlabel, YLabel: "mean Δ_sym", Tight: true}
	lr := Panel{Title: "mean loss reduction loss_B − loss_A", XLabel: xlabel, YLabel: "nats/token", Tight: true}
	bd := Bars{Width: 0.75, Color: colorAt(0)}
	bl := Bars{Width: 0.75, Color: colorAt(1)}
	var ticks []Tick
	for i, b := range bins {
		x := float64(i)
		ticks = append(ticks, Tick{At: x, Label: fmt.Sprintf("%.2g", (b.Lo+b.Hi)/2)})
		bd.X, bd.Y = append(bd.X, x), append(bd.Y, b.MeanDeltaSym)
		bl.X, bl.Y = append(bl.X, x), append(bl.Y, b.LossReduction)
	}
	for _, p := range []*Panel{&ds, &lr} {
		p.XTicks, p.XRange = ticks, []float64{-0.6, float64(len(bins)) - 0.4}
	}
	ds.Bars, lr.Bars = []Bars{bd}, []Bars{bl}
	ch.Rows = [][]Panel{{ds, lr}}
	ch.Legend = []LegendEntry{{Label: "mean Δ_sym (positive: A gives the true token more probability)", Color: colorAt(0), Swatch: true},
		{Label: "mean loss_B − loss_A (positive: A is better)", Color: colorAt(1), Swatch: true}}
	f, err := DrawChart(ch)
	if err != nil {
		return nil, err.Error()
	}
	all := c.Cmp.All
	f.Caption = fmt.Sprintf("A = %s, B = %s, scored on %d tokens in %d windows", c.A, c.B, all.Count, c.Cmp.Windows)
	if c.Tokens != "" {
		f.Caption += " of " + c.Tokens
	}
	f.Caption += fmt.Sprintf(": loss A %.4f, loss B %.4f, mean Δ_sym %+.4f, A wins %.1f%% of tokens. Tokens are binned into %d equal-count "+
		"quantiles of difficulty (easiest first; tick labels are bin midpoints).", all.MeanLossA, all.MeanLossB, all.MeanDeltaSym, 100*all.WinShareA, len(bins))
	if math.IsNaN(all.MeanLossA) {
		f.Caption += " (Losses are not finite.)"
	}
	return f, ""
}
