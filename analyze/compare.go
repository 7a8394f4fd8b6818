package analyze

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/report"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// Comparison is the token-difficulty comparison a report draws: the final models of runs (or model
// directories) A and B, compared by CompareModels, or File, a compare JSON file (report.ReadCompare). The zero
// value is no comparison.
type Comparison struct {
	A, B string
	File string
}

// ParseComparison parses the report's --compare: "A=DIR,B=DIR" (either order) is a pair of runs, a value
// without "=" a compare JSON file; "" is no comparison.
func ParseComparison(spec string) (Comparison, error) {
	if spec == "" {
		return Comparison{}, nil
	}
	if !strings.Contains(spec, "=") {
		return Comparison{File: spec}, nil
	}
	var c Comparison
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok || v == "":
			return Comparison{}, fmt.Errorf("comparison %q: want A=DIR,B=DIR (or a compare JSON file)", spec)
		case strings.EqualFold(k, "a"):
			c.A = v
		case strings.EqualFold(k, "b"):
			c.B = v
		default:
			return Comparison{}, fmt.Errorf("comparison %q: unknown side %q (want A and B)", spec, k)
		}
	}
	if c.A == "" || c.B == "" {
		return Comparison{}, fmt.Errorf("comparison %q: want both A=DIR and B=DIR", spec)
	}
	return c, nil
}

// modelDir resolves a run directory to its final model (a model directory is returned as it is) and returns
// the run's config when there is one (read through train.Run, the owner of the run's files).
func modelDir(dir string) (string, *recipe.Config, error) {
	var cfg *recipe.Config
	if r, err := train.OpenRun(dir); err == nil && r.HasConfig() {
		if c, err := r.Config(); err == nil {
			cfg = &c
		}
	}
	if diag.IsModelDir(dir) {
		return dir, cfg, nil
	}
	if final := filepath.Join(dir, rundir.FinalDir); diag.IsModelDir(final) {
		return final, cfg, nil
	}
	return "", cfg, fmt.Errorf("%s: neither a model directory nor a run with a final model", dir)
}

// CompareModels compares (diag.CompareFiles) the final models of runs (or model directories) a and b over the
// validation tokens of a's run config (b's when a has none), scoring at most windows windows (0: all) in
// bins difficulty quantiles: the comparison a report draws.
func CompareModels(a, b string, windows, bins int) (*report.CompareData, error) {
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
	cmp, err := diag.CompareFiles(ma, mb, toks, bins, windows, "", nil)
	if err != nil {
		return nil, fmt.Errorf("comparison: %w", err)
	}
	return &report.CompareData{A: a, B: b, Tokens: toks, Cmp: cmp}, nil
}
