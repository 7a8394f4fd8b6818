package python

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/train"
)

// childEnv, when set ("python|pythonpath|run.toml|dir"), makes the test binary (TestMain) train dir through the
// PyTorch engine: the study process that TestKilledStudyRestartsWithOneWriter kills.
const childEnv = "SMALLINIT_TEST_TORCH_ENGINE_CHILD"

// TestMain runs the child study of TestKilledStudyRestartsWithOneWriter when childEnv is set, the tests otherwise.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		torchEngineChild(spec)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// torchEngineChild is the study of TestKilledStudyRestartsWithOneWriter, run in a process of its own.
func torchEngineChild(spec string) {
	f := strings.Split(spec, "|")
	c, err := train.Load(f[2], nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The log is a file, as a study's train.log is: the trainer writes to it directly, and nothing it writes
	// fails when this process dies (a pipe would break, and kill the trainer by accident).
	log, err := os.OpenFile(f[3]+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	eng := train.TorchEngine{Python: f[0], PythonPath: f[1], Device: "cpu"}
	if _, err := eng.StartOrResume(context.Background(), c, f[3], train.Options{Log: log}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestKilledStudyRestartsWithOneWriter kills (SIGKILL) a process training a run through the PyTorch engine at
// random moments and restarts it at once, each time: the trainer dies with it (no orphan goes on writing),
// the restart is never refused (no "already holds a run", no busy lock), and the run it finishes is the
// uninterrupted run's, byte for byte (metrics.jsonl but its wall-clock field, the final weights).
func TestKilledStudyRestartsWithOneWriter(t *testing.T) {
	py := needTorch(t)
	here, _ := filepath.Abs(".")
	root := t.TempDir()
	cfg := filepath.Join(root, "run.toml")
	writeKillConfig(t, root, cfg)
	t.Setenv("OMP_NUM_THREADS", "1")
	child := func(dir string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+strings.Join([]string{py, here, cfg, dir}, "|"))
		return cmd
	}
	ref, dir := filepath.Join(root, "ref"), filepath.Join(root, "killed")
	t0 := time.Now()
	if out, err := child(ref).CombinedOutput(); err != nil {
		t.Fatalf("the uninterrupted run: %v\n%s", err, out)
	}
	whole := time.Since(t0) // kills fall at 5% to 95% of an uninterrupted run
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("kill times drawn with seed %d", seed)
	kills, trainerKills := 0, 0
	cleanFinish := false // the last call on the run ended by itself, not by a kill
	for attempt := 0; attempt < 12 && kills < 4; attempt++ {
		cmd := child(dir)
		out, err := os.Create(filepath.Join(root, fmt.Sprintf("child-%d.out", attempt)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		err = cmd.Start()
		out.Close()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				b, _ := os.ReadFile(out.Name())
				t.Fatalf("restart %d: %v\n%s", attempt, err, b)
			}
			attempt, cleanFinish = 99, true // finished before the kill: the run is done
			continue
		case <-time.After(whole * time.Duration(5+rng.IntN(60)) / 100):
		}
		if attempt%2 == 1 { // every other kill falls while the trainer trains: wait for it, then a while more
			for end := time.Now().Add(whole); len(childrenOf(cmd.Process.Pid)) == 0 && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(whole * time.Duration(5+rng.IntN(45)) / 100)
		}
		trainers := childrenOf(cmd.Process.Pid)
		if len(trainers) > 0 {
			trainerKills++
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		kills++
		for _, pid := range trainers {
			if !goneWithin(pid, 2*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("kill %d: the trainer (pid %d) outlived its study", kills, pid)
			}
		}
	}
	if !isFile(filepath.Join(dir, "final", "config.json")) {
		cmd := child(dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("last restart: %v\n%s", err, out)
		}
		cleanFinish = true
	}
	t.Logf("%d kills, %d of them while the trainer ran", kills, trainerKills)
	if a, b := metricsWithoutClock(t, ref), metricsWithoutClock(t, dir); a != b {
		t.Errorf("metrics.jsonl after %d kills differs from the uninterrupted run's:\n%s\nwant\n%s", kills, b, a)
	}
	for _, f := range []string{"final/model.safetensors", "config.toml", "init/model.safetensors"} {
		a, _ := os.ReadFile(filepath.Join(ref, f))
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s after %d kills: differs from the uninterrupted run's (%v)", f, kills, err)
		}
	}
	if isFile(filepath.Join(dir, "lock")) && cleanFinish {
		t.Error("the finished run left its lock behind")
	} else if isFile(filepath.Join(dir, "lock")) {
		// A kill that lands after the trainer wrote the final model but before the study let go of the lock
		// leaves the dead study's lock, as any kill -9 does; the next call on the finished run takes it over
		// (its holder is dead) and must leave none.
		t.Logf("a lock after the last kill: restarting the finished run once more")
		if out, err := child(dir).CombinedOutput(); err != nil {
			t.Fatalf("restart of the finished run: %v\n%s", err, out)
		}
		if isFile(filepath.Join(dir, "lock")) {
			t.Error("the finished run left its lock behind")
		}
	}
}

// writeKillConfig writes token files and a run config of 400 short steps, a checkpoint every 7.
func writeKillConfig(t *testing.T, root, cfg string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 3))
	for name, n := range map[string]int{"train.tok": 20000, "val.tok": 1000} {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(rng.IntN(128))
		}
		if err := data.WriteTokens(filepath.Join(root, name), ids); err != nil {
			t.Fatal(err)
		}
	}
	toml := fmt.Sprintf(`seed = 3
[model]
preset = "tiny"
vocab_size = 128
hidden_size = 32
num_hidden_layers = 2
num_attention_heads = 2
max_position_embeddings = 16
[schedule]
lr = 3e-3
warmup_steps = 4
[data]
train = %q
val = %q
[train]
batch_size = 4
steps = 400
log_interval = 1
eval_interval = 20
eval_windows = 8
checkpoint_interval = 7
keep_checkpoints = 2
threads = 1
`, filepath.Join(root, "train.tok"), filepath.Join(root, "val.tok"))
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// childrenOf lists the processes whose parent is pid (from /proc).
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// goneWithin says whether process pid exits (or is a zombie) within d.
func goneWithin(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return true
		}
	}
	return false
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// metricsWithoutClock is metrics.jsonl with each line's tokens_per_s (wall-clock) removed.
func metricsWithoutClock(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %q: %v", dir, l, err)
		}
		delete(m, "tokens_per_s")
		j, _ := json.Marshal(m)
		out = append(out, string(j))
	}
	return strings.Join(out, "\n")
}
