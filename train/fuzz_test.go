package train

import (
	"bufio"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/internal/allocs"
	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"

	"github.com/smallinit/smallinit/data"
)

// splitSets turns the fuzzer's string into --set values, one per line.
func splitSets(s string) []string {
	var sets []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			sets = append(sets, l)
		}
	}
	return sets
}

// FuzzLoad reads arbitrary bytes as a TOML run config with arbitrary --set values (one per line of the second
// argument). A config it accepts must pass Validate and come back unchanged through Encode and Load (Start
// writes config.toml that way and Resume reads it back); errors must say where (the file or --set); it may
// allocate at most 1 MB plus 512 bytes per byte of input (the TOML decoder's work, twice).
func FuzzLoad(f *testing.F) {
	good, _ := recipe.Default().Encode()
	f.Add(good, "data.train=x.tok")
	f.Add([]byte("seed = 3\n[model]\npreset = \"tiny-moe\"\nhidden_size = 64\n[train]\nsteps = 2\n[data]\ntrain = \"t.tok\"\n"), "")
	f.Add([]byte("[model]\npreset = \"small\"\n"), "model.attn_gate=elementwise\nmodel.norm_eps=1e-12\ninit.gamma=0.5\ndata.train=t.tok")
	f.Add([]byte("[init.classes.embed]\nstd = 0.02\n[data]\ntrain='t'\n"), "schedule.kind=wsd\nschedule.decay_steps=10")
	f.Add([]byte("[model]\nhidden_sise = 3\n"), "data.train=t")
	f.Add([]byte("[model]\npreset = 4\n"), "")
	f.Add([]byte("[train]\nbatch_size = -1\nsteps = 1e400\n"), "init.gamma=nan\nschedule.lr=inf")
	f.Add([]byte("[[x]]\na = [1, [2, {b = 3}]]\n"), "=1\nnoequals\na.b.c.d=\"\\u0000\"")
	f.Add([]byte("\xff\xfe"), "data.train=\xff")
	dir := f.TempDir()
	path, again := filepath.Join(dir, "run.toml"), filepath.Join(dir, "again.toml")
	f.Fuzz(func(t *testing.T, file []byte, setText string) {
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		sets := splitSets(setText)
		var c recipe.Config
		var err error
		n := allocs.Bytes(func() { c, err = Load(path, sets) })
		if limit := uint64(1<<20 + 512*(len(file)+len(setText))); n > limit {
			t.Fatalf("Load of %d+%d bytes allocated %d bytes (limit %d)", len(file), len(setText), n, limit)
		}
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "run config") && !strings.HasPrefix(msg, "--set") {
				t.Fatalf("error does not say where: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load accepted a config that fails Validate: %v", err)
		}
		b, err := c.Encode()
		if err != nil {
			t.Fatalf("Encode of an accepted config: %v", err)
		}
		if err := os.WriteFile(again, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c2, err := Load(again, nil)
		if err != nil {
			t.Fatalf("the encoded config does not load: %v\n%s", err, b)
		}
		if b2, _ := c2.Encode(); string(b2) != string(b) {
			t.Fatalf("config changed through Encode and Load:\n%s\nvs\n%s", b, b2)
		}
	})
}

