package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestReportLeavesOutEarlierSizings: a group directory holding, beside this call's run, a run of an earlier
// --steps (and one of a seed this call does not run) gets a report of this call's run only; the others are
// named on the page and in the warnings as left out, with why (they were drawn beside the new runs, unsaid).
func TestReportLeavesOutEarlierSizings(t *testing.T) {
	out := t.TempDir()
	group := filepath.Join(out, "runs")
	write := func(name string, steps int) string {
		c, err := train.Load("", []string{"model.preset=tiny", "train.steps=" + itoa(steps), "data.train=" + filepath.Join(out, "data", "train.tok")})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(group, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		metrics := `{"step":` + itoa(steps) + `,"tokens":6144,"loss":5.1,"val_loss":5.0}` + "\n"
		for file, content := range map[string]string{rundir.ConfigFile: string(b), rundir.MetricsFile: metrics} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	now, earlier, otherSeed := write("a-3steps-seed0", 3), write("a-2steps-seed0", 2), write("a-3steps-seed9", 3)
	outcome := &Outcome{Steps: 3, RunList: []RunInfo{{Arm: "a", Dir: now}}, Plan: &Plan{Name: "t", Groups: []Group{{Name: "runs"}}, Report: ReportSpec{Title: "t"}}}
	page := filepath.Join(out, "report.html")
	var warn strings.Builder
	x := &Execution{out: outcome, o: Options{Out: out, Log: &warn, Windows: 1}}
	if err := x.WriteReport(context.Background()); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{earlier, otherSeed} {
		if !strings.Contains(warn.String(), "skipped "+dir+": ") || !strings.Contains(string(html), dir) {
			t.Errorf("%s is not named as left out:\n%s", dir, warn.String())
		}
	}
	if !strings.Contains(warn.String(), "a run of an earlier sizing (2 steps; this call trains 3 per run)") ||
		!strings.Contains(warn.String(), otherSeed+": not one of the runs this call planned") {
		t.Errorf("the warnings do not say why:\n%s", warn.String())
	}
	if strings.Contains(string(html), "a-2steps-seed0</") || strings.Contains(string(html), ">a-3steps-seed9") {
		t.Errorf("a left-out run is drawn in the report")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
