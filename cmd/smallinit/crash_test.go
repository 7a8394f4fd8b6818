//go:build linux || darwin

package main

// Crash tests: `data prepare` and `sweep run` killed with SIGKILL mid-way (no chance to clean up) leave no
// partial output, and the next run succeeds; `data prepare` stopped with SIGTERM says where, and cleans up.
// They run the binary TestMain builds (badinput_test.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
)

// bigCorpus writes a JSON-lines corpus of about mb megabytes of random words.
func bigCorpus(t *testing.T, path string, mb int, seed uint64) {
	t.Helper()
	words := strings.Fields("the quick brown fox jumps over lazy dog it was best of times worst age wisdom foolishness " +
		"epoch belief incredulity season light darkness spring hope winter despair 天地 玄黄 宇宙 洪荒 12 345 6789")
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for b.Len() < mb<<20 {
		var doc strings.Builder
		for range 150 + rng.IntN(100) {
			doc.WriteString(words[rng.IntN(len(words))])
			doc.WriteByte(' ')
		}
		line, _ := json.Marshal(map[string]string{"text": doc.String()})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// outputs snapshots the four outputs of a prepared directory.
func outputs(dir string) map[string]string {
	m := map[string]string{}
	for _, f := range []string{data.TokenizerFile, data.TrainFile, data.ValFile, data.StatsFile} {
		m[f] = snapshot(filepath.Join(dir, f))
	}
	return m
}

// killWhen starts cmd and kills it with SIGKILL as soon as ready reports true; it fails the test if the
// command ends first.
func killWhen(t *testing.T, cmd *exec.Cmd, ready func() bool) {
	t.Helper()
	signalWhen(t, cmd, ready, syscall.SIGKILL, time.Minute)
}

// signalWhen starts cmd, sends it sig as soon as ready reports true and waits, at most within, for it to exit:
// it returns the command's stderr and its exit error, and fails the test if the command ends before the
// signal or is still running after within.
func signalWhen(t *testing.T, cmd *exec.Cmd, ready func() bool, sig syscall.Signal, within time.Duration) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for !ready() {
		select {
		case err := <-exited:
			t.Fatalf("%v ended (%v) before it could be signalled mid-way: make its work larger\n%s", cmd.Args, err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("%v: never reached the point to signal it\n%s", cmd.Args, stderr.String())
		case <-time.After(time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		return stderr.String(), err
	case <-time.After(within):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("%v: still running %s after %v\n%s", cmd.Args, within, sig, stderr.String())
		return "", nil
	}
}

// encoding reports whether dir holds a temporary train.tok of at least 1 MB: encoding is under way.
func encoding(dir string) func() bool {
	return func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "."+data.TrainFile+".tmp") {
				if info, err := e.Info(); err == nil && info.Size() >= 1<<20 {
					return true
				}
			}
		}
		return false
	}
}

// checkPrepared checks that dir is a complete prepared directory without temporary files.
func checkPreparedDir(t *testing.T, dir string) {
	t.Helper()
	st, err := data.ReadStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := data.ReadTokens(filepath.Join(dir, data.TrainFile), st.VocabSize)
	if err != nil || int64(len(toks)) != st.Train.Tokens {
		t.Fatalf("train.tok: %d tokens (%v), stats.json says %d", len(toks), err, st.Train.Tokens)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") || strings.HasPrefix(e.Name(), ".write-test") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

// bigPrepare writes a 24 MB corpus of the seed's words and returns it, an output directory and `data prepare`
// of an input into that directory (with the fixture tokenizer, on one worker: slow enough to be interrupted).
func bigPrepare(t *testing.T, seed uint64) (big, out string, prepare func(in string) *exec.Cmd) {
	cd := t.TempDir()
	big = filepath.Join(cd, "big.jsonl")
	bigCorpus(t, big, 24, seed)
	out = filepath.Join(cd, "prepared")
	return big, out, func(in string) *exec.Cmd {
		return exec.Command(badBin, "data", "prepare", "--in", in, "--out", out, "--tokenizer", fix("model/tokenizer.json"), "--workers", "1")
	}
}

// TestDataPrepareKilled kills `data prepare` with SIGKILL while it encodes: into a fresh directory it leaves
// none of the outputs, over a complete directory it leaves the old outputs intact, and each time the next run
// succeeds and removes the killed run's temporary files.
func TestDataPrepareKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: writes and encodes a 24 MB corpus")
	}
	big, out, prepare := bigPrepare(t, 1)
	killWhen(t, prepare(big), encoding(out))
	for f, s := range outputs(out) {
		if s != "" {
			t.Errorf("killed run into a fresh directory left %s", f)
		}
	}
	if b, err := prepare(fix("corpus.jsonl")).CombinedOutput(); err != nil {
		t.Fatalf("next run: %v\n%s", err, b)
	}
	checkPreparedDir(t, out)

	before := outputs(out)
	killWhen(t, prepare(big), encoding(out))
	if after := outputs(out); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("killed run over a complete directory changed its outputs")
	}
	if b, err := prepare(big).CombinedOutput(); err != nil {
		t.Fatalf("next run: %v\n%s", err, b)
	}
	checkPreparedDir(t, out)
}

