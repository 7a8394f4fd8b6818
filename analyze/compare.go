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

// ParseCompareSpec parses "A=DIR,B=DIR" (the report's --compare) into the two directories.
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
