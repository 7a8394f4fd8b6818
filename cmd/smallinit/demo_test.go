package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoEndToEnd runs the demo with a budget of a few steps: all four corners must finish with finite
// losses and summary.json must hold them; a second run reuses the data and the finished runs.
func TestDemoEndToEnd(t *testing.T) {
	out := t.TempDir()
	cmd := &demoCmd{Out: out, Steps: 3, Windows: 8}
	rows, err := runDemo(context.Background(), cmd, io.Discard, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
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
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Steps int       `json:"steps"`
		Runs  []demoRow `json:"runs"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Steps != 3 || len(s.Runs) != 4 {
		t.Fatalf("summary.json: %v, %+v", err, s)
	}
	again, err := runDemo(context.Background(), cmd, io.Discard, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	// The second run trains nothing and reports what the first recorded; summary.json stays whole.
	if again[3].ValLoss != rows[3].ValLoss || again[3].TrainLoss != rows[3].TrainLoss || !(again[3].TokensPerS > 0) {
		t.Errorf("second run: %+v, first %+v", again[3], rows[3])
	}
	if b, err = os.ReadFile(filepath.Join(out, "summary.json")); err != nil || json.Unmarshal(b, &s) != nil || len(s.Runs) != 4 {
		t.Errorf("summary.json after the second run: %v, %q", err, b)
	}

	// --probes trains the four corners again, on the corpus with probes mixed in, into runs-probes/, and
	// reports their probe scores beside the losses.
	cmd.Probes, cmd.probeTest = true, 5
	var table strings.Builder
	probed, err := runDemo(context.Background(), cmd, &table, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range probed {
		p := r.Probes
		if p == nil || p.ReasoningCount != 30 || p.MemorisationCount != 30 || !(p.ReasoningLoss > 0) || !(p.MemorisationLoss > 0) ||
			p.ReasoningAcc < 0 || p.ReasoningAcc > 1 || !(p.ReasoningChance > 0) {
			t.Errorf("%s: probe scores %+v, want 30 reasoning and 30 memorisation prompts scored", r.Run, p)
		}
		if filepath.Base(filepath.Dir(r.Dir)) != "runs-probes" {
			t.Errorf("%s trained in %s, want under runs-probes/", r.Run, r.Dir)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "summary-probes.json")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(table.String(), "memorisation acc") {
		t.Errorf("the demo's output has no probe table:\n%s", table.String())
	}
}

// TestDemoReusesSizing: a --minutes budget is sized once and recorded in OUT/sizing.json; the same budget run
// again reuses those steps (and so the runs named by them), another budget is sized anew.
func TestDemoReusesSizing(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, demoSizingFile), []byte(`{"minutes": 5, "steps": 1234}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	steps, err := demoSteps(out, 5, 256, &log)
	if err != nil || steps != 1234 || !strings.Contains(log.String(), "reusing the sizing") {
		t.Errorf("same budget: %d steps, %v, log %q; want the recorded 1234", steps, err, log.String())
	}
	log.Reset()
	if steps, err = demoSteps(out, 0.01, 256, &log); err != nil || steps != 10 || !strings.Contains(log.String(), "throughput probe") {
		t.Errorf("another budget: %d steps, %v, log %q; want a fresh probe (at least 10 steps)", steps, err, log.String())
	}
	b, _ := os.ReadFile(filepath.Join(out, demoSizingFile))
	if !strings.Contains(string(b), `"minutes":0.01`) {
		t.Errorf("sizing file after the new budget: %s", b)
	}
}
