package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestRunReadsBackWhatTheLoopWrote trains a small run and reads every file back through Run: the config is
// the one started, metrics and diagnostics have a line per logged step in order, the summary agrees with the
// last lines, init.json and the final model's smallinit_init hold the recipe and seed, and the final model loads.
func TestRunReadsBackWhatTheLoopWrote(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 6, "train.diagnostics_interval=3")
	dir := filepath.Join(root, "run")
	res, err := Start(context.Background(), c, dir, Options{Diagnostics: recordStep})
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Config()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := got.Encode()
	b, _ := c.Encode()
	if string(a) != string(b) {
		t.Errorf("Config differs from the config started:\n%s\nwant\n%s", a, b)
	}
	ms, err := r.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Step != 0 || ms[len(ms)-1].Step != 6 {
		t.Fatalf("metrics steps: %+v", ms)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].Step <= ms[i-1].Step {
			t.Fatalf("metrics out of order at line %d: %+v", i+1, ms)
		}
	}
	s, err := r.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if s.Step != 6 || s.TrainLoss != res.Loss || s.ValLoss != res.ValLoss || s.Tokens != ms[len(ms)-1].Tokens {
		t.Errorf("summary %+v, result %+v", s, res)
	}
	if !(s.TokensPerS > 0) || !(s.BestValLoss <= s.ValLoss) {
		t.Errorf("summary throughput %v, best val loss %v (last %v)", s.TokensPerS, s.BestValLoss, s.ValLoss)
	}
	ds, err := rundir.Diagnostics[stepRecord](r.Run)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 || ds[0].Step != 0 || ds[2].Step != 6 || ds[1].Diagnostics.Probe != 3 {
		t.Errorf("diagnostics %+v, want steps 0, 3, 6 with their records", ds)
	}
	ir, err := r.Init()
	if err != nil {
		t.Fatal(err)
	}
	if ir.Seed != c.Seed || ir.Recipe.Rule != c.Init.Rule || ir.Optimizer == nil || *ir.Optimizer != c.Optimizer || len(ir.Tensors) == 0 {
		t.Errorf("init record %+v", ir)
	}
	pool := kernel.NewPool(1)
	defer pool.Close()
	m, err := r.FinalModel(2, pool)
	if err != nil {
		t.Fatal(err)
	}
	if m.Config != c.Model.Config {
		t.Errorf("final model config %+v", m.Config)
	}
	if !r.Done() || !r.HasModel(rundir.FinalDir) || !r.HasModel(rundir.InitDir) {
		t.Errorf("Done %v, final %v, init %v", r.Done(), r.HasModel(rundir.FinalDir), r.HasModel(rundir.InitDir))
	}
}

// stepRecord is the record recordStep writes.
type stepRecord struct {
	Probe int `json:"probe"`
}

func recordStep(step int, _ *model.Model, _ []int32) (any, error) {
	return stepRecord{Probe: step}, nil
}

// TestRunReadersRefuseHostileFiles: each JSON-lines reader, given a file that is not one this package wrote,
// returns an error naming the file (and the line where there is one) and never hangs or reads without bound;
// a half-written last line is not an error.
func TestRunReadersRefuseHostileFiles(t *testing.T) {
	line := `{"step":2,"tokens":64,"loss":3.9,"tokens_per_s":1000}` + "\n"
	cases := []struct {
		name     string
		make     func(t *testing.T, path string) // writes the hostile file at path
		wantErr  string                          // "" : no error
		wantRead int                             // lines read back
	}{
		{"half-written last line", writeBytes(line + `{"step":4,"tok`), "", 1},
		{"malformed middle line", writeBytes(line + "not json\n" + line), "1 unreadable line(s), first at line 2", 2},
		{"malformed terminated last line", writeBytes(line + "{\"step\":\n"), "first at line 2", 1},
		{"line without a step", writeBytes(line + `{"tokens":5}` + "\n"), `no "step"`, 1},
		{"JSON null line", writeBytes("null\n" + line), `no "step"`, 1},
		{"an array, not an object", writeBytes("[1,2]\n"), "line 1", 0},
		{"non-finite number", writeBytes(`{"step":1,"val_loss":1e999}` + "\n"), "line 1", 0},
		{"a directory", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, "directory", 0},
		{"a FIFO", func(t *testing.T, p string) {
			if runtime.GOOS == "windows" || syscall.Mkfifo(p, 0o644) != nil {
				t.Skip("no FIFOs here")
			}
		}, "FIFO", 0},
		{"a symlink to a device", func(t *testing.T, p string) {
			if os.Symlink("/dev/zero", p) != nil {
				t.Skip("no symlinks here")
			}
		}, "device", 0},
		{"missing", func(t *testing.T, p string) {}, "no such file", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, rundir.MetricsFile)
			tc.make(t, path)
			r, err := OpenRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			ms, err := r.Metrics()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path)):
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, tc.wantErr)
			}
			if len(ms) != tc.wantRead {
				t.Errorf("%d lines read, want %d", len(ms), tc.wantRead)
			}
			// The same file as diagnostics.jsonl: same rules, except that a missing file is no diagnostics.
			dpath := filepath.Join(dir, rundir.DiagFile)
			os.Remove(dpath)
			if _, err := os.Lstat(path); err == nil {
				if err := os.Rename(path, dpath); err != nil {
					t.Fatal(err)
				}
			}
			_, err = rundir.Diagnostics[map[string]any](r.Run)
			if tc.name == "missing" {
				if err != nil {
					t.Errorf("no diagnostics file: %v, want no error", err)
				}
				return
			}
			if tc.wantErr != "" && tc.name != "non-finite number" && (err == nil || !strings.Contains(err.Error(), dpath)) {
				t.Errorf("diagnostics error %v, want one naming %s", err, dpath)
			}
		})
	}
}

