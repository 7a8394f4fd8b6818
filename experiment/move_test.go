package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestMovedStudyResumes: a study (an arm group and a sweep group) whose --out is moved (mv OUT OUT2) resumes
// under --out OUT2: finished runs are read back, and runs killed after their first checkpoint (final/ and the
// later checkpoint gone) train again to the same final weights and metrics, bit for bit. The resumed runs'
// config.toml and the sweep's plan.json name the data under OUT2.
func TestMovedStudyResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: prepares a corpus and trains 3 runs twice")
	}
	// The checkpoint key joins the plan's [base] (before its first group); the sweep group follows the arms.
	text := strings.Replace(myPlanForTest, "[[group]]", "\"train.checkpoint_interval\" = 2\n[[group]]", 1) +
		"[[group]]\nname = \"grid\"\naxes = { \"init.gamma\" = [0.5, 1] }\n"
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		kill bool // remove final/ and the step-4 checkpoint of every run before the move
	}{
		{"finished runs", false},
		{"runs killed after a checkpoint", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			out := filepath.Join(base, "study")
			first, err := Run(context.Background(), p, Options{Out: out, Steps: 4, Windows: 2})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{}
			for _, r := range first.RunList {
				rel, _ := filepath.Rel(out, r.Dir)
				want[rel] = runFingerprint(t, r.Dir)
				if tc.kill {
					os.RemoveAll(filepath.Join(r.Dir, rundir.FinalDir))
					os.RemoveAll(filepath.Join(r.Dir, "checkpoints", "step-000004"))
				}
			}
			if len(want) != 3 {
				t.Fatalf("%d runs, want 3", len(want))
			}
			moved := filepath.Join(base, "moved")
			if err := os.Rename(out, moved); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			again, err := Run(context.Background(), p, Options{Out: moved, Steps: 4, Windows: 2, Log: &log})
			if err != nil {
				t.Fatalf("resume under the moved --out: %v\n%s", err, log.String())
			}
			if tc.kill && !strings.Contains(log.String(), "was moved with its data") {
				t.Errorf("the log does not say that a run was moved:\n%s", log.String())
			}
			for _, r := range again.RunList {
				rel, _ := filepath.Rel(moved, r.Dir)
				if got := runFingerprint(t, r.Dir); !bytes.Equal(got, want[rel]) {
					t.Errorf("%s: final weights and metrics differ after the move", rel)
				}
				if tc.kill {
					c, err := train.Load(filepath.Join(r.Dir, rundir.ConfigFile), nil)
					if err != nil || !strings.HasPrefix(c.Data.Train, moved) || !strings.HasPrefix(c.Data.Val, moved) {
						t.Errorf("%s: config.toml data %+v, %v; want paths under %s", rel, c.Data, err, moved)
					}
				}
			}
			if plan, _ := os.ReadFile(filepath.Join(moved, "grid", "plan.json")); !bytes.Contains(plan, []byte(moved+"/data/")) {
				t.Errorf("grid/plan.json still names the old data:\n%s", plan)
			}
		})
	}
}

// runFingerprint is a finished run's final weights followed by its metrics lines without the wall-clock field.
func runFingerprint(t *testing.T, dir string) []byte {
	t.Helper()
	w, err := os.ReadFile(filepath.Join(dir, rundir.FinalDir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(dir, rundir.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.Write(w)
	for _, line := range bytes.Split(bytes.TrimSpace(m), []byte("\n")) {
		var v map[string]any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%s: metrics line %q: %v", dir, line, err)
		}
		delete(v, "tokens_per_s")
		b, _ := json.Marshal(v)
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes()
}
