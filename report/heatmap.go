package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/train/rundir"
)

// DefaultHeatmapTensor is the matrix whose row cosines the heatmaps show unless told otherwise: layer 0's
// query projection.
const DefaultHeatmapTensor = "model.layers.0.self_attn.q_proj.weight"

// MaxHeatmapRows caps the rows of a heatmap (the first rows are used): the cosine matrix is rows² cells.
const MaxHeatmapRows = 256

// HeatmapPanel is the row-cosine matrix of one matrix at one step, rows reordered by clustering
// (diagrec.CosineMatrix) so that aligned rows form blocks.
type HeatmapPanel struct {
	Label string    // e.g. "step 0 (init)"
	Step  int       // training step
	Rows  int       // the matrix is Rows × Rows
	C     []float32 // cosines, row-major
}

// HeatmapSet is one run's heatmaps of one tensor, early to late.
type HeatmapSet struct {
	Run       *Run
	Tensor    string // the tensor's full name
	Shape     [2]int // its rows and columns
	UsedRows  int    // rows used (at most MaxHeatmapRows)
	Panels    []HeatmapPanel
	Problems  []string // panels that could not be made
	FromSteps string   // where each panel came from
}

// HeatmapSource is one run whose row-cosine heatmaps a report shows: the model directories of its panels,
// early to late, taken from the run's own files (init/, its checkpoints, final/), and the panels it lacks.
// HeatmapSources chooses them from gathered runs; analyze.Heatmaps loads the models and computes the cosines.
type HeatmapSource struct {
	Run      *Run
	Panels   []HeatmapPanelSource
	Problems []string // panels the run has no weights for
}

// HeatmapPanelSource is one panel to compute: the model directory, its step and label, and the word that
// prefixes its problems ("init", "checkpoint 20", "late").
type HeatmapPanelSource struct {
	Dir, Label, Problem string
	Step                int
}

// HeatmapSources chooses, for the first run with a final model or a checkpoint of each arm (at most maxArms
// arms; 0: DefaultMaxArms), the panels of its heatmaps: initialisation (the run's step-0 weights, init/), the
// first retained checkpoint before the end, and the final model (else the last checkpoint). Arms left out or
// without such a run are returned as problems. It reads nothing beyond the gathered runs.
func HeatmapSources(d *Data, maxArms int) ([]HeatmapSource, []string) {
	if maxArms == 0 {
		maxArms = DefaultMaxArms
	}
	var srcs []HeatmapSource
	var problems []string
	for i, a := range d.Arms {
		if len(srcs) == maxArms {
			problems = append(problems, fmt.Sprintf("%d more arm(s) not drawn (at most %d: --max-arms)", len(d.Arms)-i, maxArms))
			break
		}
		var run *Run
		for _, r := range a.Runs {
			if r.FinalDir != "" || len(r.Checkpoints) > 0 {
				run = r
				break
			}
		}
		if run == nil {
			problems = append(problems, fmt.Sprintf("%s: no run of the arm has a final model or a checkpoint", a.Label))
			continue
		}
		srcs = append(srcs, heatmapSource(run))
	}
	return srcs, problems
}