func writeBytes(s string) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStartOrResume: a new directory starts the run; an interrupted one resumes when its config is the same
// (train.threads aside, the earlier attempt's threads kept) and ends exactly where a straight run does; a
// config that differs in anything else is refused before anything is written; a finished run is read back
// without training or rewriting its final model.
func TestStartOrResume(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 7, "train.threads=1")
	straight := filepath.Join(root, "straight")
	if _, err := Start(context.Background(), c, straight, Options{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "run")
	ctx, cancel := context.WithCancel(context.Background())
	res, err := StartOrResume(ctx, c, dir, Options{AfterStep: func(s int) {
		if s == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) || res.Resumed || res.Threads != 1 {
		t.Fatalf("first attempt: %+v, %v; want a new run on 1 thread, interrupted", res, err)
	}
	metrics := func() string { b, _ := os.ReadFile(filepath.Join(dir, rundir.MetricsFile)); return string(b) }
	before := metrics()

	edits := []struct{ name, set string }{
		{"learning rate", "schedule.lr=0.5"},
		{"seed", "seed=8"},
		{"evaluation windows", "train.eval_windows=3"},
	}
	for _, e := range edits {
		ec := smallRun(t, root, 7, "train.threads=1", e.set)
		_, err := StartOrResume(context.Background(), ec, dir, Options{})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, rundir.ConfigFile)) || !strings.Contains(err.Error(), "differs") {
			t.Errorf("edited %s: %v, want a refusal naming config.toml", e.name, err)
		}
		if metrics() != before {
			t.Errorf("edited %s: the refused resume changed metrics.jsonl", e.name)
		}
	}

	other := c
	other.Train.Threads = 2 // threads may differ: they do not change what is computed
	res, err = StartOrResume(context.Background(), other, dir, Options{})
	if err != nil || !res.Resumed || res.Threads != 1 || res.Steps != 7 {
		t.Fatalf("resume: %+v, %v; want resumed on the earlier attempt's 1 thread to step 7", res, err)
	}
	sameRun(t, straight, dir)

	weights := filepath.Join(dir, rundir.FinalDir, "model.safetensors")
	st, _ := os.Stat(weights)
	again, err := StartOrResume(context.Background(), c, dir, Options{})
	if err != nil || !again.Resumed || again.Loss != res.Loss || again.ValLoss != res.ValLoss {
		t.Fatalf("finished run: %+v, %v; want the same losses %v, %v", again, err, res.Loss, res.ValLoss)
	}
	if st2, _ := os.Stat(weights); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("a finished run's final model was rewritten")
	}
	ec := smallRun(t, root, 7, "seed=9")
	if _, err := StartOrResume(context.Background(), ec, dir, Options{}); err == nil {
		t.Error("a finished run was accepted for another config")
	}
}

// TestRunConfigAndInitNameBadFiles: a config.toml or init.json that is not one this package wrote is an error
// naming the file, not a zero config or record.
func TestRunConfigAndInitNameBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		make       func(t *testing.T, path string)
		read       func(r *Run) error
	}{
		{"config is a directory", rundir.ConfigFile, func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, func(r *Run) error { _, err := r.Config(); return err }},
		{"config is not TOML", rundir.ConfigFile, writeBytes("[model\n"), func(r *Run) error { _, err := r.Config(); return err }},
		{"config has an unknown key", rundir.ConfigFile, writeBytes("colour = 1\n"), func(r *Run) error { _, err := r.Config(); return err }},
		{"init is not JSON", rundir.InitFile, writeBytes("{"), func(r *Run) error { _, err := r.Init(); return err }},
		{"init has no recipe", rundir.InitFile, writeBytes(`{"seed": 1}`), func(r *Run) error { _, err := r.Init(); return err }},
		{"init is missing", rundir.InitFile, func(*testing.T, string) {}, func(r *Run) error { _, err := r.Init(); return err }},
		{"no final model", rundir.FinalDir, func(*testing.T, string) {}, func(r *Run) error {
			_, err := r.FinalModel(1, nil)
			return err
		}},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, tc.file)
		tc.make(t, path)
		r, err := OpenRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.read(r); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, path)
		}
	}
}
