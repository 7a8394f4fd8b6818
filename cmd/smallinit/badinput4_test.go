//go:build linux || darwin

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/smallinit/smallinit/anchor"
	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// acceptedCases are inputs the catalogue's commands once accepted without a word (a run id leading outside the
// sweep, a vocabulary, step count or seed past what the next reader takes, a budget of 0, a directory named like
// a built-in plan, a condensation model left out of a diagram, a resume of a checkpoint no run wrote, a size law
// that rises with N) and messages that named neither the file nor the fix (an extended run, an empty lock).
// Each fails naming what is wrong.
func acceptedCases() []badCase {
	flag := func(name, cmd string, want []string, args ...string) badCase {
		return badCase{name: name, cmd: cmd, want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			return args, []string{"o"}
		}}
	}
	plan := func(name string, want []string, old, new string) badCase {
		return badCase{name: name, cmd: "study", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			p := demoPlanWith(t, cd, func(s string) string {
				if !strings.Contains(s, old) {
					t.Fatalf("the demo plan has no %q", old)
				}
				return strings.Replace(s, old, new, 1)
			})
			return []string{p, "--out", filepath.Join(cd, "o")}, []string{"o"}
		}}
	}
	// A sweep directory cd/s/a whose plan.json lists the runs given, and a victim's metrics where the id "../../victim"
	// leads from cd/s/a/runs.
	sweepDir := func(t *testing.T, cd string, runs []sweep.Run) string {
		write(t, cd, "s/victim/metrics.jsonl", []byte(`{"step": 7, "tokens": 70, "loss": 1.5}`+"\n"))
		b, err := json.Marshal(sweep.Plan{Version: 1, Fingerprint: "x", Axes: []sweep.Axis{}, Runs: runs})
		if err != nil {
			t.Fatal(err)
		}
		write(t, cd, "s/a/"+sweep.PlanFile, b)
		return filepath.Join(cd, "s", "a")
	}
	// The fixture run, stopped at step 2 of 4, with its config.toml edited by sets and without its final model.
	resumeWith := func(name string, want []string, edit func(t *testing.T, run string)) badCase {
		return badCase{name: name, cmd: "train", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			run := copyDir(t, cd, "run")
			os.RemoveAll(filepath.Join(run, rundir.FinalDir))
			edit(t, run)
			return []string{"--resume", run}, []string{"run/metrics.jsonl"}
		}}
	}
	setSteps := func(t *testing.T, run string, steps int) {
		p := filepath.Join(run, rundir.ConfigFile)
		c, err := train.Load(p, []string{fmt.Sprintf("train.steps=%d", steps), "train.checkpoint_interval=1", "schedule.warmup_steps=0"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		write(t, run, rundir.ConfigFile, b)
	}
	ck := func(run string) string { return filepath.Join(run, "checkpoints", "step-000002") }
	render := func(name string, want []string, edit func(t *testing.T, final string)) badCase {
		return badCase{name: name, cmd: "anchor render", want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			d := copyDiagram(t, cd)
			runs, _ := os.ReadDir(filepath.Join(d, "runs"))
			for _, r := range runs {
				edit(t, filepath.Join(d, "runs", r.Name(), rundir.FinalDir))
			}
			return []string{d}, []string{"d/table.txt", "d/diagram.html"}
		}}
	}
	return []badCase{
		// 1. A run id read from plan.json is held to the alphabet of arm names.
		{name: "run id leaving the sweep", cmd: "sweep collect", want: []string{sweep.PlanFile, `"../../victim"`},
			setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{sweepDir(t, cd, []sweep.Run{{ID: "../../victim", Values: map[string]any{}}})}, []string{"s/a/results.csv", "s/a/results.json"}
			}},
		{name: "run id leaving the sweep", cmd: "sweep status", want: []string{sweep.PlanFile, `"../../victim"`},
			setup: func(t *testing.T, cd string) ([]string, []string) {
				return []string{sweepDir(t, cd, []sweep.Run{{ID: "../../victim", Values: map[string]any{}}})}, nil
			}},
		// 2. A plan's vocabulary is held to the CLI's bound.
		plan("vocabulary past a model's", []string{"data.vocab = 1000000000", "16777216"}, "vocab = 4096", "vocab = 1000000000"),
		// 3. A sweep of more runs than any grid expands to.
		{name: "more runs than a sweep holds", cmd: "sweep status", want: []string{sweep.PlanFile, "10001 runs, more than 10000"},
			setup: func(t *testing.T, cd string) ([]string, []string) {
				runs := make([]sweep.Run, sweep.MaxRuns+1)
				for i := range runs {
					runs[i] = sweep.Run{Index: i, ID: fmt.Sprintf("%05d-x", i), Values: map[string]any{}}
				}
				return []string{sweepDir(t, cd, runs)}, nil
			}},
		// 4. A path named like a built-in plan that is no plan file is the user's mistake, not the built-in.
		{name: "a directory named demo", cmd: "study", want: []string{"demo", "is a directory", "not a plan file", "run from another directory"},
			setup: func(t *testing.T, cd string) ([]string, []string) {
				os.Mkdir(filepath.Join(cd, "demo"), 0o755)
				return []string{"demo", "--out", "o", "--steps", "1"}, []string{"o"}
			}},
		{name: "an oversized file named reproduce", cmd: "study", want: []string{"reproduce", "16 MiB", "not a plan file"},
			setup: func(t *testing.T, cd string) ([]string, []string) {
				f, err := os.Create(filepath.Join(cd, "reproduce"))
				if err != nil {
					t.Fatal(err)
				}
				f.Truncate(20 << 20)
				f.Close()
				return []string{"reproduce", "--out", "o", "--print-plan"}, []string{"o"}
			}},
		// 5. A budget of nothing.
		flag("zero budget", "study", []string{"--budget 0s", "leave it out"}, "demo", "--out", "o", "--budget", "0"),
		flag("zero budget", "reproduce", []string{"--budget 0s"}, "--out", "o", "--budget", "0"),
		// 6. A condensation model that is there but broken is not left out of the diagram in silence.
		render("truncated condensation model", []string{arch.WeightsFile, "remove"}, func(t *testing.T, final string) {
			p := filepath.Join(final, arch.WeightsFile)
			b := read(t, p)
			write(t, final, arch.WeightsFile, b[:len(b)/2])
		}),
		render("condensation model of another vocabulary", []string{"vocab 304", "the grid trains vocab"}, func(t *testing.T, final string) {
			rewriteVocab(t, final, 304) // loads, and only its shape is foreign
		}),
		// 7. A checkpoint no run wrote: a zero state at step 0, and a step past the run's total (an older build's
		// checkpoint, with no config fingerprint, under a config.toml cut to fewer steps).
		resumeWith("resume a zero state at step 0", []string{"state.json", "a checkpoint of step 0"}, func(t *testing.T, run string) {
			if err := os.Rename(ck(run), filepath.Join(run, "checkpoints", "step-000000")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(run, "checkpoints", "step-000000"), "state.json", []byte(`{}`))
			// Without a manifest, as a checkpoint of a build before manifests (this build's would be refused
			// for its changed state.json before the state is read).
			if err := os.Remove(filepath.Join(run, "checkpoints", "step-000000", "manifest.json")); err != nil {
				t.Fatal(err)
			}
		}),
		resumeWith("resume a checkpoint past the run's steps", []string{"step-000002", "past the run's 1 steps", "config.toml"}, func(t *testing.T, run string) {
			var st map[string]any
			if err := json.Unmarshal(read(t, filepath.Join(ck(run), "state.json")), &st); err != nil {
				t.Fatal(err)
			}
			delete(st, "config")
			b, _ := json.Marshal(st)
			write(t, ck(run), "state.json", b)
			setSteps(t, run, 1)
		}),
		// 8. A size law that rises with N.
		{name: "size law with a negative alpha", cmd: "report", want: []string{"--fit", "law.json", "alpha = -0.3"},
			setup: func(t *testing.T, cd string) ([]string, []string) {
				p := write(t, cd, "law.json", []byte(`{"E": 1, "A": 2, "alpha": -0.3}`))
				return []string{fix("run"), "--fit", p, "--out", filepath.Join(cd, "r.html")}, []string{"r.html"}
			}},
		// 9. A budget's min_steps past what sizing.json is read back with.
		plan("min_steps past a sizing's", []string{"budget.min_steps = 2000000000", "1000000000"}, "min_steps = 10", "min_steps = 2000000000"),
		// 10. A seed past what config.toml (a TOML int64) holds.
		flag("seed past a TOML integer", "anchor diagram", []string{"--seeds: seed 18446744073709551615", "9223372036854775807"}, "--out", "o", "--seeds", "18446744073709551615"),
		flag("seed past a TOML integer", "demo", []string{"--seed 18446744073709551615", "9223372036854775807"}, "--out", "o", "--seed", "18446744073709551615", "--steps", "1"),
		// 12. Extending a run: the refusal says how.
		resumeWith("resume with more steps", []string{"config.toml", "to train longer, start a new run whose init is this run's checkpoint, or a WSD continuation"},
			func(t *testing.T, run string) { setSteps(t, run, 8) }),
		// 13. An empty lock names its path, the staleness rule and the fix.
		resumeWith("empty lock", []string{"run/lock", "(empty)", "counts as abandoned once its mtime is 30s old", "remove it"}, func(t *testing.T, run string) {
			write(t, run, "lock", nil)
		}),
	}
}

