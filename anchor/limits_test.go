package anchor

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

func tinyGrid() Grid {
	return Grid{Gammas: []float64{0.5}, Depths: []int{1}, LRs: []float64{1e-3}, Seeds: []uint64{1},
		Shape: Shape{Dim: 16, FFN: 32, HeadDim: 8, Norm: arch.NormLayer}, Budget: Budget{Steps: 4, Batch: 8, Threads: 1},
		Examples: 200, Jobs: 1}
}

// TestGridValidateBounds: every count of a grid out of its range is refused naming the setting, before
// anything is allocated.
func TestGridValidateBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Grid)
		want string
	}{
		{"negative examples", func(g *Grid) { g.Examples = -5 }, "--examples -5"},
		{"examples past the cap", func(g *Grid) { g.Examples = MaxExamples + 1 }, "--examples"},
		{"per-combo past the cap", func(g *Grid) { g.MixPerCombo = 1e9 }, "--per-combo"},
		{"threads past the pool", func(g *Grid) { g.Budget.Threads = 100000 }, "--threads 100000"},
		{"a million jobs", func(g *Grid) { g.Jobs = 1000000 }, "--jobs 1000000"},
		{"no steps", func(g *Grid) { g.Budget.Steps = 0 }, "--steps 0"},
		{"duplicate seeds", func(g *Grid) { g.Seeds = []uint64{1, 1} }, "seed 1 is listed twice"},
		{"seed past a TOML integer", func(g *Grid) { g.Seeds = []uint64{1 << 63} }, "--seeds: seed 9223372036854775808: at most"},
		{"too many cells", func(g *Grid) { g.Seeds = make([]uint64, MaxCells+1) }, "cells"},
		{"zero depth", func(g *Grid) { g.Depths = []int{0} }, "--depths 0"},
	} {
		g := tinyGrid()
		tc.edit(&g)
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := tinyGrid().Validate(); err != nil {
		t.Errorf("a good grid: %v", err)
	}
	for _, tc := range []struct {
		task       string
		ex, per    int
		wantErrSub string
	}{{TaskComposite, 0, 1, "--examples 0"}, {TaskComposite, 1e8, 1, "--examples 100000000"}, {TaskMix, 1, 1e9, "--per-combo"}} {
		if err := CheckSizes(tc.task, "--examples", tc.ex, "--per-combo", tc.per); err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
			t.Errorf("%s %d %d: %v, want %q", tc.task, tc.ex, tc.per, err, tc.wantErrSub)
		}
	}
}

