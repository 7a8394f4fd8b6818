package anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/internal/workers"
	"github.com/smallinit/smallinit/kernel"
)

// Grid is a phase-diagram experiment: the composite task over Gammas × Depths × LRs × Seeds, and the mix task
// over Gammas × LRs × Seeds at depth MixDepth (0: no mix task).
type Grid struct {
	Gammas      []float64 `json:"gammas"`
	Depths      []int     `json:"depths"`
	LRs         []float64 `json:"lrs"`
	Seeds       []uint64  `json:"seeds"`
	Shape       Shape     `json:"shape"`
	Budget      Budget    `json:"budget"`
	Examples    int       `json:"examples"`      // composite training sequences per seed (2405.05409: 900,000)
	MixPerCombo int       `json:"mix_per_combo"` // mix sequences per anchor combination (2502.04375: 1000)
	MixDepth    int       `json:"mix_depth"`     // depth of the mix-task model (2502.04375: 2)
	Jobs        int       `json:"jobs"`          // cells trained at once
}

// CellResult is one trained cell and its scores (Composite for the composite task, Mix for the mix task).
type CellResult struct {
	Cell      Cell            `json:"cell"`
	Loss      float64         `json:"final_train_loss"`
	Seconds   float64         `json:"seconds"`
	Composite *CompositeScore `json:"composite,omitempty"`
	Mix       *MixScore       `json:"mix,omitempty"`
}

// ResultsFile is the JSON-lines file of cell results in a diagram's output directory.
const ResultsFile = "results.jsonl"

// Cells lists the grid's runs seed by seed (so that a diagram cut short has whole seeds); within a seed the
// composite cells of the first depth (γ, then rate), then the mix cells, then the composite cells of the
// other depths, so that a cut keeps both tasks.
func (g Grid) Cells() []Cell {
	var cs []Cell
	comp := func(s uint64, L int) {
		for _, gm := range g.Gammas {
			for _, lr := range g.LRs {
				cs = append(cs, Cell{Task: TaskComposite, Gamma: gm, Layers: L, LR: lr, Seed: s})
			}
		}
	}
	for _, s := range g.Seeds {
		if len(g.Depths) > 0 {
			comp(s, g.Depths[0])
		}
		if g.MixDepth > 0 {
			for _, gm := range g.Gammas {
				for _, lr := range g.LRs {
					cs = append(cs, Cell{Task: TaskMix, Gamma: gm, Layers: g.MixDepth, LR: lr, Seed: s})
				}
			}
		}
		for _, L := range g.Depths[min(1, len(g.Depths)):] {
			comp(s, L)
		}
	}
	return cs
}

// seedData is one seed's data sets, written once and shared by every cell of that seed.
type seedData struct {
	compTok, mixTok string
	compTrain       []Example
	labels          MemoryLabels
	mixTrain        []MixExample
	mixTest         []MixExample
}

