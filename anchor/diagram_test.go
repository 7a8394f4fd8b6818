package anchor

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/train"
)

// TestRunTinyGridAndResume runs a 2-cell grid of a tiny model for a few steps end to end (data, training
// through train with the answer-only loss, scoring, table and page), then runs it again: the second run finds
// both cells in results.jsonl and trains nothing.
func TestRunTinyGridAndResume(t *testing.T) {
	out := t.TempDir()
	g := Grid{Gammas: []float64{0.5}, Depths: []int{1}, LRs: []float64{1e-3}, Seeds: []uint64{1},
		Shape: Shape{Dim: 16, FFN: 32, HeadDim: 8, Norm: arch.NormLayer}, Budget: Budget{Steps: 4, Batch: 8, Threads: 1},
		Examples: 200, MixPerCombo: 2, MixDepth: 1, Jobs: 2}
	res, err := Run(context.Background(), g, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results, want 2 (one composite, one mix)", len(res))
	}
	for _, r := range res {
		if r.Composite == nil && r.Mix == nil {
			t.Errorf("%s: no scores", r.Cell.Name())
		}
		if r.Composite != nil && r.Composite.Unseen.N != 560 {
			t.Errorf("%s: (4,3) scored on %d sequences, want 560", r.Cell.Name(), r.Composite.Unseen.N)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(out, "runs", res[0].Cell.Name(), "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "loss_positions = [8]") {
		t.Errorf("run config does not train on the answer only:\n%s", cfg)
	}
	var log bytes.Buffer
	again, err := Run(context.Background(), g, out, &log)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || log.Len() != 0 {
		t.Errorf("resumed grid: %d results, log %q; want the 2 recorded results and nothing trained", len(again), log.String())
	}
	var w bytes.Buffer
	if err := Render(g, again, out, &w); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"table.txt", "diagram.html", "condensation.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(w.String(), "condensation of anchor-g0.50-L1") {
		t.Errorf("render output lacks the condensation diagnostics:\n%s", w.String())
	}
}

// TestInterruptedCellResumes: a cancelled cell reports the interruption (not a missing model), and running
// it again resumes its directory to the end.
func TestInterruptedCellResumes(t *testing.T) {
	out := t.TempDir()
	s := Shape{Dim: 16, FFN: 32, HeadDim: 8, Norm: arch.NormLayer}
	b := Budget{Steps: 6, Batch: 8, Threads: 1}
	tok := filepath.Join(out, "train.tok")
	if err := WriteTokens(tok, CompositeTrain(100, 1)); err != nil {
		t.Fatal(err)
	}
	c := Cell{Task: TaskComposite, Gamma: 0.5, Layers: 1, LR: 1e-3, Seed: 1}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pool := kernel.NewPool(1)
	defer pool.Close()
	dir := filepath.Join(out, "run")
	if _, _, err := TrainCell(ctx, c, s, b, tok, dir, 8, pool, nil); !errors.Is(err, train.ErrInterrupted) {
		t.Fatalf("cancelled cell: error %v, want train.ErrInterrupted", err)
	}
	m, _, err := TrainCell(context.Background(), c, s, b, tok, dir, 8, pool, nil)
	if err != nil || m == nil {
		t.Fatalf("resumed cell: %v", err)
	}
}

// TestCellRefusesAnotherConfig: a cell's directory that holds a run of another config (another learning rate,
// or another budget) is refused, finished or not, rather than resumed or read back under the config it holds;
// the cell's own config reads its finished run back with its losses.
func TestCellRefusesAnotherConfig(t *testing.T) {
	out := t.TempDir()
	s := Shape{Dim: 16, FFN: 32, HeadDim: 8, Norm: arch.NormLayer}
	b := Budget{Steps: 4, Batch: 8, Threads: 1}
	tok := filepath.Join(out, "train.tok")
	if err := WriteTokens(tok, CompositeTrain(100, 1)); err != nil {
		t.Fatal(err)
	}
	c := Cell{Task: TaskComposite, Gamma: 0.5, Layers: 1, LR: 1e-3, Seed: 1}
	pool := kernel.NewPool(1)
	defer pool.Close()
	dir := filepath.Join(out, "run")
	_, first, err := TrainCell(context.Background(), c, s, b, tok, dir, 8, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := c
	other.LR = 2e-3
	longer := b
	longer.Steps = 8
	for name, run := range map[string]func() error{
		"learning rate": func() error {
			_, _, err := TrainCell(context.Background(), other, s, b, tok, dir, 8, pool, nil)
			return err
		},
		"budget": func() error {
			_, _, err := TrainCell(context.Background(), c, s, longer, tok, dir, 8, pool, nil)
			return err
		},
	} {
		if err := run(); !errors.Is(err, train.ErrConfigDiffers) {
			t.Errorf("another %s in the cell's directory: %v, want train.ErrConfigDiffers", name, err)
		}
	}
	m, again, err := TrainCell(context.Background(), c, s, b, tok, dir, 8, pool, nil)
	if err != nil || m == nil || !again.Resumed || again.Loss != first.Loss || math.IsNaN(again.Loss) {
		t.Errorf("the finished cell again: %+v, %v; want it read back with loss %v", again, err, first.Loss)
	}
}
