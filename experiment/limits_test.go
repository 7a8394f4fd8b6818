package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/train"
)

// TestParseBoundsAndNames: every count, budget, name and set a plan file can hold that no study can mean is
// refused by Parse, before anything is allocated for it, with an error naming the key, group or arm.
func TestParseBoundsAndNames(t *testing.T) {
	good := string(demoPlan(t).Text)
	group := func(name, body string) string { return good + fmt.Sprintf("\n[[group]]\nname = %q\n%s\n", name, body) }
	arm := func(name, set string) string {
		return group("x", fmt.Sprintf("[[group.arm]]\nname = %q\nset = { %s }\n", name, set))
	}
	seeds := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i)
		}
		return strings.Replace(good, "seeds = [0]", "seeds = ["+strings.Join(s, ",")+"]", 1)
	}
	minutes := func(v string) string { return strings.Replace(good, "minutes = 5", "minutes = "+v, 1) }
	axis := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i + 1)
		}
		return "axes = { \"model.hidden_size\" = [" + strings.Join(s, ",") + "] }"
	}
	for _, tc := range []struct{ name, text, want string }{
		{"too many seeds", seeds(MaxSeeds + 1), "seeds: 1001 seeds"},
		{"duplicate seed", strings.Replace(good, "seeds = [0]", "seeds = [0, 1, 0]", 1), "seed 0 is listed twice"},
		{"group seeds duplicate", group("x", "seeds = [3, 3]\n"+axis(2)), "seed 3 is listed twice"},
		{"arms × axes too many", group("x", "axes = { \"model.hidden_size\" = [1,2,3,4,5,6,7,8,9,10], \"init.gamma\" = ["+strings.Repeat("1.0,", 200)+"1.0] }"), "more than 1000 arms"},
		{"arms × seeds too many", seeds(20) + "\n[[group]]\nname = \"x\"\n" + axis(600) + "\n", ""},
		{"inf minutes", minutes("inf"), "budget.minutes = +Inf"},
		{"NaN minutes", minutes("nan"), "budget"},
		{"1e300 minutes", minutes("1e300"), "budget.minutes = 1e+300"},
		{"group ..", group("..", axis(1)), `name ".."`},
		{"group .", group(".", axis(1)), `name "."`},
		{"hidden group", group(".x", axis(1)), `name ".x"`},
		{"group with a slash", group("a/b", axis(1)), `name "a/b"`},
		{"group with a newline", group("a\nb", axis(1)), `name "a\nb"`},
		{"group data", group("data", axis(1)), `name "data" is one of the study's own`},
		{"group sizing.json", group("sizing.json", axis(1)), "own files"},
		{"group probes twin", group("runs-probes", axis(1)), "-probes"},
		{"arm ..", arm("..", `"init.gamma" = 1`), `arm ".."`},
		{"arm with a newline", arm("a\nb", `"init.gamma" = 1`), `arm "a\nb"`},
		{"arm sets steps", arm("a", `"train.steps" = 5`), "train.steps is set by the plan"},
		{"arm sets seed", arm("a", `seed = 5`), "seed is set by the plan"},
		{"arm sets vocab (short key)", arm("a", `vocab_size = 5`), "model.vocab_size is set by the plan"},
		{"arm sets a per_steps key", arm("a", `"schedule.warmup_steps" = 5`), "schedule.warmup_steps is set by the plan"},
		{"group sets vocab", group("x", "set = { \"model.vocab_size\" = 5 }\n"+axis(1)), "model.vocab_size is set by the plan"},
		{"base sets steps", strings.Replace(good, "[base]\n", "[base]\n\"train.steps\" = 5\n", 1), "base: train.steps"},
		{"axis over seed-like key", group("x", "axes = { \"train.steps\" = [1, 2] }"), "train.steps is set by the plan"},
		{"exclude of no group", strings.Replace(good, "[report]\n", "[report]\nexclude = [\"nope\"]\n", 1), `report.exclude: no group "nope"`},
		{"vocab past a model's", strings.Replace(good, "vocab = 4096", "vocab = 1000000000", 1), "data.vocab = 1000000000: must be in [257, 16777216]"},
		{"vocab below the bytes", strings.Replace(good, "vocab = 4096", "vocab = 100", 1), "data.vocab = 100: must be in [257"},
		{"min_steps past a sizing's", strings.Replace(good, "min_steps = 10", "min_steps = 2000000000", 1), "budget.min_steps = 2000000000: at most 1000000000"},
		{"deep nesting", good + "\nz = " + strings.Repeat("{a = ", 100000), "nested"},
	} {
		if tc.want == "" { // arms × seeds: 600 points × 20 seeds
			tc.want = "runs, more than 10000"
		}
		if _, err := Parse([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Parse([]byte(group("x_1.a-b", axis(3)))); err != nil {
		t.Errorf("a safe group name is refused: %v", err)
	}
}

// TestRunRefusesOptions: options no run can mean are refused before anything is written.
func TestRunRefusesOptions(t *testing.T) {
	p := demoPlan(t)
	dir := t.TempDir()
	many := SeedRange(MaxSeeds)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"empty out", Options{}, "empty directory name"},
		{"negative steps", Options{Out: dir, Steps: -1}, "steps -1"},
		{"negative budget", Options{Out: dir, Budget: -time.Minute}, "budget -1m0s"},
		{"huge budget", Options{Out: dir, Budget: budget.Max + 1}, "budget"},
		{"negative index", Options{Out: dir, Task: true, Index: -2}, "index -2"},
		{"no seeds", Options{Out: dir, Seeds: []uint64{}}, "at least one"},
		{"duplicate seeds", Options{Out: dir, Seeds: []uint64{1, 1}}, "seed 1 is listed twice"},
		{"too many seeds", Options{Out: dir, Seeds: append(many, MaxSeeds)}, "1001 seeds"},
		{"seed past a TOML integer", Options{Out: dir, Seeds: []uint64{1 << 63}}, "seed 9223372036854775808: at most 9223372036854775807"},
		{"arms × seeds", Options{Out: dir, Seeds: many[:MaxSeeds/2]}, ""},
	} {
		q := p
		if tc.name == "arms × seeds" {
			q = mustParse(t, strings.Replace(string(p.Text), "[[group]]", "[[group]]\nname = \"big\"\naxes = { \"init.gamma\" = ["+strings.Repeat("1.0,", 40)+"1.0] }\n[[group]]", 1))
			tc.want = "runs, more than 10000"
		}
		_, err := Run(context.Background(), q, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
		if _, derr := Describe(q, tc.o, 1); derr == nil {
			t.Errorf("%s: Describe accepts it", tc.name)
		}
	}
	if ents, _ := readDirNames(dir); len(ents) != 0 {
		t.Errorf("refused options wrote %v", ents)
	}
}

func mustParse(t *testing.T, text string) *Plan {
	t.Helper()
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readDirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, err
}

// TestSizingShared: processes sharing OUT (job-array tasks, concurrent studies) size a budget once: one takes
// the sizing lock, probes and writes sizing.json, the others wait and read it, so all get the same steps.
func TestSizingShared(t *testing.T) {
	out := t.TempDir()
	p := demoPlan(t)
	const n = 3
	steps := make([]int, n)
	logs := make([]strings.Builder, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := Options{Out: out, Budget: 700 * time.Millisecond, Seeds: []uint64{0}, Log: &logs[i]}
			res := &Outcome{Plan: p, Out: out, DataDir: filepath.Join(out, DataDir), Seeds: o.Seeds, Stats: &data.Stats{VocabSize: 256}}
			steps[i], errs[i] = size(context.Background(), p, res, &o, false)
		}()
	}
	wg.Wait()
	probes := 0
	for i := range n {
		if errs[i] != nil || steps[i] != steps[0] || steps[i] < 1 {
			t.Errorf("process %d: %d steps, %v; want %d like process 0", i, steps[i], errs[i], steps[0])
		}
		probes += strings.Count(logs[i].String(), "throughput probe")
	}
	if probes != 1 {
		t.Errorf("%d throughput probes, want 1", probes)
	}
	if _, err := os.Stat(filepath.Join(out, budget.SizingLock)); !os.IsNotExist(err) {
		t.Errorf("sizing lock left behind: %v", err)
	}
}