// TestDiagramRefusesOtherSettings: rerunning a diagram directory with other settings is refused and leaves
// grid.json and results.jsonl as they were; other jobs or threads resume it; a results line lost after the
// cell finished (killed between final/ and the line) is derived again from the cell's files, with its loss.
func TestDiagramRefusesOtherSettings(t *testing.T) {
	out := t.TempDir()
	g := tinyGrid()
	first, err := Run(context.Background(), g, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	gridBefore, _ := os.ReadFile(filepath.Join(out, GridFile))
	resBefore, _ := os.ReadFile(filepath.Join(out, ResultsFile))
	for _, tc := range []struct {
		name string
		edit func(*Grid)
	}{
		{"steps", func(g *Grid) { g.Budget.Steps = 5 }},
		{"dim", func(g *Grid) { g.Shape.Dim = 24 }},
		{"gammas", func(g *Grid) { g.Gammas = []float64{0.5, 0.7} }},
		{"examples", func(g *Grid) { g.Examples = 300 }},
	} {
		h := tinyGrid()
		tc.edit(&h)
		if _, err := Run(context.Background(), h, out, nil); err == nil || !strings.Contains(err.Error(), "other settings") {
			t.Errorf("%s: %v, want a refusal naming other settings", tc.name, err)
		}
		gridAfter, _ := os.ReadFile(filepath.Join(out, GridFile))
		resAfter, _ := os.ReadFile(filepath.Join(out, ResultsFile))
		if !bytes.Equal(gridBefore, gridAfter) || !bytes.Equal(resBefore, resAfter) {
			t.Errorf("%s: a refused rerun rewrote grid.json or results.jsonl", tc.name)
		}
	}
	h := tinyGrid()
	h.Jobs, h.Budget.Threads = 2, 2
	if _, err := Run(context.Background(), h, out, nil); err != nil {
		t.Errorf("other jobs and threads: %v", err)
	}
	// The results line lost: derived again from the finished cell.
	if err := os.WriteFile(filepath.Join(out, ResultsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Run(context.Background(), g, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Loss != first[0].Loss || !(again[0].Loss > 0) || again[0].Composite == nil {
		t.Errorf("re-derived result %+v, want loss %v and scores", again, first[0].Loss)
	}
	read, err := ReadResults(filepath.Join(out, ResultsFile))
	if err != nil || len(read) != 1 || read[0].Loss != first[0].Loss {
		t.Errorf("results.jsonl after the re-derivation: %+v, %v", read, err)
	}
}

// TestReadersRefuseNonRegular: grid.json and results.jsonl that are FIFOs, devices or sparse giants are
// refused at once (no hang, no allocation), naming the file.
func TestReadersRefuseNonRegular(t *testing.T) {
	for _, name := range []string{GridFile, ResultsFile} {
		for _, kind := range []string{"fifo", "device", "sparse"} {
			dir := t.TempDir()
			p := filepath.Join(dir, name)
			switch kind {
			case "fifo":
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatalf("making the FIFO: %v", err)
				}
			case "device":
				if err := os.Symlink("/dev/zero", p); err != nil {
					t.Fatal(err)
				}
			case "sparse":
				f, err := os.Create(p)
				if err != nil {
					t.Fatal(err)
				}
				f.Truncate(3 << 30)
				f.Close()
			}
			var err error
			if name == GridFile {
				_, err = ReadGrid(dir)
			} else {
				_, err = ReadResults(p)
			}
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("%s as a %s: %v, want an error naming it", name, kind, err)
			}
		}
	}
}

// TestRenderRefusesForeignOrTruncatedModel: a γ-extreme cell whose final model is there but of another
// vocabulary (a directory of another diagram) or truncated is an error naming the cell and the fix, and no
// table.txt or diagram.html is written (a diagram without its condensation would look complete); a cell whose
// run is not there is left out with a line saying why, and the diagram is drawn.
func TestRenderRefusesForeignOrTruncatedModel(t *testing.T) {
	template := t.TempDir()
	g := tinyGrid()
	res, err := Run(context.Background(), g, template, nil)
	if err != nil {
		t.Fatal(err)
	}
	final := func(out string) string { return filepath.Join(out, "runs", res[0].Cell.Name(), "final") }
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, out string)
		want string // in the error; "": rendered, with a "condensation left out" line
	}{
		{"another vocabulary", func(t *testing.T, out string) {
			pool := kernel.NewPool(1)
			defer pool.Close()
			m, _, err := model.Load(final(out), 1, pool)
			if err != nil {
				t.Fatal(err)
			}
			small := m.Config
			small.Vocab = 8
			sm, err := model.New(small, 1, pool)
			if err != nil {
				t.Fatal(err)
			}
			if err := sm.Save(final(out), nil); err != nil {
				t.Fatal(err)
			}
		}, "vocab 8"},
		{"truncated weights", func(t *testing.T, out string) {
			p := filepath.Join(final(out), arch.WeightsFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(p, b[:len(b)/2], 0o644)
		}, arch.WeightsFile},
		{"run not there", func(t *testing.T, out string) { os.RemoveAll(filepath.Dir(final(out))) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "d")
			copyTreeForTest(t, template, out)
			os.Remove(filepath.Join(out, "table.txt"))
			os.Remove(filepath.Join(out, "diagram.html"))
			tc.edit(t, out)
			var w bytes.Buffer
			err := Render(g, res, out, &w)
			if tc.want == "" {
				if err != nil || !strings.Contains(w.String(), "condensation left out") {
					t.Errorf("render: %v; output does not name the left-out model:\n%s", err, w.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), res[0].Cell.Name()) {
				t.Errorf("render: %v, want an error naming the cell and %q", err, tc.want)
			}
			for _, f := range []string{"table.txt", "diagram.html"} {
				if _, err := os.Stat(filepath.Join(out, f)); err == nil {
					t.Errorf("a refused render wrote %s", f)
				}
			}
		})
	}
}

// copyTreeForTest copies the directory tree src to dst.
func copyTreeForTest(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
