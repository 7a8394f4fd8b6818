package train

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestResumeRefusesStateItCannotHaveWritten: a resume refuses, naming the file, a state.json that is empty or
// holds no state (no run writes one; an empty state is consistent only with a checkpoint of step 0, which no
// run takes), and a checkpoint past the run's own steps (a config.toml edited to fewer
// steps under a checkpoint of an older build, which records no config fingerprint); a config.toml edited to
// more steps is refused saying how to train longer. metrics.jsonl is left as it was.
func TestResumeRefusesStateItCannotHaveWritten(t *testing.T) {
	template := fuzzRun(t) // 4 steps, stopped at step 2 with a checkpoint
	ck := func(run string) string { return filepath.Join(run, checkpointsDir, checkpointName(2)) }
	for _, tc := range []struct {
		name, want string
		edit       func(t *testing.T, run string)
	}{
		{"empty state.json", stateFile, func(t *testing.T, run string) { os.WriteFile(filepath.Join(ck(run), stateFile), nil, 0o644) }},
		{"state.json null", stateFile, func(t *testing.T, run string) { os.WriteFile(filepath.Join(ck(run), stateFile), []byte("null"), 0o644) }},
		{"state.json {}", stateFile, func(t *testing.T, run string) { os.WriteFile(filepath.Join(ck(run), stateFile), []byte("{}"), 0o644) }},
		{"empty state.json at step 0", "a checkpoint of step 0", func(t *testing.T, run string) {
			// A zero state is self-consistent only at step 0, where no run checkpoints.
			if err := os.Rename(ck(run), filepath.Join(run, checkpointsDir, checkpointName(0))); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(run, checkpointsDir, checkpointName(0), stateFile), []byte("{}"), 0o644)
		}},
		{"checkpoint past the run's steps", "past the run's 1 steps", func(t *testing.T, run string) {
			// An older build's checkpoint (no fingerprint) under a config.toml cut to 1 step.
			p := filepath.Join(ck(run), stateFile)
			b, _ := os.ReadFile(p)
			var st State
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			st.Config = ""
			b, _ = json.Marshal(st)
			os.WriteFile(p, b, 0o644)
			cfg := filepath.Join(run, rundir.ConfigFile)
			c, err := Load(cfg, []string{"train.steps=1", "train.checkpoint_interval=1", "train.eval_interval=1", "schedule.warmup_steps=0"})
			if err != nil {
				t.Fatal(err)
			}
			enc, _ := c.Encode()
			os.WriteFile(cfg, enc, 0o644)
		}},
		{"more steps", "to train longer, start a new run whose init is this run's checkpoint, or a WSD continuation", func(t *testing.T, run string) {
			// Extending a run is a legitimate wish that resume cannot grant (the schedule is fixed by the
			// length): the refusal says what can.
			cfg := filepath.Join(run, rundir.ConfigFile)
			c, err := Load(cfg, []string{"train.steps=8"})
			if err != nil {
				t.Fatal(err)
			}
			enc, _ := c.Encode()
			os.WriteFile(cfg, enc, 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			copyTree(t, template, run)
			tc.edit(t, run)
			resealCheckpoints(t, run)
			before, _ := os.ReadFile(filepath.Join(run, rundir.MetricsFile))
			_, err := Resume(context.Background(), run, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("resume: %v, want an error containing %q", err, tc.want)
			}
			if after, _ := os.ReadFile(filepath.Join(run, rundir.MetricsFile)); string(after) != string(before) {
				t.Errorf("metrics.jsonl changed by a refused resume")
			}
		})
	}
}

// resealCheckpoints writes the manifest of every checkpoint of run again, as a forger would after editing its
// state: the state's own checks stand behind the manifest's sums.
func resealCheckpoints(t *testing.T, run string) {
	t.Helper()
	es, _ := os.ReadDir(filepath.Join(run, checkpointsDir))
	for _, e := range es {
		if err := filesum.Write(filepath.Join(run, checkpointsDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}
