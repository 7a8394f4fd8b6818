package train

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// writeTokens writes n random tokens below vocab to a .tok file in dir.
func writeTokens(t *testing.T, dir, name string, n, vocab int, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	path := filepath.Join(dir, name)
	if err := data.WriteTokens(path, ids); err != nil {
		t.Fatal(err)
	}
	return path
}

// smallRun is a run small enough to train in well under a second.
func smallRun(t *testing.T, dir string, steps int, extra ...string) recipe.Config {
	t.Helper()
	tr := writeTokens(t, dir, "train.tok", 5000, 64, 1)
	va := writeTokens(t, dir, "val.tok", 600, 64, 2)
	sets := append([]string{
		"model.vocab_size=64", "model.hidden_size=32", "model.num_hidden_layers=2", "model.num_attention_heads=2",
		"model.max_position_embeddings=16", "model.attn_gate=elementwise", "train.batch_size=4",
		fmt.Sprintf("train.steps=%d", steps), "train.log_interval=2", "train.eval_interval=3", "train.checkpoint_interval=2",
		"train.keep_checkpoints=2", "schedule.warmup_steps=2", "data.train=" + tr, "data.val=" + va, "seed=7",
	}, extra...)
	c, err := Load("", sets)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// metricsWithoutTiming reads metrics.jsonl and drops the wall-clock field.
func metricsWithoutTiming(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, rundir.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("metrics line %q: %v", sc.Text(), err)
		}
		delete(m, "tokens_per_s")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return out
}

func sameRun(t *testing.T, a, b string) {
	t.Helper()
	wa, _ := os.ReadFile(filepath.Join(a, rundir.FinalDir, "model.safetensors"))
	wb, _ := os.ReadFile(filepath.Join(b, rundir.FinalDir, "model.safetensors"))
	if len(wa) == 0 || !bytes.Equal(wa, wb) {
		t.Errorf("final model.safetensors differ (%d and %d bytes)", len(wa), len(wb))
	}
	ma, mb := metricsWithoutTiming(t, a), metricsWithoutTiming(t, b)
	if strings.Join(ma, "\n") != strings.Join(mb, "\n") {
		t.Errorf("metrics differ:\n%s\nvs\n%s", strings.Join(ma, "\n"), strings.Join(mb, "\n"))
	}
}

// probeLoss is a stand-in diagnostics hook: the loss on the first probe window.
func probeLoss(_ int, m *model.Model, probe []int32) (any, error) {
	T := m.Config.SeqLen
	return m.Forward(probe[:T], probe[1:T+1])
}

