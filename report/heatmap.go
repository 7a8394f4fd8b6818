package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/train"
)

// DefaultHeatmapTensor is the matrix whose row cosines the heatmaps show unless told otherwise: layer 0's
// query projection.
const DefaultHeatmapTensor = "model.layers.0.self_attn.q_proj.weight"

// MaxHeatmapRows caps the rows of a heatmap (the first rows are used): the cosine matrix is rows² cells.
const MaxHeatmapRows = 256

// HeatmapPanel is the row-cosine matrix of one matrix at one step, rows reordered by diag.CosineMatrix's
// clustering so that aligned rows form blocks.
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

// Heatmaps gets, for the first run with a final model of each arm (at most maxArms arms), the row-cosine
// matrix (diag.ModelRowCosines) of tensor (a full name, or a part of one: the first matching matrix is used)
// at initialisation (the run's step-0 weights, init/), at the first retained checkpoint before the end and in
// the final model. Problems are returned rather than stopping the report.
func Heatmaps(d *Data, tensor string, maxArms int) ([]HeatmapSet, []string) {
	if tensor == "" {
		tensor = DefaultHeatmapTensor
	}
	var sets []HeatmapSet
	var problems []string
	for i, a := range d.Arms {
		if len(sets) == maxArms {
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
		s, err := heatmapSet(run, tensor)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", run.ID, err))
			continue
		}
		sets = append(sets, s)
	}
	return sets, problems
}

// heatmapPanelDir is one panel to make: the model directory it comes from and what to call it.
type heatmapPanelDir struct {
	dir, label, problem string // problem prefixes the panel's error
	step                int
}

func heatmapSet(r *Run, tensor string) (HeatmapSet, error) {
	s := HeatmapSet{Run: r}
	var want []heatmapPanelDir
	// Step 0 comes from the run's own files (init/, or a step-0 checkpoint), never from redrawing the
	// initialisation with this build's code, which may differ from the one that trained the run.
	initDir := r.InitDir
	if initDir == "" && len(r.Checkpoints) > 0 && r.Checkpoints[0].Step == 0 {
		initDir = r.Checkpoints[0].Dir
	}
	if initDir != "" {
		want = append(want, heatmapPanelDir{dir: initDir, label: "step 0 (init)", problem: "init", step: 0})
	} else {
		s.Problems = append(s.Problems, fmt.Sprintf("init: no step-0 weights in the run (%s/ is written by runs of builds since the experiment layer)", train.InitDir))
	}
	end := r.LastStep()
	if r.FinalDir == "" && len(r.Checkpoints) > 0 {
		end = r.Checkpoints[len(r.Checkpoints)-1].Step
	}
	if len(r.Checkpoints) > 0 && r.Checkpoints[0].Step > 0 && r.Checkpoints[0].Step < end {
		ck := r.Checkpoints[0]
		want = append(want, heatmapPanelDir{dir: ck.Dir, label: fmt.Sprintf("step %d (first checkpoint)", ck.Step),
			problem: fmt.Sprintf("checkpoint %d", ck.Step), step: ck.Step})
	}
	late := heatmapPanelDir{dir: r.FinalDir, label: fmt.Sprintf("step %d (final)", end), problem: "late", step: end}
	if late.dir == "" {
		late.dir, late.label = r.Checkpoints[len(r.Checkpoints)-1].Dir, fmt.Sprintf("step %d (last checkpoint)", end)
	}
	want = append(want, late)
	dirs := make([]string, len(want))
	for i, w := range want {
		dirs[i] = w.dir
	}
	cos, errs := diag.ModelRowCosines(dirs, tensor, MaxHeatmapRows)
	for i, w := range want {
		if errs[i] != nil {
			s.Problems = append(s.Problems, w.problem+": "+errs[i].Error())
			continue
		}
		c := cos[i]
		s.Tensor, s.Shape, s.UsedRows = c.Tensor, c.Shape, c.Rows
		s.Panels = append(s.Panels, HeatmapPanel{Label: w.label, Step: w.step, Rows: c.Rows, C: c.C})
	}
	if len(s.Panels) == 0 {
		return s, fmt.Errorf("%s", strings.Join(s.Problems, "; "))
	}
	return s, nil
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
