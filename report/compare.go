package report

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/train"
)

// CompareData is a token-level comparison of two models (diag.Compare) and what was compared.
type CompareData struct {
	A, B   string // the models (run or model directories, or the labels a compare JSON gives)
	Tokens string // the token file they were scored on
	Cmp    diag.Comparison
}

// ParseCompareSpec parses --compare's "A=DIR,B=DIR" into the two directories.
func ParseCompareSpec(spec string) (a, b string, err error) {
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok || v == "":
			return "", "", fmt.Errorf("comparison %q: want A=DIR,B=DIR (or a compare JSON file)", spec)
		case strings.EqualFold(k, "a"):
			a = v
		case strings.EqualFold(k, "b"):
			b = v
		default:
			return "", "", fmt.Errorf("comparison %q: unknown side %q (want A and B)", spec, k)
		}
	}
	if a == "" || b == "" {
		return "", "", fmt.Errorf("comparison %q: want both A=DIR and B=DIR", spec)
	}
	return a, b, nil
}

// modelDir resolves a run directory to its final model (a model directory is returned as it is) and returns
// the run's config when there is one.
func modelDir(dir string) (string, *train.Config, error) {
	var cfg *train.Config
	if isFile(filepath.Join(dir, train.ConfigFile)) {
		c, err := train.Load(filepath.Join(dir, train.ConfigFile), nil)
		if err == nil {
			cfg = &c
		}
	}
	if diag.IsModelDir(dir) {
		return dir, cfg, nil
	}
	if final := filepath.Join(dir, train.FinalDir); diag.IsModelDir(final) {
		return final, cfg, nil
	}
	return "", cfg, fmt.Errorf("%s: neither a model directory nor a run with a final model", dir)
}

// CompareModels compares (diag.CompareFiles) the final models of runs (or model directories) a and b over the
// validation tokens of a's run config (b's when a has none), scoring at most windows windows (0: all) in
// bins difficulty quantiles.
func CompareModels(a, b string, windows, bins int) (*CompareData, error) {
	ma, ca, err := modelDir(a)
	if err != nil {
		return nil, fmt.Errorf("comparison side A: %w", err)
	}
	mb, cb, err := modelDir(b)
	if err != nil {
		return nil, fmt.Errorf("comparison side B: %w", err)
	}
	var toks string
	switch {
	case ca != nil && ca.Data.Val != "":
		toks = ca.Data.Val
	case cb != nil && cb.Data.Val != "":
		toks = cb.Data.Val
	default:
		return nil, fmt.Errorf("comparison: neither %s nor %s is a run whose config names data.val", a, b)
	}
	cmp, err := diag.CompareFiles(ma, mb, toks, bins, windows, "")
	if err != nil {
		return nil, fmt.Errorf("comparison: %w", err)
	}
	return &CompareData{A: a, B: b, Tokens: toks, Cmp: cmp}, nil
}

// ReadCompare reads a comparison from `smallinit compare --json` output ({"a", "b", "tokens", "comparison"})
// or a bare diag.Comparison.
func ReadCompare(path string) (*CompareData, error) {
	b, err := inputfile.ReadFile(path, inputfile.MaxTable)
	if err != nil {
		return nil, fmt.Errorf("comparison: %w", err)
	}
	var wrapped diag.CompareRecord
	if err := json.Unmarshal(b, &wrapped); err != nil {
		return nil, fmt.Errorf("comparison %s: %w", path, err)
	}
	if wrapped.Comparison != nil {
		return &CompareData{A: wrapped.A, B: wrapped.B, Tokens: wrapped.Tokens, Cmp: *wrapped.Comparison}, nil
	}
	var c diag.Comparison
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
	f := &Figure{ID: FigCompare, Title: "A against B by token difficulty"}
	ds := newPlot("mean Δ_sym = (p_A − p_B)/(p_A + p_B)", "token difficulty bin (mean loss of A and B, nats)", "mean Δ_sym")
	lr := newPlot("mean loss reduction loss_B − loss_A", "token difficulty bin (mean loss of A and B, nats)", "nats/token")
	var ticks labelTicks
	bd := &bars{Width: 0.75, Color: colorAt(0)}
	bl := &bars{Width: 0.75, Color: colorAt(1)}
	for i, b := range bins {
		x := float64(i)
		ticks.At = append(ticks.At, x)
		ticks.Labels = append(ticks.Labels, fmt.Sprintf("%.2g", (b.Lo+b.Hi)/2))
		bd.X, bd.Y = append(bd.X, x), append(bd.Y, b.MeanDeltaSym)
		bl.X, bl.Y = append(bl.X, x), append(bl.Y, b.LossReduction)
	}
	for _, p := range []*plot.Plot{ds, lr} {
		p.X.Tick.Marker = ticks
		p.X.Min, p.X.Max = -0.6, float64(len(bins))-0.4
	}
	ds.Add(bd)
	lr.Add(bl)
	f.Points, f.Series = len(bd.X)+len(bl.X), 2
	f.Legend = []LegendEntry{{Label: "mean Δ_sym (positive: A gives the true token more probability)", Color: colorAt(0), Swatch: true},
		{Label: "mean loss_B − loss_A (positive: A is better)", Color: colorAt(1), Swatch: true}}
	var err error
	if f.SVG, err = renderPlots([][]*plot.Plot{{ds, lr}}, vg.Points(780), vg.Points(300), f.Title); err != nil {
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
