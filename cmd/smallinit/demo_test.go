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
	if again[3].ValLoss != rows[3].ValLoss {
		t.Errorf("second run: val loss %g, first %g", again[3].ValLoss, rows[3].ValLoss)
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