// fuzzRun writes a micro run (vocab 32, one layer of width 8, T = 8, 4 steps, checkpoints every 2 steps) and
// returns its directory, after the run stopped at step 2 with a checkpoint.
func fuzzRun(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	rng := rand.New(rand.NewPCG(5, 5))
	ids := make([]int32, 400)
	for i := range ids {
		ids[i] = int32(rng.IntN(32))
	}
	tr := filepath.Join(root, "train.tok")
	if err := data.WriteTokens(tr, ids); err != nil {
		tb.Fatal(err)
	}
	va := filepath.Join(root, "val.tok")
	if err := data.WriteTokens(va, ids[:100]); err != nil {
		tb.Fatal(err)
	}
	c, err := Load("", []string{"model.vocab_size=32", "model.hidden_size=8", "model.num_hidden_layers=1",
		"model.num_attention_heads=2", "model.max_position_embeddings=8", "train.batch_size=2", "train.steps=4",
		"train.log_interval=1", "train.eval_interval=2", "train.eval_windows=2", "train.checkpoint_interval=2",
		"train.threads=1", "schedule.warmup_steps=1", "data.train=" + tr, "data.val=" + va})
	if err != nil {
		tb.Fatal(err)
	}
	run := filepath.Join(root, "run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := Start(ctx, c, run, Options{AfterStep: func(s int) {
		if s == 2 {
			cancel()
		}
	}}); err == nil {
		tb.Fatal("the micro run was not interrupted")
	}
	return run
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// FuzzResumeState resumes a micro run whose newest checkpoint's state.json is replaced by arbitrary bytes. A
// state that does not belong to the checkpoint (its step, its token count, its update and skip counts, its
// sampler position, the metrics length it recorded) must be refused with an error naming state.json or the
// metrics file; one that is accepted must finish the run with a readable metrics.jsonl (every line a JSON
// object), never pad the metrics with zeros or read past the data. The allocation is bounded by 64 MB (the
// model, the data and the checkpoint files are fixed and small) plus 64 bytes per byte of state.json.
func FuzzResumeState(f *testing.F) {
	template := fuzzRun(f)
	ck := filepath.Join(template, checkpointsDir, checkpointName(2))
	good, err := os.ReadFile(filepath.Join(ck, stateFile))
	if err != nil {
		f.Fatal(err)
	}
	// The seeds carry no config fingerprint, so that under -fuzz the seed corpus the coordinator records does
	// not depend on its own template run. A state without one is accepted, as a checkpoint of an older build is.
	var st State
	json.Unmarshal(good, &st)
	st.Config = ""
	good, _ = json.Marshal(st)
	f.Add(good)
	for _, mod := range []func(*State){
		func(s *State) { s.MetricsBytes = 1 << 40 },
		func(s *State) { s.DiagBytes = 1 },
		func(s *State) { s.Pos = 1 << 30 },
		func(s *State) { s.Epoch = 1 << 40 },
		func(s *State) { s.Step = 3 },
		func(s *State) { s.Tokens = -1 },
		func(s *State) { s.AdamStep, s.Skipped = 1, 1 },
		func(s *State) { s.LossSum, s.LossCount = 1e308, 2 },
	} {
		s := st
		mod(&s)
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`{"step": 2, "step": 2}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		run := filepath.Join(t.TempDir(), "run")
		copyTree(t, template, run)
		statePath := filepath.Join(run, checkpointsDir, checkpointName(2), stateFile)
		if err := os.WriteFile(statePath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var res Result
		var err error
		n := allocs.Bytes(func() { res, err = Resume(context.Background(), run, Options{}) })
		if limit := uint64(64<<20 + 64*len(b)); n > limit {
			t.Fatalf("Resume allocated %d bytes (limit %d)", n, limit)
		}
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, stateFile) && !strings.Contains(msg, rundir.MetricsFile) && !strings.Contains(msg, rundir.DiagFile) {
				t.Fatalf("error names neither state.json nor the file it disagrees with: %v", err)
			}
			return
		}
		if res.Steps != 4 {
			t.Fatalf("resumed run ended at step %d, want 4", res.Steps)
		}
		mf, err := os.Open(filepath.Join(run, rundir.MetricsFile))
		if err != nil {
			t.Fatal(err)
		}
		defer mf.Close()
		sc := bufio.NewScanner(mf)
		for i := 1; sc.Scan(); i++ {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("metrics.jsonl line %d after resuming from %s: %v (%q)", i, b, err, sc.Text())
			}
		}
	})
}

// TestResumeRefusesForeignState: a state.json that does not belong to its checkpoint or to the run's metrics
// is refused naming the file; before, a metrics length beyond the file's end padded metrics.jsonl with zeros.
func TestResumeRefusesForeignState(t *testing.T) {
	template := fuzzRun(t)
	good, _ := os.ReadFile(filepath.Join(template, checkpointsDir, checkpointName(2), stateFile))
	var st State
	if err := json.Unmarshal(good, &st); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		mod        func(*State)
	}{
		{"metrics beyond the end", rundir.MetricsFile, func(s *State) { s.MetricsBytes += 1 << 20 }},
		{"another step", "state of step 3", func(s *State) { s.Step = 3 }},
		{"token count", "tokens after 2 steps", func(s *State) { s.Tokens++ }},
		{"update count", "updates and", func(s *State) { s.Skipped = 1 }},
		{"metrics cut inside a line", "not at a line end", func(s *State) { s.MetricsBytes-- }},
		{"sampler past the data", "sampler position", func(s *State) { s.Pos = 1 << 20 }},
	} {
		run := filepath.Join(t.TempDir(), "run")
		copyTree(t, template, run)
		s := st
		tc.mod(&s)
		b, _ := json.Marshal(s)
		os.WriteFile(filepath.Join(run, checkpointsDir, checkpointName(2), stateFile), b, 0o644)
		// Sealed again, as a forger would: the state's own checks stand behind the manifest's sums.
		if err := filesum.Write(filepath.Join(run, checkpointsDir, checkpointName(2))); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(filepath.Join(run, rundir.MetricsFile))
		_, err := Resume(context.Background(), run, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if after, _ := os.ReadFile(filepath.Join(run, rundir.MetricsFile)); string(after) != string(before) {
			t.Errorf("%s: metrics.jsonl changed by a refused resume", tc.name)
		}
	}
	// Bad data leave no run directory behind.
	c, err := Load("", []string{"data.train=" + filepath.Join(t.TempDir(), "missing.tok")})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	if _, err := Start(context.Background(), c, out, Options{}); err == nil {
		t.Fatal("start without data: no error")
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a run without data left %s behind", out)
	}
}
