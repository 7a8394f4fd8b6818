package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/sweep"
	"github.com/smallinit/smallinit/train"
)

func demoPlan(t *testing.T) *Plan {
	t.Helper()
	p, err := Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDemoEndToEnd runs the demo plan for a few steps: all four corners must finish with finite losses and
// summary.json must hold them; a second run reuses the data and the finished runs; with Probes the corners
// train again on the probe mix, beside the plain runs, and are scored on the probes.
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: trains 12 runs")
	}
	out := t.TempDir()
	o := Options{Out: out, Steps: 3, Windows: 8}
	res, err := Run(context.Background(), demoPlan(t), o)
	if err != nil {
		t.Fatal(err)
	}
	rows := res.Rows
	if len(rows) != 4 {
		t.Fatalf("%d runs, want 4", len(rows))
	}
	for _, r := range rows {
		for _, v := range []float64{r.ValLoss, r.ValBPB, r.TrainLoss, r.LangLoss["en"], r.LangLoss["zh"], r.LangBPB["en"], r.LangBPB["zh"]} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Errorf("%s: non-finite or non-positive metric in %+v", r.Run, r)
			}
		}
	}
	if rows[3].Run != "gamma1-fixed" || rows[3].Gamma != 1 || rows[3].NormEps != 1e-12 || rows[3].AttnGate != "elementwise" {
		t.Errorf("fourth row %+v, want the fixed γ = 1 corner", rows[3])
	}
	s, err := summary.Read(filepath.Join(out, summary.File))
	if err != nil || s.Steps != 3 || len(s.Runs) != 4 {
		t.Fatalf("summary.json: %v, %+v", err, s)
	}
	if res.Compare.A != rows[3].Dir || res.Compare.B != rows[2].Dir {
		t.Errorf("compared %s with %s, want the fixed corners %s and %s", res.Compare.A, res.Compare.B, rows[3].Dir, rows[2].Dir)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Error(err)
	}
	again, err := Run(context.Background(), demoPlan(t), o)
	if err != nil {
		t.Fatal(err)
	}
	// The second run trains nothing and reports what the first recorded; summary.json stays whole.
	if a := again.Rows[3]; a.ValLoss != rows[3].ValLoss || a.TrainLoss != rows[3].TrainLoss || !(a.TokensPerS > 0) {
		t.Errorf("second run: %+v, first %+v", a, rows[3])
	}
	if s, err := summary.Read(filepath.Join(out, summary.File)); err != nil || len(s.Runs) != 4 {
		t.Errorf("summary.json after the second run: %v, %+v", err, s)
	}

	o.Probes, o.ProbeTest = true, 5
	probed, err := Run(context.Background(), demoPlan(t), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range probed.Rows {
		p := r.Probes
		if p == nil || p.ReasoningCount != 30 || p.MemorisationCount != 30 || !(p.ReasoningLoss > 0) || !(p.MemorisationLoss > 0) ||
			p.ReasoningAcc < 0 || p.ReasoningAcc > 1 || !(p.ReasoningChance > 0) {
			t.Errorf("%s: probe scores %+v, want 30 reasoning and 30 memorisation prompts scored", r.Run, p)
		}
		if filepath.Base(filepath.Dir(r.Dir)) != "runs-probes" {
			t.Errorf("%s trained in %s, want under runs-probes/", r.Run, r.Dir)
		}
	}
	if _, err := summary.Read(filepath.Join(out, summary.FileName("-probes"))); err != nil {
		t.Error(err)
	}
	var table strings.Builder
	summary.WriteTable(&table, probed.Rows, 0)
	if !strings.Contains(table.String(), "memorisation acc") {
		t.Errorf("the table has no probe columns:\n%s", table.String())
	}
}

