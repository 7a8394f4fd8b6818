package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestGatherDemoDirKeepsProbeRunsApart: a demo directory after `demo` and `demo --probes` holds runs of the same
// name and seed under runs/ and runs-probes/, trained on data/ and probes-data/. They form two arms, labelled by
// their data, and only the plain run gets the plain summary's row.
func TestGatherDemoDirKeepsProbeRunsApart(t *testing.T) {
	out := t.TempDir()
	name := "gamma1-fixed-3steps-seed0"
	for _, sub := range []struct{ runs, data string }{{"runs", "data"}, {"runs-probes", "probes-data"}} {
		c, err := train.Load("", []string{"model.preset=tiny", "train.steps=3", "data.train=" + filepath.Join(out, sub.data, "train.tok")})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(out, sub.runs, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, content := range map[string]string{rundir.ConfigFile: string(b), rundir.MetricsFile: `{"step":3,"tokens":6144,"loss":5.1,"val_loss":5.0}` + "\n"} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	summary := `{"runs":[{"run":"gamma1-fixed","dir":"` + filepath.Join(out, "runs", name) + `","val_loss":5.0,"val_bits_per_byte":2.5}]}`
	if err := os.WriteFile(filepath.Join(out, "summary.json"), []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Gather([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Arms) != 2 {
		t.Fatalf("plain and probe-mixed runs of seed 0 form %d arm(s), want 2", len(d.Arms))
	}
	for _, a := range d.Arms {
		if !strings.Contains(a.Label, "data=") || strings.Contains(armName(a), "seeds") {
			t.Errorf("arm %q (%s): want a data label and one seed", a.Label, armName(a))
		}
	}
	for _, r := range d.Runs {
		probe := filepath.Base(filepath.Dir(r.Dir)) == "runs-probes"
		if (r.Summary != nil) == probe {
			t.Errorf("%s: summary row %+v", r.Dir, r.Summary)
		}
	}
}

// TestLeaveTakesRunsOutAndRegroups: Data.Leave takes out the runs it is given a reason for, records each in
// Skipped with that reason and groups the rest into arms again.
func TestLeaveTakesRunsOutAndRegroups(t *testing.T) {
	out := t.TempDir()
	for _, steps := range []string{"2", "3"} {
		c, err := train.Load("", []string{"model.preset=tiny", "train.steps=" + steps, "data.train=" + filepath.Join(out, "data", "train.tok")})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(out, "a-"+steps+"steps-seed0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, content := range map[string]string{rundir.ConfigFile: string(b), rundir.MetricsFile: `{"step":` + steps + `,"tokens":6144,"loss":5.1,"val_loss":5.0}` + "\n"} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, err := Gather([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Runs) != 2 || len(d.Arms) != 2 {
		t.Fatalf("%d runs in %d arms, want 2 in 2", len(d.Runs), len(d.Arms))
	}
	left := d.Leave(func(r *Run) string {
		if r.TotalSteps == 2 {
			return "earlier"
		}
		return ""
	})
	if left != 1 || len(d.Runs) != 1 || len(d.Arms) != 1 || d.Arms[0].Runs[0] != d.Runs[0] || d.Runs[0].TotalSteps != 3 || len(d.Varying) != 0 {
		t.Errorf("left %d: runs %d, arms %d, varying %v; want the 3-step run alone in one arm", left, len(d.Runs), len(d.Arms), d.Varying)
	}
	if n := len(d.Skipped); n != 1 || d.Skipped[0].Path != filepath.Join(out, "a-2steps-seed0") || d.Skipped[0].Reason != "earlier" {
		t.Errorf("skipped %+v, want the 2-step run with its reason", d.Skipped)
	}
}
