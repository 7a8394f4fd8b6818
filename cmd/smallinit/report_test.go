package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/train/rundir"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/report"
	"github.com/smallinit/smallinit/train"
)

// TestReportCommand trains the study's four corners for a few steps at a micro size (with diagnostics and
// checkpoints), adds a broken run, and runs `smallinit report` over them with --compare, --coordcheck and
// (when Chromium is there) --screenshot.
func TestReportCommand(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 3))
	toks := func(name string, n int) string {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(rng.IntN(64))
		}
		p := filepath.Join(root, name)
		if err := data.WriteTokens(p, ids); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tr, va := toks("train.tok", 4000), toks("val.tok", 800)
	corners := []struct {
		name, gate string
		gamma, eps float64
	}{{"g0.5-default", "none", 0.5, 1e-5}, {"g1-default", "none", 1, 1e-5}, {"g0.5-fixed", "elementwise", 0.5, 1e-12}, {"g1-fixed", "elementwise", 1, 1e-12}}
	runs := filepath.Join(root, "runs")
	for _, c := range corners {
		cfg, err := train.Load("", []string{"model.vocab_size=64", "model.hidden_size=32", "model.num_hidden_layers=2",
			"model.num_attention_heads=2", "model.max_position_embeddings=16", "train.batch_size=4", "train.steps=6",
			"train.log_interval=2", "train.eval_interval=3", "train.checkpoint_interval=2", "train.keep_checkpoints=3",
			"train.diagnostics_interval=2", "schedule.warmup_steps=2", "data.train=" + tr, "data.val=" + va,
			fmt.Sprintf("init.gamma=%g", c.gamma), fmt.Sprintf("model.norm_eps=%g", c.eps), "model.attn_gate=" + c.gate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := train.Start(context.Background(), cfg, filepath.Join(runs, c.name), train.Options{Diagnostics: diag.Training}); err != nil {
			t.Fatal(err)
		}
	}
	broken := filepath.Join(runs, "broken")
	os.MkdirAll(broken, 0o755)
	os.WriteFile(filepath.Join(broken, rundir.MetricsFile), []byte(`{"step": 2, "tokens": 128, "loss": 4.1}`+"\n"+`{"step": 4, "tok`), 0o644)
	coord := filepath.Join(root, "coord.json")
	b, _ := json.Marshal(map[string]any{"gamma": 1, "predicted_attn_exponent": 0, "points": []map[string]any{
		{"width": 64, "step": 0, "layer": 0, "hidden_rms": 1, "attn_residual_ratio": 0.2, "ffn_residual_ratio": 0.1},
		{"width": 128, "step": 0, "layer": 0, "hidden_rms": 1, "attn_residual_ratio": 0.21, "ffn_residual_ratio": 0.1}},
		"fits": []map[string]any{{"step": 0, "layer": 0, "attn_exponent": 0.07, "ffn_exponent": 0}}})
	os.WriteFile(coord, b, 0o644)

	outDir := filepath.Join(root, "out")
	if keep := os.Getenv("SMALLINIT_REPORT_KEEP"); keep != "" { // to look at the page and the screenshot
		outDir = keep
	}
	out := filepath.Join(outDir, "report.html")
	cmd := &reportCmd{Dirs: []string{runs}, Out: out, Title: "micro corners", Compare: "A=" + filepath.Join(runs, "g1-fixed") + ",B=" + filepath.Join(runs, "g0.5-default"),
		CompareWindows: 8, CompareBins: 5, HeatmapTensor: report.DefaultHeatmapTensor, Coordcheck: []string{coord}, MaxArms: 8, Width: 1000}
	if _, err := report.FindChromium(); err == nil {
		cmd.Screenshot = filepath.Join(outDir, "report.png")
	} else {
		t.Log("no chromium: skipping --screenshot")
	}
	var stdout bytes.Buffer
	if err := cmd.run(&stdout); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, id := range []string{report.FigLossCurves, report.FigValGamma, report.FigFixes, report.FigTrajectories, report.FigHeatmaps,
		diagrec.FigureSink, diagrec.FigureNorm, report.FigCompare, report.FigCoordcheck} {
		if !strings.Contains(page, `<section id="`+id+`">`) || !strings.Contains(stdout.String(), id) {
			t.Errorf("figure %s missing:\n%s", id, stdout.String())
		}
	}
	if strings.Contains(page, `data-points="0"`) || strings.Contains(page, "http://") || strings.Contains(page, "https://") || strings.Contains(page, "<script") {
		t.Error("an empty figure, or a network or script reference")
	}
	if !strings.Contains(page, "broken") || !strings.Contains(page, "incomplete: no config.toml") {
		t.Error("the broken run is not listed as incomplete")
	}
	if strings.Count(page, "<image") != 12 { // 4 arms × (init, step 2, final)
		t.Errorf("%d heatmap panels, want 12", strings.Count(page, "<image"))
	}
	if cmd.Screenshot != "" {
		if st, err := os.Stat(cmd.Screenshot); err != nil || st.Size() < 10000 {
			t.Errorf("screenshot: %v", err)
		}
	}
	// A missing directory is an error naming it; a compare JSON is accepted in place of A=,B=.
	if err := (&reportCmd{Dirs: []string{filepath.Join(root, "nope")}, Out: filepath.Join(root, "x.html")}).run(&stdout); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing input: %v", err)
	}
	cj := filepath.Join(root, "cmp.json")
	os.WriteFile(cj, []byte(`{"a": "m1", "b": "m2", "tokens": "v.tok", "comparison": {"windows": 1, "all": {"count": 4}, "bins": [{"count": 2, "mean_delta_sym": 0.1}, {"count": 2, "mean_delta_sym": -0.1}]}}`), 0o644)
	if err := (&reportCmd{Dirs: []string{filepath.Join(root, "nope")}, Out: filepath.Join(root, "y.html"), Compare: cj, NoHeatmaps: true}).run(&stdout); err != nil {
		t.Errorf("compare JSON only: %v", err)
	}
}