func TestResumeIsExact(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 11, "train.diagnostics_interval=4")
	straight := filepath.Join(root, "straight")
	if _, err := Start(context.Background(), c, straight, Options{Diagnostics: probeLoss}); err != nil {
		t.Fatal(err)
	}
	split := filepath.Join(root, "split")
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Start(ctx, c, split, Options{Diagnostics: probeLoss, AfterStep: func(s int) {
		if s == 5 {
			cancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "resume ") {
		t.Fatalf("interrupted run returned %v, want ErrInterrupted with a resume hint", err)
	}
	if _, err := Resume(context.Background(), split, Options{Diagnostics: probeLoss}); err != nil {
		t.Fatal(err)
	}
	sameRun(t, straight, split)
	da, _ := os.ReadFile(filepath.Join(straight, rundir.DiagFile))
	db, _ := os.ReadFile(filepath.Join(split, rundir.DiagFile))
	if len(da) == 0 || !bytes.Equal(da, db) || bytes.Count(da, []byte("\n")) != 3 {
		t.Errorf("diagnostics.jsonl differ or do not hold steps 0, 4, 8:\n%s\nvs\n%s", da, db)
	}
	if _, err := Start(context.Background(), c, split, Options{}); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("starting over an existing run: %v", err)
	}
}

// TestBF16RunResumesExactly: a train.precision = "bf16" run interrupted and resumed ends where a straight one
// does (the precision is part of config.toml), and its weights differ from the float32 run's (the setting
// reaches the matmuls).
func TestBF16RunResumesExactly(t *testing.T) {
	if !kernel.BF16.Native() {
		t.Skip("no bf16 kernel: neither AVX512_BF16 nor AVX2+FMA")
	}
	root := t.TempDir()
	c := smallRun(t, root, 6, "train.precision=bf16")
	straight := filepath.Join(root, "straight")
	if _, err := Start(context.Background(), c, straight, Options{}); err != nil {
		t.Fatal(err)
	}
	split := filepath.Join(root, "split")
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := Start(ctx, c, split, Options{AfterStep: func(s int) {
		if s == 3 {
			cancel()
		}
	}}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run returned %v", err)
	}
	if _, err := Resume(context.Background(), split, Options{}); err != nil {
		t.Fatal(err)
	}
	sameRun(t, straight, split)
	c32 := c
	c32.Train.Precision = "f32"
	f32 := filepath.Join(root, "f32")
	if _, err := Start(context.Background(), c32, f32, Options{}); err != nil {
		t.Fatal(err)
	}
	wa, _ := os.ReadFile(filepath.Join(straight, rundir.FinalDir, "model.safetensors"))
	wb, _ := os.ReadFile(filepath.Join(f32, rundir.FinalDir, "model.safetensors"))
	if len(wa) == 0 || bytes.Equal(wa, wb) {
		t.Error("bf16 and f32 runs ended with the same weights")
	}
}

// TestMain lets the kill -9 test, and the kernel-path test (segmentChildEnv), run training in a child process.
func TestMain(m *testing.M) {
	if spec := os.Getenv(segmentChildEnv); spec != "" {
		if err := runSegmentChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv("SMALLINIT_TEST_TRAIN_CHILD"); dir != "" {
		c, err := Load(filepath.Join(dir, "child.toml"), nil)
		if err == nil {
			_, err = Start(context.Background(), c, filepath.Join(dir, "run"), Options{AfterStep: func(int) { time.Sleep(50 * time.Millisecond) }})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestResumeAfterKill9IsExact(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 30)
	straight := filepath.Join(root, "straight")
	if _, err := Start(context.Background(), c, straight, Options{}); err != nil {
		t.Fatal(err)
	}
	b, _ := c.Encode()
	os.WriteFile(filepath.Join(root, "child.toml"), b, 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SMALLINIT_TEST_TRAIN_CHILD="+root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(root, "run")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if steps, _ := listCheckpoints(run); len(steps) > 0 && steps[len(steps)-1] >= 6 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child never wrote a checkpoint at step 6")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill() // SIGKILL: no chance to clean up
	cmd.Wait()
	if _, err := Resume(context.Background(), run, Options{}); err != nil {
		t.Fatal(err)
	}
	sameRun(t, straight, run)
}

// TestOverfitsOneBatch: a tiny model trained on a single window drives the loss below 0.1.
func TestOverfitsOneBatch(t *testing.T) {
	root := t.TempDir()
	tr := writeTokens(t, root, "one.tok", 17, 64, 3) // exactly one window of T+1 = 17 tokens
	c, err := Load("", []string{"model.vocab_size=64", "model.hidden_size=32", "model.num_hidden_layers=2",
		"model.num_attention_heads=2", "model.max_position_embeddings=16", "train.batch_size=1", "train.steps=150",
		"train.eval_interval=0", "train.checkpoint_interval=0", "train.log_interval=50", "schedule.kind=constant",
		"schedule.lr=1e-2", "schedule.warmup_steps=5", "init.gamma=1", "data.train=" + tr})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Start(context.Background(), c, filepath.Join(root, "run"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Loss >= 0.1 {
		t.Errorf("loss after overfitting one batch: %.4f, want < 0.1", res.Loss)
	}
}

func TestBadInputsGiveClearErrors(t *testing.T) {
	root := t.TempDir()
	good := smallRun(t, root, 4)
	if _, err := Start(context.Background(), good, filepath.Join(root, "ok"), Options{}); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(root, "ok", checkpointsDir, checkpointName(4))
	for _, tc := range []struct {
		name, want string
		run        func() error
	}{
		{"unknown key", "unknown key model.hidden_sise", func() error {
			_, err := Load("", []string{"model.hidden_sise=3", "data.train=x"})
			return err
		}},
		{"out of range", "train.batch_size", func() error {
			_, err := Load("", []string{"train.batch_size=0", "data.train=x"})
			return err
		}},
		{"steps and tokens both set", "train.steps = 500 and train.tokens = 4096 both set a budget", func() error {
			_, err := Load("", []string{"train.tokens=4096", "data.train=x"})
			return err
		}},
		{"budget below one step", "train.tokens = 10 is less than one step of batch_size × seq_len = 4 × 16 tokens", func() error {
			_, err := Load("", []string{"train.steps=0", "train.tokens=10", "train.batch_size=4", "model.max_position_embeddings=16", "data.train=x"})
			return err
		}},
		{"wsd decay over the warmup", "schedule.warmup_steps + schedule.decay_steps = 50 + 80 exceeds the run's 100 steps", func() error {
			_, err := Load("", []string{"train.steps=100", "schedule.kind=wsd", "schedule.warmup_steps=50", "schedule.decay_steps=80", "data.train=x"})
			return err
		}},
		{"bad precision", `train.precision = "fp8"`, func() error {
			_, err := Load("", []string{"train.precision=fp8", "data.train=x"})
			return err
		}},
		{"bad gate", "attn_gate", func() error {
			_, err := Load("", []string{"model.attn_gate=sometimes", "data.train=x"})
			return err
		}},
		{"missing data", "nope.tok", func() error {
			c := good
			c.Data.Train = filepath.Join(root, "nope.tok")
			_, err := Start(context.Background(), c, filepath.Join(root, "r1"), Options{})
			return err
		}},
		{"token beyond vocab", "outside the vocabulary", func() error {
			c := good
			c.Data.Train = writeTokens(t, root, "big.tok", 100, 100, 4)
			_, err := Start(context.Background(), c, filepath.Join(root, "r2"), Options{})
			return err
		}},
		{"truncated optimizer state", "optimizer.safetensors", func() error {
			p := filepath.Join(ck, optimizerFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
			_, err := Resume(context.Background(), filepath.Join(root, "ok"), Options{})
			return err
		}},
		{"corrupt state", "state.json", func() error {
			os.WriteFile(filepath.Join(ck, stateFile), []byte("{"), 0o644)
			_, err := Resume(context.Background(), filepath.Join(root, "ok"), Options{})
			return err
		}},
	} {
		err := tc.run()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// The failed resumes left the final model untouched.
	if _, err := os.Stat(filepath.Join(root, "ok", rundir.FinalDir, "model.safetensors")); err != nil {
		t.Error(err)
	}
}

// TestSkipNonFiniteKeepsLogging: with train.skip_nonfinite a run whose every batch is non-finite (NaN weights)
// skips them all and still writes its metrics: lines that parse, count the skipped batches and leave out the
// NaN gradient norm and validation loss (JSON has no NaN).
func TestSkipNonFiniteKeepsLogging(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 4, "train.skip_nonfinite=true")
	dir := filepath.Join(root, "run")
	r, err := newRunner(c, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.pool.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.initialise(); err != nil {
		t.Fatal(err)
	}
	for i := range r.m.Params.Flat {
		r.m.Params.Flat[i] = float32(math.NaN()) // a diverged model: every batch is non-finite
	}
	if _, err := r.loop(context.Background()); err != nil {
		t.Fatalf("skip_nonfinite run stopped: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, rundir.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var last map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		last = nil
		if err := json.Unmarshal([]byte(line), &last); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
	}
	if last["skipped"] != 4.0 || last["grad_norm"] != nil || last["val_loss"] != nil {
		t.Errorf("last metrics line %v: want 4 skipped batches, no grad_norm and no val_loss", last)
	}
}

// TestCheckpointNamesAreExact: a checkpoint directory moved aside by hand ("step-000012.broken", "step-12") is not
// a checkpoint: resume does not pick it and pruning does not count it.
func TestCheckpointNamesAreExact(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{checkpointName(4), checkpointName(8), "step-000012.broken", "step-12", "step-000016 copy", ".tmp-" + checkpointName(20)} {
		if err := os.MkdirAll(filepath.Join(dir, checkpointsDir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	steps, err := listCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, []int{4, 8}) {
		t.Errorf("checkpoints %v, want [4 8]", steps)
	}
}

// TestResumeFinishedRun: resuming a run that already finished trains nothing and returns the figures its
// metrics recorded (the demo re-run relies on it): the last training and validation losses and a positive
// throughput, not NaN and 0.
func TestResumeFinishedRun(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 4)
	dir := filepath.Join(root, "run")
	first, err := Start(context.Background(), c, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, rundir.MetricsFile))
	again, err := Resume(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, rundir.MetricsFile))
	if again.Steps != 4 || again.Loss != first.Loss || again.ValLoss != first.ValLoss || !(again.TokensPerS > 0) || !bytes.Equal(before, after) {
		t.Errorf("resumed finished run: %+v (first %+v); metrics changed: %v", again, first, !bytes.Equal(before, after))
	}
}

// TestSameConfig: an earlier attempt's config.toml matches the planned config when only train.threads differs
// (SameConfig returns the earlier threads) and is refused, naming the file, when anything else differs.
func TestSameConfig(t *testing.T) {
	dir := t.TempDir()
	c := smallRun(t, dir, 4, "train.threads=1")
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ConfigFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*recipe.Config)
		wantErr bool
	}{
		{"same", func(*recipe.Config) {}, false},
		{"other threads", func(c *recipe.Config) { c.Train.Threads = 2 }, false},
		{"other precision", func(c *recipe.Config) { c.Train.Precision = "bf16" }, true},
		{"other steps", func(c *recipe.Config) { c.Train.Steps++ }, true},
	} {
		want := c
		tc.edit(&want)
		threads, _, err := SameConfig(dir, want)
		switch {
		case tc.wantErr && (err == nil || !strings.Contains(err.Error(), filepath.Join(dir, rundir.ConfigFile))):
			t.Errorf("%s: err = %v, want an error naming %s", tc.name, err, rundir.ConfigFile)
		case !tc.wantErr && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.wantErr && threads != 1:
			t.Errorf("%s: threads = %d, want the earlier attempt's 1", tc.name, threads)
		}
	}
}

// TestResumeRefusesEditedConfig: a run interrupted after a checkpoint and resumed with an edited config.toml
// (learning rate, seed, γ, fewer steps) is refused with ErrConfigDiffers naming config.toml, and left as it
// was; the same config with other threads resumes.
func TestResumeRefusesEditedConfig(t *testing.T) {
	root := t.TempDir()
	c := smallRun(t, root, 8, "train.checkpoint_interval=2")
	for i, tc := range []struct {
		name   string
		edit   func(*recipe.Config)
		refuse bool
	}{
		{"lr", func(c *recipe.Config) { c.Schedule.PeakLR *= 2 }, true},
		{"seed", func(c *recipe.Config) { c.Seed++ }, true},
		{"gamma", func(c *recipe.Config) { c.Init.Gamma = 0.75 }, true},
		{"fewer steps", func(c *recipe.Config) { c.Train.Steps = 4 }, true},
		{"threads", func(c *recipe.Config) { c.Train.Threads = 1 }, false},
	} {
		dir := filepath.Join(root, fmt.Sprint(i))
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := Start(ctx, c, dir, Options{AfterStep: func(s int) {
			if s == 3 {
				cancel()
			}
		}}); !errors.Is(err, ErrInterrupted) {
			t.Fatalf("%s: %v, want an interrupted run", tc.name, err)
		}
		e := c
		tc.edit(&e)
		b, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.ConfigFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(filepath.Join(dir, rundir.MetricsFile))
		_, err = Resume(context.Background(), dir, Options{})
		after, _ := os.ReadFile(filepath.Join(dir, rundir.MetricsFile))
		switch {
		case tc.refuse && (!errors.Is(err, ErrConfigDiffers) || !strings.Contains(err.Error(), rundir.ConfigFile)):
			t.Errorf("%s: resume = %v, want ErrConfigDiffers naming %s", tc.name, err, rundir.ConfigFile)
		case tc.refuse && !bytes.Equal(before, after):
			t.Errorf("%s: a refused resume changed metrics.jsonl", tc.name)
		case !tc.refuse && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