// diagramOnce trains the catalogue's anchor diagram (one cell of the tiny grid) once, on first use.
var diagramOnce = sync.OnceValues(func() (string, error) {
	d := filepath.Join(badFix, "diagram")
	g := anchor.Grid{Gammas: []float64{0.5}, Depths: []int{1}, LRs: []float64{1e-3}, Seeds: []uint64{1},
		Shape: anchor.Shape{Dim: 16, FFN: 32, HeadDim: 8, Norm: arch.NormLayer}, Budget: anchor.Budget{Steps: 4, Batch: 8, Threads: 1},
		Examples: 200, Jobs: 1}
	_, err := anchor.Run(context.Background(), g, d, nil)
	return d, err
})

// copyDiagram copies the trained diagram (grid.json, results.jsonl, runs/) to cd/d.
func copyDiagram(t *testing.T, cd string) string {
	t.Helper()
	if _, err := diagramOnce(); err != nil {
		t.Fatalf("training the fixture diagram: %v", err)
	}
	src := copyDir(t, cd, "diagram")
	d := filepath.Join(cd, "d")
	if err := os.Rename(src, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// rewriteVocab replaces the model in dir by one of the same shape but vocab tokens (constant weights).
func rewriteVocab(t *testing.T, dir string, vocab int) {
	t.Helper()
	c, _, err := model.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Vocab = vocab
	pool := kernel.NewPool(1)
	defer pool.Close()
	m, err := model.New(c, 1, pool)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Params.Flat {
		m.Params.Flat[i] = 0.01
	}
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
}
