package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/smallinit/smallinit/anchor"
)

// anchorCmd is the reasoning-against-memorisation experiment (package anchor).
type anchorCmd struct {
	Make    anchorMakeCmd    `cmd:"" help:"Write an anchor task's training tokens and evaluation sets (same as probes make --task)."`
	Diagram anchorDiagramCmd `cmd:"" help:"Train the γ × depth phase diagram (composite task) and γ sweep (mix task), then write table.txt and diagram.html."`
	Render  anchorRenderCmd  `cmd:"" help:"Rewrite table.txt and diagram.html of a diagram directory from its results.jsonl (and its γ extremes' models)."`
}

type anchorMakeCmd struct {
	Task     string `default:"anchor" enum:"anchor,anchor-mix" help:"anchor: composite anchors of Zhang et al. 2024 (2405.05409) with (4,3) held out; anchor-mix: reasoning and memory anchors of Yao et al. 2025 (2502.04375)."`
	Out      string `required:"" type:"path" help:"Directory to write train.tok, the evaluation sets (JSON lines) and anchor.json."`
	Seed     uint64 `default:"1" help:"Seed of the data (and of the memory labels)."`
	Examples int    `default:"900000" help:"anchor: training sequences (the paper's 900,000)."`
	PerCombo int    `default:"1000" help:"anchor-mix: sequences per anchor combination (the paper's 1000, 200,000 in all)."`
}

func (cmd *anchorMakeCmd) Run() error {
	sets, err := anchor.MakeSets(cmd.Task, cmd.Seed, cmd.Examples, cmd.PerCombo)
	if err != nil {
		return err
	}
	counts, err := anchor.WriteSets(cmd.Out, cmd.Task, cmd.Seed, sets)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %v\n", cmd.Out, counts)
	return nil
}

type anchorDiagramCmd struct {
	Out      string    `required:"" type:"path" help:"Output directory: data/, runs/, results.jsonl, table.txt, diagram.html (rerun to resume)."`
	Gammas   []float64 `default:"0.3,0.5,0.7,0.9" help:"Initialization rates γ (σ = d_in^(−γ))."`
	Depths   []int     `default:"2,3" help:"Depths (layers) of the composite-task models."`
	LRs      []float64 `name:"lrs" default:"3e-4,1e-3" help:"Peak learning rates; each cell reports its best (2405.05409 §4: best of 9 rates in [1e-4, 3e-4])."`
	Seeds    []uint64  `default:"1,2" help:"Seeds (data, labels and weights)."`
	Dim      int       `default:"400" help:"Model width d (the papers': 400)."`
	FFN      int       `name:"ffn" default:"1200" help:"FFN width (the papers': 1200)."`
	HeadDim  int       `default:"200" help:"Width of the single head's q, k, v (the papers': 200)."`
	Norm     string    `default:"layernorm" enum:"layernorm,rmsnorm" help:"Norm (the papers': LayerNorm; smallinit's block is pre-norm)."`
	Steps    int       `default:"1500" help:"Optimizer steps per cell."`
	Batch    int       `default:"128" help:"Sequences per step (the papers': 2048)."`
	Examples int       `default:"200000" help:"Composite training sequences per seed (the paper's 900,000)."`
	PerCombo int       `default:"1000" help:"Mix sequences per anchor combination (the paper's 1000); 0 skips the mix task."`
	MixDepth int       `default:"2" help:"Depth of the mix-task model (the paper's 2)."`
	Jobs     int       `default:"2" help:"Cells trained at once."`
	Threads  int       `default:"1" help:"Threads per cell."`
}

// grid is the Grid the flags describe.
func (cmd *anchorDiagramCmd) grid() anchor.Grid {
	g := anchor.Grid{Gammas: cmd.Gammas, Depths: cmd.Depths, LRs: cmd.LRs, Seeds: cmd.Seeds,
		Shape:  anchor.Shape{Dim: cmd.Dim, FFN: cmd.FFN, HeadDim: cmd.HeadDim, Norm: cmd.Norm},
		Budget: anchor.Budget{Steps: cmd.Steps, Batch: cmd.Batch, Threads: cmd.Threads}, Examples: cmd.Examples,
		MixPerCombo: cmd.PerCombo, MixDepth: cmd.MixDepth, Jobs: cmd.Jobs}
	if cmd.PerCombo == 0 {
		g.MixDepth = 0
	}
	return g
}

func (cmd *anchorDiagramCmd) Run() error {
	g := cmd.grid()
	ctx, stop := interruptible()
	defer stop()
	t0 := time.Now()
	fmt.Printf("anchor diagram: %d cells of %d steps × %d sequences, %d at a time\n", len(g.Cells()), g.Budget.Steps, g.Budget.Batch, g.Jobs)
	res, err := anchor.Run(ctx, g, cmd.Out, os.Stdout)
	if err != nil {
		return err
	}
	fmt.Printf("trained in %s\n", time.Since(t0).Round(time.Second))
	return anchor.Render(g, res, cmd.Out, os.Stdout)
}

type anchorRenderCmd struct {
	Out string `arg:"" type:"existingdir" help:"A diagram directory (holds grid.json and results.jsonl)."`
}

func (cmd *anchorRenderCmd) Run() error {
	g, err := anchor.ReadGrid(cmd.Out)
	if err != nil {
		return err
	}
	res, err := anchor.ReadResults(filepath.Join(cmd.Out, anchor.ResultsFile))
	if err != nil {
		return err
	}
	return anchor.Render(g, res, cmd.Out, os.Stdout)
}
