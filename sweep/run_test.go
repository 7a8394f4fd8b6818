package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// microGrid writes a micro sweep into dir: random tokens (vocab 64; fixture generated here from PCG seeds 1
// and 2), a 2-layer d=32 model, 4 steps, and axes γ × seed (4 runs), plus any extra axes lines.
func microGrid(t *testing.T, dir string, extraAxes string) *Grid {
	t.Helper()
	for i, name := range []string{"train.tok", "val.tok"} {
		rng := rand.New(rand.NewPCG(uint64(i+1), 7))
		ids := make([]int32, 3000/(4*i+1))
		for j := range ids {
			ids[j] = int32(rng.IntN(64))
		}
		if err := data.WriteTokens(filepath.Join(dir, name), ids); err != nil {
			t.Fatal(err)
		}
	}
	text := fmt.Sprintf(`
[base]
model.vocab_size = 64
model.hidden_size = 32
model.num_hidden_layers = 2
model.num_attention_heads = 2
model.max_position_embeddings = 16
train.batch_size = 2
train.steps = 4
train.log_interval = 1
train.eval_interval = 2
train.eval_windows = 4
train.checkpoint_interval = 2
train.keep_checkpoints = 1
schedule.warmup_steps = 1
data.train = %q
data.val = %q

[axes]
"init.gamma" = [0.5, 1]
seed = [0, 1]
%s`, filepath.Join(dir, "train.tok"), filepath.Join(dir, "val.tok"), extraAxes)
	g, err := ParseGrid(writeFile(t, dir, "grid.toml", text))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// tableWithoutTiming is the collected table as CSV minus the timing columns.
func tableWithoutTiming(t *testing.T, dir string) string {
	t.Helper()
	tab, err := Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tab.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	drop := -1
	for i, c := range recs[0] {
		if slices.Contains(TimingColumns, c) {
			drop = i
		}
	}
	var out strings.Builder
	for _, rec := range recs {
		out.WriteString(strings.Join(slices.Delete(slices.Clone(rec), drop, drop+1), ",") + "\n")
	}
	return out.String()
}

func outcomes(reps []Report) string {
	var s []string
	for _, r := range reps {
		o := string(r.Outcome)
		if r.Resumed {
			o += "+resumed"
		}
		s = append(s, o)
	}
	return strings.Join(s, ", ")
}

// TestSweepJobsAndIndexAgree checks that running the micro grid with --jobs 2 and with one --index
// invocation per run (as a job array does) gives the same collected table, timing aside, and that a second
// invocation skips every finished run.
func TestSweepJobsAndIndexAgree(t *testing.T) {
	src := t.TempDir()
	g := microGrid(t, src, "")
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	reps, err := Execute(context.Background(), g, a, Options{Jobs: 2, Index: -1, Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(reps); got != "finished, finished, finished, finished" {
		t.Fatalf("jobs 2: %s", got)
	}
	if reps[0].Threads != 1 {
		t.Errorf("jobs 2 on 2 cores: %d threads per run, want 1", reps[0].Threads)
	}
	for i := range 4 {
		reps, err := Execute(context.Background(), g, b, Options{Index: i, Cores: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(reps) != 1 || reps[0].Run.Index != i || reps[0].Outcome != Finished || reps[0].Threads != 2 {
			t.Fatalf("--index %d: %+v", i, reps)
		}
	}
	ta, tb := tableWithoutTiming(t, a), tableWithoutTiming(t, b)
	if ta != tb {
		t.Errorf("tables differ:\n--jobs 2:\n%s--index:\n%s", ta, tb)
	}
	if !strings.Contains(ta, ",done,") || strings.Count(ta, "\n") != 5 {
		t.Errorf("table:\n%s", ta)
	}
	reps, err = Execute(context.Background(), g, a, Options{Jobs: 2, Index: -1})
	if err != nil || outcomes(reps) != "already done, already done, already done, already done" {
		t.Errorf("second invocation: %s, %v", outcomes(reps), err)
	}
	// The sweep directory records the grid and the plan.
	if txt, err := os.ReadFile(filepath.Join(a, GridFile)); err != nil || !bytes.Equal(txt, g.Text) {
		t.Errorf("grid copy: %v", err)
	}
	p, err := ReadPlan(a)
	if err != nil || len(p.Runs) != 4 || p.Runs[3].ID != reps[3].Run.ID {
		t.Errorf("plan.json: %v", err)
	}
}

// TestSweepAutoJobs: with AutoJobs the sweep measures packing once, records the measurement and its choice in
// DIR/packing.json, runs with the chosen jobs × threads, and reuses the record when run again; a damaged record
// is refused naming the file.
func TestSweepAutoJobs(t *testing.T) {
	g := microGrid(t, t.TempDir(), "")
	dir := filepath.Join(t.TempDir(), "s")
	var log bytes.Buffer
	reps, err := Execute(context.Background(), g, dir, Options{Jobs: AutoJobs, Index: -1, Cores: 2, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, train.PackingFile))
	if err != nil {
		t.Fatal(err)
	}
	var pk train.Packing
	if err := json.Unmarshal(b, &pk); err != nil {
		t.Fatal(err)
	}
	if pk.Cores != 2 || !(pk.One > 0 && pk.Packed > 0) || math.Abs(pk.Gain-pk.Packed/pk.One) > 1e-9 {
		t.Fatalf("packing.json: %+v", pk)
	}
	if want := map[bool]int{true: 2, false: 1}[pk.Gain >= train.PackingGainMin]; pk.Jobs != want {
		t.Errorf("gain %.2f chose %d jobs, want %d", pk.Gain, pk.Jobs, want)
	}
	if reps[0].Threads != 2/pk.Jobs || !strings.Contains(log.String(), "packing probe: 1 run × 2 threads") {
		t.Errorf("ran with %d threads per run for %d jobs; log:\n%s", reps[0].Threads, pk.Jobs, log.String())
	}
	log.Reset()
	if _, err := Execute(context.Background(), g, dir, Options{Jobs: AutoJobs, Index: -1, Cores: 2, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "recorded in") {
		t.Errorf("second call measured again:\n%s", log.String())
	}
	if err := os.WriteFile(filepath.Join(dir, train.PackingFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(context.Background(), g, dir, Options{Jobs: AutoJobs, Index: -1, Cores: 2}); err == nil || !strings.Contains(err.Error(), train.PackingFile) {
		t.Errorf("damaged packing.json: %v", err)
	}
}

// TestSweepResumesAfterCancel interrupts a sweep in its second run and checks that the next invocation skips
// the finished run (its metrics file untouched), resumes the interrupted one from its checkpoint, starts the
// rest, and ends with the table of an uninterrupted sweep.
func TestSweepResumesAfterCancel(t *testing.T) {
	src := t.TempDir()
	g := microGrid(t, src, "")
	dir := filepath.Join(t.TempDir(), "sweep")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reps, err := Execute(ctx, g, dir, Options{Jobs: 1, Index: -1, AfterStep: func(r Run, step int) {
		if r.Index == 1 && step == 3 {
			cancel()
		}
	}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("interrupted sweep: error %v", err)
	}
	if got := outcomes(reps); got != "finished, interrupted, not started, not started" {
		t.Fatalf("interrupted sweep: %s", got)
	}
	_, sts, err := Status(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, s := range sts {
		states = append(states, string(s.State))
	}
	if got := strings.Join(states, " "); got != "done pending pending pending" || sts[1].Step != 3 {
		t.Errorf("status after interrupt: %s, run 1 at step %d", got, sts[1].Step)
	}
	m0 := filepath.Join(RunDir(dir, reps[0].Run), rundir.MetricsFile)
	st0, err := os.Stat(m0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // so that a rewrite would show in the mtime
	reps, err = Execute(context.Background(), g, dir, Options{Jobs: 2, Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(reps); got != "already done, finished+resumed, finished, finished" {
		t.Errorf("resumed sweep: %s", got)
	}
	if st, err := os.Stat(m0); err != nil || !st.ModTime().Equal(st0.ModTime()) {
		t.Errorf("run 0's metrics rewritten: %v → %v (%v)", st0.ModTime(), st.ModTime(), err)
	}
	log, _ := os.ReadFile(filepath.Join(RunDir(dir, reps[1].Run), LogFile))
	if !strings.Contains(string(log), "resuming") || !strings.Contains(string(log), "checkpoints/step-000003") {
		t.Errorf("run 1 did not resume from its checkpoint:\n%s", log)
	}
	straight := filepath.Join(t.TempDir(), "straight")
	if _, err := Execute(context.Background(), g, straight, Options{Jobs: 2, Index: -1}); err != nil {
		t.Fatal(err)
	}
	if a, b := tableWithoutTiming(t, dir), tableWithoutTiming(t, straight); a != b {
		t.Errorf("resumed sweep differs from an uninterrupted one:\n%s\n%s", a, b)
	}
}

// TestSweepFailedRunRecorded checks that a run that fails records error.txt, the others finish, the sweep
// reports the failure, status shows it, and collect still lists it.
func TestSweepFailedRunRecorded(t *testing.T) {
	src := t.TempDir()
	// vocab 16 passes train.Load but the token file has ids up to 63: the run fails when it reads its data.
	// Axes: γ, vocab, seed, so runs 2, 3, 6 and 7 fail.
	g := microGrid(t, src, `"model.vocab_size" = [64, 16]`)
	dir := filepath.Join(t.TempDir(), "sweep")
	reps, err := Execute(context.Background(), g, dir, Options{Jobs: 2, Index: -1})
	if err == nil || !strings.Contains(err.Error(), "4 of 8 runs failed") {
		t.Fatalf("error %v", err)
	}
	for _, r := range reps {
		want := Finished
		if r.Run.Values["model.vocab_size"] == int64(16) {
			want = Failed
		}
		if r.Outcome != want {
			t.Errorf("%s: %s, want %s (%v)", r.Run.ID, r.Outcome, want, r.Err)
		}
	}
	b, err := os.ReadFile(filepath.Join(RunDir(dir, reps[2].Run), ErrorFile))
	if err != nil || !strings.Contains(string(b), "outside the vocabulary") {
		t.Errorf("error.txt: %q, %v", b, err)
	}
	_, sts, err := Status(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	WriteStatus(&out, sts)
	if !strings.Contains(out.String(), "8 runs: 4 done, 0 running, 4 failed, 0 pending") || !strings.Contains(out.String(), "outside the vocabulary") {
		t.Errorf("status:\n%s", out.String())
	}
	tab, err := Collect(dir)
	if err != nil || len(tab.Rows) != 8 || tab.Rows[2].State != StateFailed {
		t.Fatalf("collect: %v", err)
	}
	var js bytes.Buffer
	if err := tab.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Axes []string         `json:"axes"`
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatalf("table JSON: %v\n%s", err, js.String())
	}
	if len(parsed.Rows) != 8 || parsed.Rows[2]["val_loss"] != nil || parsed.Rows[0]["val_loss"] == nil || parsed.Rows[0]["model.vocab_size"] != float64(64) {
		t.Errorf("table JSON rows: %v", parsed.Rows[:2])
	}
}

// TestSweepRefusesAnotherGrid checks that a directory holding one grid's runs refuses a different grid.
func TestSweepRefusesAnotherGrid(t *testing.T) {
	src := t.TempDir()
	dir := filepath.Join(t.TempDir(), "sweep")
	g := microGrid(t, src, "")
	if _, err := Execute(context.Background(), g, dir, Options{Index: 0}); err != nil {
		t.Fatal(err)
	}
	other := microGrid(t, t.TempDir(), "") // same axes, other data paths: other configs
	_, err := Execute(context.Background(), other, dir, Options{Index: 0})
	if err == nil || !strings.Contains(err.Error(), "holds another sweep") {
		t.Fatalf("error %v", err)
	}
	more := microGrid(t, src, `"model.norm_eps" = [1e-5, 1e-12]`)
	_, err = Execute(context.Background(), more, dir, Options{Index: 0})
	if err == nil || !strings.Contains(err.Error(), "4 runs there, 8 here") {
		t.Fatalf("error %v", err)
	}
}

// TestSweepLocks checks the per-run lock: a run locked by a live process is left to it, a lock of a dead
// process on this host or without heartbeat is taken over, and an --index task waits for a held lock.
func TestSweepLocks(t *testing.T) {
	src := t.TempDir()
	g := microGrid(t, src, "")
	dir := filepath.Join(t.TempDir(), "sweep")
	p, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if err := Prepare(dir, g, p); err != nil {
		t.Fatal(err)
	}
	lockOf := func(i int) string {
		rd := RunDir(dir, p.Runs[i])
		os.MkdirAll(rd, 0o755)
		return filepath.Join(rd, runlock.FileName)
	}
	held, err := runlock.Acquire(lockOf(0), time.Minute, nil) // a live holder (this process)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	dead, _ := json.Marshal(map[string]any{"pid": 1 << 30, "host": host, "token": "x"}) // no such pid
	os.WriteFile(lockOf(1), dead, 0o644)
	old, _ := json.Marshal(map[string]any{"pid": 1, "host": "elsewhere", "token": "y"})
	os.WriteFile(lockOf(2), old, 0o644)
	past := time.Now().Add(-2 * time.Minute)
	os.Chtimes(lockOf(2), past, past)

	reps, err := Execute(context.Background(), g, dir, Options{Jobs: 1, Index: -1, StaleAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(reps); got != "busy, finished, finished, finished" {
		t.Fatalf("outcomes %s", got)
	}
	for i := 1; i < 4; i++ {
		if _, err := os.Stat(lockOf(i)); err == nil {
			t.Errorf("run %d: lock left behind", i)
		}
	}
	_, sts, _ := Status(dir, time.Minute)
	if sts[0].State != StateRunning || !strings.Contains(sts[0].Note, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("status of the locked run: %+v", sts[0])
	}
	// An --index task waits for the holder, then runs.
	go func() {
		time.Sleep(300 * time.Millisecond)
		held.Release()
	}()
	start := time.Now()
	reps, err = Execute(context.Background(), g, dir, Options{Index: 0, StaleAfter: time.Minute, Poll: 50 * time.Millisecond})
	if err != nil || reps[0].Outcome != Finished {
		t.Fatalf("--index 0 after the lock's release: %s, %v", outcomes(reps), err)
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Errorf("--index 0 did not wait for the lock")
	}
}

// TestLostLockWritesNothing: a run whose lock another process took over (it judged the heartbeat stale) stops
// without writing into the directory it no longer owns: no new checkpoint, and above all no pruning of the
// checkpoint the new owner resumes from.
func TestLostLockWritesNothing(t *testing.T) {
	g := microGrid(t, t.TempDir(), "") // keep_checkpoints = 1: a checkpoint prunes every older one
	dir := filepath.Join(t.TempDir(), "sweep")
	var rd string
	o := Options{Index: 0, StaleAfter: 100 * time.Millisecond, Poll: 10 * time.Millisecond,
		AfterStep: func(r Run, step int) {
			rd = RunDir(dir, r)
			if step == 3 {
				// Another process takes the run over; this one's heartbeat notices within StaleAfter.
				if err := os.WriteFile(filepath.Join(rd, runlock.FileName), []byte(`{"pid":1,"host":"other","token":"t"}`), 0o644); err != nil {
					t.Error(err)
				}
				time.Sleep(time.Second) // ample for a heartbeat every ~StaleAfter/3, even on a loaded machine
			}
		}}
	reps, _ := Execute(context.Background(), g, dir, o)
	if reps[0].Outcome != Interrupted || !errors.Is(reps[0].Err, errLockLost) {
		t.Errorf("outcome %s, error %v: want interrupted by the lost lock", reps[0].Outcome, reps[0].Err)
	}
	var names []string
	ls, _ := os.ReadDir(filepath.Join(rd, "checkpoints"))
	for _, e := range ls {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"step-000002"}) {
		t.Errorf("checkpoints after the lock was lost: %v, want only the new owner's step-000002", names)
	}
}

// TestRunDoneOnlyWhenFinalIsWhole: a run whose final model could not be completed (here the tokenizer copy
// fails) is failed, not done, and the next Execute retries it.
func TestRunDoneOnlyWhenFinalIsWhole(t *testing.T) {
	src := t.TempDir()
	g := microGrid(t, src, "")
	bad := filepath.Join(src, "tokenizer.json")
	if err := os.Mkdir(bad, 0o755); err != nil { // a directory: reading it as the tokenizer fails
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sweep")
	reps, _ := Execute(context.Background(), g, dir, Options{Index: 0})
	if reps[0].Outcome != Failed {
		t.Fatalf("first attempt: %s, want failed", reps[0].Outcome)
	}
	if _, sts, err := Status(dir, 0); err != nil || sts[0].State == "done" {
		t.Errorf("status after the failed attempt: %+v, %v", sts, err)
	}
	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	reps, _ = Execute(context.Background(), g, dir, Options{Index: 0})
	if reps[0].Outcome != Finished {
		t.Errorf("second attempt: %s, want finished", reps[0].Outcome)
	}
}
