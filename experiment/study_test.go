package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/train"
)

// TestStudyWorkJoinsThePlan: a study design's statement (Description.Statement) opens the printed plan, its
// extra work (Options.Extra, per seed) is priced on the plan's seeds in base-model steps and listed with them,
// and its scoring tokens (Options.ScoreTokens) enter the wall-time estimate once per run; without them there is
// none of it. The design hands all of it over as data: experiment calls nothing of it.
func TestStudyWorkJoinsThePlan(t *testing.T) {
	p, err := Parse([]byte(primariesPlan + "tokens_per_param = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Describe(p, Options{Out: t.TempDir()}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	work := []ExtraWork{{Name: "fake", Text: "the fake design's own training", FLOPsPerSeed: 1e12}}
	d, err := Describe(p, Options{Out: t.TempDir(), Extra: work, ScoreTokens: 1000}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	d.Statement = []byte("H: the fake design's statement\n")
	var b strings.Builder
	if err := d.Write(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, "H: the fake design's statement\n") {
		t.Errorf("the statement does not open the plan:\n%s", text)
	}
	if !strings.Contains(text, "fake: the fake design's own training, on seeds [0 1 2]") || len(d.Extra) != 1 || len(d.Estimate.ExtraCost) != 1 || !(d.Estimate.ExtraCost[0] > 0) {
		t.Errorf("extra work %+v, cost %v:\n%s", d.Extra, d.Estimate.ExtraCost, text)
	}
	// The cost is the work on every seed in base-model steps: 1e12 FLOPs × 3 seeds over a base step's FLOPs.
	base, err := train.LoadSets("", (&Outcome{Stats: &data.Stats{VocabSize: p.Data.Vocab}}).baseSets(p, nil, 100))
	if err != nil {
		t.Fatal(err)
	}
	want := 1e12 * 3 / (base.Model.FLOPsPerToken() * float64(base.Train.BatchSize*base.Model.SeqLen))
	if len(p.Seeds) != 3 || len(d.Estimate.ExtraCost) != 1 || math.Abs(d.Estimate.ExtraCost[0]/want-1) > 1e-12 {
		t.Errorf("extra cost on seeds %v: %v, want %g base-model steps", p.Seeds, d.Estimate.ExtraCost, want)
	}
	if d.Estimate.ScoreTokens != int64(d.Estimate.Runs)*1000 {
		t.Errorf("score tokens %d for %d runs, want 1000 per run", d.Estimate.ScoreTokens, d.Estimate.Runs)
	}
	var pb strings.Builder
	if err := plain.Write(&pb); err != nil {
		t.Fatal(err)
	}
	if plain.Estimate.ExtraCost != nil || plain.Estimate.ScoreTokens != 0 || strings.Contains(pb.String(), "fake") {
		t.Errorf("a plan without a study's work: extra %v, score tokens %d", plain.Estimate.ExtraCost, plain.Estimate.ScoreTokens)
	}
}

// TestStudyLock: a study's driver holds OUT/study.lock from Start to Close; a second driver on the same output
// directory is refused at once, naming the holder's pid and host, while a task of a job array takes no such lock;
// a holder that died on this host is taken over, and a Start that fails leaves no lock behind. (Start fails here
// at its first write, the --data import, which comes after the lock.)
func TestStudyLock(t *testing.T) {
	p, err := Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	nope := filepath.Join(out, "no-corpus")
	path := filepath.Join(out, StudyLockFile)
	host, _ := os.Hostname()
	held, err := runlock.Acquire(path, runlock.DefaultStaleAfter, nil) // another driver, alive: this process
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), p, Options{Out: out, Data: nope})
	for _, want := range []string{"another study is running", fmt.Sprintf("pid %d", os.Getpid()), host, "another --out"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a second driver: %v, want an error naming %q", err, want)
		}
	}
	if _, err = Start(context.Background(), p, Options{Out: out, Data: nope, Task: true, Index: 0}); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Errorf("a task beside the driver: %v, want it past the lock, at the --data import", err)
	}
	held.Release()

	// A holder that died on this host (an exited child's pid) is taken over.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	dead, _ := json.Marshal(map[string]any{"pid": child.Process.Pid, "host": host, "token": "dead", "started": time.Now().UTC()})
	if err := os.WriteFile(path, dead, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = Start(context.Background(), p, Options{Out: out, Data: nope}); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Errorf("a dead holder: %v, want its lock taken over and Start at the --data import", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed Start left %s: %v", path, err)
	}
}

// TestStopBeforeTheReport: a study stopped (SIGTERM) after its runs does not start the report: it returns
// train.ErrInterrupted, and the next call writes it.
func TestStopBeforeTheReport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (&Execution{}).WriteReport(ctx); !errors.Is(err, train.ErrInterrupted) {
		t.Errorf("WriteReport after a stop: %v, want ErrInterrupted", err)
	}
}

// TestSizingProbeStops: SIGTERM during the sizing probe (issue 48, 4; the probe ran to its end, minutes on a
// large base model, and then wrote sizing.json) stops it with train.ErrInterrupted saying so, writes no
// sizing.json and leaves no probe directory; the same call then probes and records the sizing.
func TestSizingProbeStops(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: runs the throughput and overhead probes")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the overhead probe's run directory goes
	out := t.TempDir()
	p := demoPlan(t)
	o := Options{Out: out, Budget: 5 * time.Minute, Seeds: []uint64{0}}
	res := &Outcome{Plan: p, Out: out, DataDir: filepath.Join(out, DataDir), Seeds: o.Seeds}
	res.Stats = &data.Stats{VocabSize: 256} // sizing reads only the vocabulary of the prepared data
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := size(ctx, p, res, &o, false)
	if !errors.Is(err, train.ErrInterrupted) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "during the sizing") {
		t.Errorf("size after a stop: %v, want ErrInterrupted during the sizing", err)
	}
	if _, err := os.Stat(filepath.Join(out, budget.SizingFile)); !os.IsNotExist(err) {
		t.Errorf("a stopped sizing wrote %s (%v)", budget.SizingFile, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("a stopped sizing left %s in the temporary directory", left[0].Name())
	}
	steps, err := size(context.Background(), p, res, &o, false)
	if err != nil || steps < p.Budget.MinSteps {
		t.Fatalf("the same call again: %d steps, %v", steps, err)
	}
	if s, err := budget.ReadSizing(filepath.Join(out, budget.SizingFile)); err != nil || s.Steps != steps {
		t.Errorf("the sizing recorded: %+v, %v; want %d steps", s, err, steps)
	}
}