// heatmapSource is the panels of run r (which has a final model or a checkpoint).
func heatmapSource(r *Run) HeatmapSource {
	s := HeatmapSource{Run: r}
	// Step 0 comes from the run's own files (init/, or a step-0 checkpoint), never from redrawing the
	// initialisation with this build's code, which may differ from the one that trained the run.
	initDir := r.InitDir
	if initDir == "" && len(r.Checkpoints) > 0 && r.Checkpoints[0].Step == 0 {
		initDir = r.Checkpoints[0].Dir
	}
	if initDir != "" {
		s.Panels = append(s.Panels, HeatmapPanelSource{Dir: initDir, Label: "step 0 (init)", Problem: "init", Step: 0})
	} else {
		s.Problems = append(s.Problems, fmt.Sprintf("init: no step-0 weights in the run (%s/ is written by runs of builds since the experiment layer)", rundir.InitDir))
	}
	end := r.LastStep()
	if r.FinalDir == "" && len(r.Checkpoints) > 0 {
		end = r.Checkpoints[len(r.Checkpoints)-1].Step
	}
	if len(r.Checkpoints) > 0 && r.Checkpoints[0].Step > 0 && r.Checkpoints[0].Step < end {
		ck := r.Checkpoints[0]
		s.Panels = append(s.Panels, HeatmapPanelSource{Dir: ck.Dir, Label: fmt.Sprintf("step %d (first checkpoint)", ck.Step),
			Problem: fmt.Sprintf("checkpoint %d", ck.Step), Step: ck.Step})
	}
	late := HeatmapPanelSource{Dir: r.FinalDir, Label: fmt.Sprintf("step %d (final)", end), Problem: "late", Step: end}
	if late.Dir == "" {
		late.Dir, late.Label = r.Checkpoints[len(r.Checkpoints)-1].Dir, fmt.Sprintf("step %d (last checkpoint)", end)
	}
	s.Panels = append(s.Panels, late)
	return s
}

// ColorBarHTML is an inline-CSS colour bar for the heatmaps' scale.
const ColorBarHTML = `<div class="colorbar"><span>cos = −1</span><span class="grad"></span><span>+1</span></div>`

// figHeatmaps draws each set as a row of panels (init, early, final), the matrices as embedded PNG images
// (crisp: the page styles SVG images as pixelated).
func (d *Data) figHeatmaps(sets []HeatmapSet, tensor string) (*Figure, string) {
	if len(sets) == 0 {
		return nil, "needs a run with a final model or a checkpoint (heatmaps of " + tensor + ")"
	}
	f := &Figure{ID: FigHeatmaps, Title: "Row-cosine heatmaps of " + sets[0].Tensor + ", early and late", Extra: scales[ScaleCosine].bar}
	cols := 0
	for _, s := range sets {
		cols = max(cols, len(s.Panels))
	}
	ch := Chart{ID: f.ID, Title: f.Title, Width: float64(min(260*cols, 780)), RowHeight: 250}
	var runs []*Run
	var notes []string
	for _, s := range sets {
		var row []Panel
		for _, p := range s.Panels {
			title := s.Run.ID + "\n" + p.Label
			if s.Run.Arm != nil {
				title = s.Run.Arm.Label + "\n" + p.Label
			}
			v := make([]float64, len(p.C))
			for i, c := range p.C {
				v[i] = float64(c)
			}
			row = append(row, Panel{Title: title, Grid: &Grid{NRows: p.Rows, NCols: p.Rows, V: v, Scale: ScaleCosine}})
		}
		ch.Rows = append(ch.Rows, row)
		runs = append(runs, s.Run)
		note := fmt.Sprintf("%s is %d×%d", s.Tensor, s.Shape[0], s.Shape[1])
		if s.UsedRows < s.Shape[0] {
			note += fmt.Sprintf(" (first %d rows shown)", s.UsedRows)
		}
		if len(s.Problems) > 0 {
			note = s.Run.ID + ": " + note + " (missing: " + strings.Join(s.Problems, "; ") + ")"
		}
		if !slices.Contains(notes, note) {
			notes = append(notes, note)
		}
	}
	drawn, err := DrawChart(ch)
	if err != nil {
		return nil, err.Error()
	}
	f.SVG, f.Points, f.Series = drawn.SVG, drawn.Points, drawn.Series
	f.Caption = d.describe(runs) + " Cosine between every pair of rows of the matrix, rows reordered in each panel by hierarchical " +
		"clustering so that aligned rows show as red blocks; one run (the first seed) per arm. Early is step 0 as the run " +
		"wrote it at its start (init/) and the first retained checkpoint before the end, late is the final model. " + strings.Join(notes, "; ") + "."
	return f, ""
}