// TestReusedDataMustMatch: an OUT/data prepared with another vocabulary is refused, naming both sizes; one of the
// plan's vocabulary is reused (its files checked against its stats.json since issue 48: a real prepared corpus).
func TestReusedDataMustMatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := prepareData(dir, 512, &Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareData(dir, 4096, &Options{}); err == nil || !strings.Contains(err.Error(), "512") || !strings.Contains(err.Error(), "4096") {
		t.Errorf("reused data of another vocabulary: %v", err)
	}
	if st, err := prepareData(dir, 512, &Options{}); err != nil || st.VocabSize != 512 {
		t.Errorf("reused data of the plan's vocabulary: %v", err)
	}
}

// TestBusyTrialIsWaitedFor: an LR trial whose directory another live process holds is waited for, not counted
// as diverged; once the holder lets go, the trial trains and its result is returned.
func TestBusyTrialIsWaitedFor(t *testing.T) {
	dir := t.TempDir()
	ids := make([]int32, 4000)
	for i := range ids {
		ids[i] = int32(i*7) % 64
	}
	tok := filepath.Join(dir, "train.tok")
	if err := data.WriteTokens(tok, ids); err != nil {
		t.Fatal(err)
	}
	cfg, err := train.Load("", []string{"model.vocab_size=64", "model.hidden_size=16", "model.num_hidden_layers=1",
		"model.num_attention_heads=2", "model.max_position_embeddings=8", "train.batch_size=2", "train.steps=2",
		"train.eval_interval=0", "train.diagnostics_interval=0", "data.train=" + tok, "train.threads=1"})
	if err != nil {
		t.Fatal(err)
	}
	trial := filepath.Join(dir, "trial")
	if err := os.MkdirAll(trial, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := runlock.Acquire(filepath.Join(trial, runlock.FileName), runlock.DefaultStaleAfter, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	done := make(chan error, 1)
	go func() { done <- trainTrial(context.Background(), cfg, trial, &Options{Log: &log}) }()
	select {
	case err := <-done:
		t.Fatalf("a busy trial returned at once: %v", err)
	case <-time.After(trialPoll + trialPoll/2):
	}
	l.Release()
	if err := <-done; err != nil {
		t.Fatalf("trial after the holder let go: %v", err)
	}
	if !strings.Contains(log.String(), "another process") {
		t.Errorf("log %q does not say the trial was waited for", log.String())
	}
	if r, err := train.OpenRun(trial); err != nil || !r.Done() {
		t.Errorf("trial not finished: %v", err)
	}
}