// TestDataPrepareStopped sends `data prepare` SIGTERM while it encodes (issue 48, 4): it stops within seconds
// saying it was interrupted while encoding, removes its temporary files, leaves a fresh --out absent and a
// complete one as it was, and the same command then prepares the corpus. (Before, SIGTERM ended it without a
// word and left its temporary files for the next run to clear.)
func TestDataPrepareStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: writes and encodes a 24 MB corpus")
	}
	big, out, prepare := bigPrepare(t, 3)
	stop := func(what string) {
		t.Helper()
		stderr, err := signalWhen(t, prepare(big), encoding(out), syscall.SIGTERM, 10*time.Second)
		if err == nil || !strings.Contains(stderr, "interrupted while encoding, after") || !strings.Contains(stderr, "nothing written") {
			t.Errorf("%s: exit %v, want a failure saying where it stopped\n%s", what, err, stderr)
		}
		ents, _ := os.ReadDir(out)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("%s: temporary file %s left in %s", what, e.Name(), out)
			}
		}
	}
	stop("fresh --out")
	if _, err := os.Stat(out); err == nil {
		t.Errorf("fresh --out: %s left behind", out)
	}
	if b, err := prepare(fix("corpus.jsonl")).CombinedOutput(); err != nil {
		t.Fatalf("next run: %v\n%s", err, b)
	}
	checkPreparedDir(t, out)

	before := outputs(out)
	stop("complete --out")
	if after := outputs(out); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a stopped run over a complete directory changed its outputs")
	}
	if b, err := prepare(big).CombinedOutput(); err != nil {
		t.Fatalf("next run: %v\n%s", err, b)
	}
	checkPreparedDir(t, out)
}

// TestSweepRunKilled kills `sweep run` with SIGKILL in the middle of its first run: the next `sweep run`
// takes over the dead process's lock, resumes the run from its checkpoint and finishes the sweep with the
// final weights of a sweep that was never interrupted.
func TestSweepRunKilled(t *testing.T) {
	cd := t.TempDir()
	grid := fmt.Sprintf(`[base]
model.vocab_size = %d
model.hidden_size = 16
model.num_hidden_layers = 2
model.num_attention_heads = 2
model.max_position_embeddings = 16
train.batch_size = 2
train.steps = 400
train.log_interval = 10
train.eval_interval = 0
train.checkpoint_interval = 10
train.keep_checkpoints = 2
train.threads = 1
data.train = %q

[axes]
seed = [0, 1]
`, badVocab, fix("tokens.tok"))
	gridPath := write(t, cd, "grid.toml", []byte(grid))
	sweep := func(dir string) *exec.Cmd { return exec.Command(badBin, "sweep", "run", gridPath, "--out", dir) }

	straight := filepath.Join(cd, "straight")
	if b, err := sweep(straight).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted sweep: %v\n%s", err, b)
	}
	runs, _ := filepath.Glob(filepath.Join(straight, "runs", "*"))
	if len(runs) != 2 {
		t.Fatalf("runs: %v", runs)
	}
	first := filepath.Base(runs[0])

	dir := filepath.Join(cd, "killed")
	killWhen(t, sweep(dir), func() bool {
		_, err := os.Stat(filepath.Join(dir, "runs", first, "checkpoints", "step-000020"))
		return err == nil
	})
	if _, err := os.Stat(filepath.Join(dir, "runs", first, "final")); err == nil {
		t.Fatal("the first run had finished when the sweep was killed")
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", first, "lock")); err != nil {
		t.Errorf("the killed sweep left no lock to take over: %v", err)
	}
	b, err := sweep(dir).CombinedOutput()
	if err != nil {
		t.Fatalf("sweep after the kill: %v\n%s", err, b)
	}
	for _, r := range runs {
		id := filepath.Base(r)
		want, _ := os.ReadFile(filepath.Join(r, "final", "model.safetensors"))
		got, _ := os.ReadFile(filepath.Join(dir, "runs", id, "final", "model.safetensors"))
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("run %s: final weights differ from the uninterrupted sweep's (%d and %d bytes)\n%s", id, len(got), len(want), b)
		}
		if _, err := os.Stat(filepath.Join(dir, "runs", id, "lock")); err == nil {
			t.Errorf("run %s: lock left behind", id)
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "runs", first, "train.log"))
	if !strings.Contains(string(log), "resuming") {
		t.Errorf("the first run was not resumed from its checkpoint:\n%s", log)
	}
}