func (g Grid) prepare(out string, seed uint64) (*seedData, error) {
	d := &seedData{compTrain: CompositeTrain(g.Examples, seed)}
	dir := filepath.Join(out, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d.compTok = tokPath(out, TaskComposite, seed)
	if err := WriteTokens(d.compTok, d.compTrain); err != nil {
		return nil, err
	}
	if g.MixDepth > 0 {
		d.labels = NewMemoryLabels(seed)
		d.mixTrain, d.mixTest = Mix(g.MixPerCombo, d.labels, seed)
		d.mixTok = tokPath(out, TaskMix, seed)
		if err := WriteTokens(d.mixTok, MixPlain(d.mixTrain)); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// tokPath is the training token file of a task and seed in the diagram directory out.
func tokPath(out, task string, seed uint64) string {
	return filepath.Join(out, "data", fmt.Sprintf("%s-s%d.tok", task, seed))
}

// GridFile is the file of a diagram directory that holds its Grid (written by Run, read by ReadGrid).
const GridFile = "grid.json"

// ReadGrid reads the Grid of the diagram directory dir (a regular file of at most inputfile.MaxConfig bytes).
func ReadGrid(dir string) (Grid, error) {
	var g Grid
	path := filepath.Join(dir, GridFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return g, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return g, fmt.Errorf("%s: %w", path, err)
	}
	if err := g.Validate(); err != nil {
		return g, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// sameSettings reports whether two grids train the same cells the same way: everything but Jobs and
// Budget.Threads, which change no number a cell computes.
func sameSettings(a, b Grid) bool {
	a.Jobs, b.Jobs = 0, 0
	a.Budget.Threads, b.Budget.Threads = 0, 0
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// claimGrid writes g as out's grid.json, or checks that the grid.json already there has g's settings: a
// diagram directory resumes only the diagram it was started with, so its cells never mix settings.
func claimGrid(g Grid, out string) error {
	path := filepath.Join(out, GridFile)
	if _, err := os.Lstat(path); err == nil {
		have, err := ReadGrid(out)
		if err != nil {
			return err
		}
		if !sameSettings(have, g) {
			return fmt.Errorf("%s: %s holds a diagram made with other settings (steps, widths, γ, rates, seeds, sizes: see %s); "+
				"use another --out, or rerun with that diagram's settings to resume it", out, path, GridFile)
		}
		return nil
	}
	if ents, err := os.ReadDir(filepath.Join(out, "runs")); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s: has cells in runs/ but no %s: not a diagram this command can resume", out, GridFile)
	}
	b, _ := json.MarshalIndent(g, "", "  ")
	return atomicfile.Write(path, append(b, '\n'))
}

// Run trains and scores every cell of g under out (one run directory per cell in out/runs, the results in
// out/results.jsonl, appended as cells finish), Jobs at a time, logging one line per cell to log. Cells
// already in results.jsonl are not run again, so an interrupted diagram resumes.
func Run(ctx context.Context, g Grid, out string, log io.Writer) ([]CellResult, error) {
	if g.Jobs < 1 {
		g.Jobs = 1
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("anchor diagram: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("anchor diagram: %w", err)
	}
	if err := claimGrid(g, out); err != nil {
		return nil, fmt.Errorf("anchor diagram: %w", err)
	}
	done, err := ReadResults(filepath.Join(out, ResultsFile))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	have := map[Cell]bool{}
	for _, r := range done {
		have[r.Cell] = true
	}
	seeds := map[uint64]*seedData{}
	for _, s := range g.Seeds {
		if seeds[s], err = g.prepare(out, s); err != nil {
			return nil, err
		}
	}
	f, err := inputfile.OpenAppend(filepath.Join(out, ResultsFile))
	if err != nil {
		return nil, fmt.Errorf("anchor diagram: %w", err)
	}
	defer f.Close()
	var cells []Cell
	for _, c := range g.Cells() {
		if !have[c] {
			cells = append(cells, c)
		}
	}
	pools := make([]*kernel.Pool, g.Jobs) // one per worker, for scoring its cells' models
	for w := range pools {
		pools[w] = kernel.NewPool(max(1, g.Budget.Threads))
		defer pools[w].Close()
	}
	// dispatch stops handing out cells after the first error; cells already training finish under ctx.
	dispatch, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var firstErr error
	var cellLog io.Writer // what a cell says while it waits, between the workers' result lines
	if log != nil {
		cellLog = &lockedWriter{mu: &mu, w: log}
	}
	results := done
	workers.EachOn(dispatch, len(cells), g.Jobs, func(w, i int) {
		if dispatch.Err() != nil {
			return // handed out as the diagram stopped: start no new cell
		}
		c := cells[i]
		r, err := runCell(ctx, g, c, seeds[c.Seed], out, pools[w], cellLog)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			stop()
			return
		}
		results = append(results, r)
		line, err := finitejson.Marshal(r) // a diverged cell's NaN loss is null
		if err == nil {
			_, err = f.Write(append(line, '\n'))
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("anchor diagram: %s: %w", ResultsFile, err)
			stop()
		}
		if log != nil {
			fmt.Fprintln(log, r.Line())
		}
	})
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return results, firstErr
}

// lockedWriter writes to w under mu, which the workers of Run hold while they write their result lines.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func runCell(ctx context.Context, g Grid, c Cell, d *seedData, out string, pool *kernel.Pool, log io.Writer) (CellResult, error) {
	t0 := time.Now()
	tok := d.compTok
	if c.Task == TaskMix {
		tok = d.mixTok
	}
	m, res, err := TrainCell(ctx, c, g.Shape, g.Budget, tok, filepath.Join(out, "runs", c.Name()), 256, pool, log)
	if err != nil {
		return CellResult{}, err
	}
	r := CellResult{Cell: c, Loss: res.Loss, Seconds: time.Since(t0).Seconds()}
	if c.Task == TaskMix {
		s, err := EvalMix(m, d.labels, c.Seed, d.mixTrain, d.mixTest)
		if err != nil {
			return r, fmt.Errorf("anchor cell %s: %w", c.Name(), err)
		}
		r.Mix = &s
	} else {
		s, err := EvalComposite(m, c.Seed, d.compTrain[:min(2000, len(d.compTrain))])
		if err != nil {
			return r, fmt.Errorf("anchor cell %s: %w", c.Name(), err)
		}
		r.Composite = &s
	}
	return r, nil
}

// Line is a one-line summary of a cell result.
func (r CellResult) Line() string {
	if s := r.Composite; s != nil {
		return fmt.Sprintf("%-34s loss %.3f  (4,3): inf %.2f sym %.2f other %.2f  seen test %.2f  (3,4) test %.2f  train %.2f  %.0fs",
			r.Cell.Name(), r.Loss, s.Unseen.Inferential, s.Unseen.Symmetric, s.Unseen.Other, s.SeenTest, s.Test34, s.TrainAcc, r.Seconds)
	}
	s := r.Mix
	return fmt.Sprintf("%-34s loss %.3f  memory %.2f  reasoning train %.2f test %.2f  %.0fs",
		r.Cell.Name(), r.Loss, s.Memory, s.RsnTrain, s.RsnTest, r.Seconds)
}

// UnmarshalJSON reads a results line, a null loss (a diverged cell) as NaN.
func (r *CellResult) UnmarshalJSON(b []byte) error {
	type plain CellResult
	return finitejson.Unmarshal(b, (*plain)(r))
}

// ReadResults reads a results.jsonl file (a regular file of at most inputfile.MaxTable bytes).
func ReadResults(path string) ([]CellResult, error) {
	b, err := inputfile.ReadFile(path, inputfile.MaxTable)
	if err != nil {
		return nil, err
	}
	var out []CellResult
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var r CellResult
		if err := dec.Decode(&r); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, nil
}