// TestPackedArmsMatchSerial: a group of arms trained two at a time (one thread each, logs in each run's
// train.log) gives the rows, in the same order, and the final weights, bit for bit, of the group trained one
// run at a time on all cores.
func TestPackedArmsMatchSerial(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: trains 8 runs")
	}
	serial, packed := t.TempDir(), t.TempDir()
	a, err := Run(context.Background(), demoPlan(t), Options{Out: serial, Steps: 3, Windows: 8})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), demoPlan(t), Options{Out: packed, Steps: 3, Windows: 8, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Rows) != 4 || len(b.Rows) != 4 {
		t.Fatalf("%d and %d rows, want 4", len(a.Rows), len(b.Rows))
	}
	for i := range a.Rows {
		ra, rb := a.Rows[i], b.Rows[i]
		if ra.Run != rb.Run || ra.ValLoss != rb.ValLoss || ra.TrainLoss != rb.TrainLoss {
			t.Errorf("row %d: serial %s val %v train %v, packed %s val %v train %v", i, ra.Run, ra.ValLoss, ra.TrainLoss, rb.Run, rb.ValLoss, rb.TrainLoss)
		}
		wa, err := os.ReadFile(filepath.Join(ra.Dir, "final", "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		wb, err := os.ReadFile(filepath.Join(rb.Dir, "final", "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		if string(wa) != string(wb) {
			t.Errorf("%s: packed final weights differ from serial ones", ra.Run)
		}
		if _, err := os.Stat(filepath.Join(rb.Dir, TrainLogFile)); err != nil {
			t.Errorf("packed run %s has no %s: %v", rb.Run, TrainLogFile, err)
		}
	}
	// AutoJobs measures packing once (OUT/packing.json) before the group; the finished runs are read back.
	var log strings.Builder
	if _, err := Run(context.Background(), demoPlan(t), Options{Out: packed, Steps: 3, Windows: 8, Jobs: sweep.AutoJobs, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(packed, train.PackingFile)); err != nil || !strings.Contains(log.String(), "packing probe: 1 run") {
		t.Errorf("AutoJobs: %v; log:\n%s", err, log.String())
	}
}

// TestSizingReused: a budget is sized once and recorded in OUT/sizing.json; the same budget run again reuses
// those steps (and so the runs named by them), another budget is sized anew by a throughput probe. A sizing
// file of the demo before plans ({"minutes", "steps"}) is read too.
func TestSizingReused(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, budget.SizingFile), []byte(`{"minutes": 5, "steps": 1234}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := demoPlan(t)
	var log strings.Builder
	o := Options{Out: out, Budget: 5 * time.Minute, Seeds: []uint64{0}, Log: &log}
	res := &Outcome{Plan: p, Out: out, DataDir: filepath.Join(out, DataDir), Seeds: o.Seeds}
	res.Stats = &data.Stats{VocabSize: 256} // sizing reads only the vocabulary of the prepared data
	steps, err := size(context.Background(), p, res, &o, false)
	if err != nil || steps != 1234 || !strings.Contains(log.String(), "reusing the sizing") {
		t.Errorf("same budget: %d steps, %v, log %q; want the recorded 1234", steps, err, log.String())
	}
	log.Reset()
	o.Budget = 600 * time.Millisecond
	if steps, err = size(context.Background(), p, res, &o, false); err != nil || steps != 10 || !strings.Contains(log.String(), "throughput probe") {
		t.Errorf("another budget: %d steps, %v, log %q; want a fresh probe (at least 10 steps)", steps, err, log.String())
	}
	s, err := budget.ReadSizing(filepath.Join(out, budget.SizingFile))
	if err != nil || s.Budget != "600ms" || s.Seeds != 1 || s.Steps != 10 {
		t.Errorf("sizing file after the new budget: %+v, %v", s, err)
	}
}

// TestSweepGroupTask: a sweep group is a sweep directory (its grid written beside it), and Task runs only the
// plan's run of that index, with no summary or report; an index past the plan's runs is refused.
func TestSweepGroupTask(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: prepares a corpus and trains a run")
	}
	text := strings.Replace(strings.Replace(myPlanForTest, "[[group.arm]]\nname = \"a\"\n", "", 1), `name = "runs"`, "name = \"grid\"\naxes = { \"init.gamma\" = [0.5, 1] }", 1)
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o := Options{Out: out, Steps: 1, Task: true, Index: 2}
	if _, err := Run(context.Background(), p, o); err == nil || !strings.Contains(err.Error(), "not 2") {
		t.Fatalf("index 2 of 2 runs: %v, want a refusal", err)
	}
	o.Index = 1
	res, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 2 || res.Report != "" || len(res.Rows) != 0 {
		t.Errorf("task outcome %+v, want 2 runs in the plan and no summary or report", res)
	}
	entries, _ := os.ReadDir(filepath.Join(out, "grid", "runs"))
	var done []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(out, "grid", "runs", e.Name(), "final", "config.json")); err == nil {
			done = append(done, e.Name())
		}
	}
	if len(done) != 1 || !strings.HasPrefix(done[0], "001-") {
		t.Errorf("finished runs %v, want only run 001", done)
	}
	if _, err := os.Stat(filepath.Join(out, "grid.grid.toml")); err != nil {
		t.Error(err)
	}
}

const myPlanForTest = `
name = "t"
seeds = [0]
[budget]
minutes = 1
efficiency = 0.85
min_steps = 1
[data]
corpus = "embedded"
vocab = 300
[base]
"model.preset" = "tiny"
"model.hidden_size" = 32
"model.num_attention_heads" = 2
"model.num_hidden_layers" = 1
"model.max_position_embeddings" = 32
"train.batch_size" = 2
"train.log_interval" = 1
"train.eval_windows" = 2
[[group]]
name = "runs"
[[group.arm]]
name = "a"
`
