package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPlanRefusesHostileRuns: a plan.json whose run id would lead outside DIR/runs (a parent, an absolute
// path, a separator), or that lists more than MaxRuns runs, is refused by ReadPlan (and so by status, collect
// and run) with an error naming plan.json, before any run directory is read.
func TestReadPlanRefusesHostileRuns(t *testing.T) {
	src := t.TempDir()
	g := microGrid(t, src, "")
	p, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(p *Plan)
		want string
	}{
		{"a parent", func(p *Plan) { p.Runs[0].ID = "../../victim" }, `"../../victim"`},
		{"an absolute path", func(p *Plan) { p.Runs[0].ID = "/etc" }, `"/etc"`},
		{"a separator", func(p *Plan) { p.Runs[0].ID = "a/b" }, `"a/b"`},
		{"empty", func(p *Plan) { p.Runs[0].ID = "" }, `id ""`},
		{"too many runs", func(p *Plan) {
			for len(p.Runs) <= MaxRuns {
				p.Runs = append(p.Runs, p.Runs[0])
			}
		}, "more than 10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := *p
			q.Runs = append([]Run(nil), p.Runs...)
			tc.edit(&q)
			dir := t.TempDir()
			b, err := json.Marshal(&q)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, PlanFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Collect(dir)
			if err == nil || !strings.Contains(err.Error(), PlanFile) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Collect: %v; want an error naming %s and %s", err, PlanFile, tc.want)
			}
		})
	}
	// The ids a grid generates pass: the check refuses only what no expansion writes.
	dir := filepath.Join(t.TempDir(), "sweep")
	if err := Prepare(dir, g, p); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPlan(dir); err != nil {
		t.Errorf("a generated plan.json: %v", err)
	}
}
