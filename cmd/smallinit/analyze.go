package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

type analyzeCmd struct {
	Model    string `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors)."`
	Tokens   string `type:"existingfile" help:"Token file for the activation metrics (probe windows) and the embedding's frequent tokens."`
	Probes   int    `default:"16" help:"Probe windows for the activation metrics."`
	ProbeLen int    `default:"64" help:"Tokens per probe window (the sink rate is defined on 64-token probes)."`
	JSON     bool   `name:"json" help:"Print everything as one JSON object."`
	Tensors  bool   `help:"List every matrix, not only the per-class summary."`
}

// analysis is what analyze prints with --json (keys documented in the README).
type analysis struct {
	Model       string                `json:"model"`
	Weights     []diag.TensorWeights  `json:"weights"`
	Classes     []diag.ClassSummary   `json:"classes"`
	Activations *diag.ActivationStats `json:"activations,omitempty"`
}

func (cmd *analyzeCmd) Run() error {
	pool := kernel.NewPool(0)
	defer pool.Close()
	c, _, err := model.ReadConfig(cmd.Model)
	if err != nil {
		return err
	}
	batch := max(1, (cmd.Probes*cmd.ProbeLen+c.SeqLen-1)/c.SeqLen)
	m, _, err := model.Load(cmd.Model, batch, pool)
	if err != nil {
		return err
	}
	var toks []int32
	if cmd.Tokens != "" {
		if toks, err = data.ReadTokens(cmd.Tokens, c.Vocab); err != nil {
			return err
		}
	}
	a := analysis{Model: cmd.Model}
	a.Weights = diag.WeightReport(m, diag.DefaultWeightOptions(), diag.FrequentTokens(toks, c.Vocab))
	a.Classes = diag.SummariseClasses(a.Weights)
	if toks != nil {
		st, err := diag.Activations(m, toks, cmd.Probes, min(cmd.ProbeLen, c.SeqLen))
		if err != nil {
			return fmt.Errorf("analyze %s on %s: %w", cmd.Model, cmd.Tokens, err)
		}
		a.Activations = &st
	}
	if cmd.JSON {
		return json.NewEncoder(os.Stdout).Encode(a)
	}
	fmt.Printf("model %s: %s\n\nweights (mean over each class)\n", cmd.Model, describe(c))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\ttensors\tstable rank\tmean |cos|\t/ random\t|cos|>0.9\t")
	for _, s := range a.Classes {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.4f\t%.2f\t%.4f\t\n", s.Class, s.Tensors, s.StableRank, s.MeanAbsCos, s.CosRatio, s.FracAbove)
	}
	tw.Flush()
	if cmd.Tensors {
		fmt.Println()
		tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "tensor\tshape\tstable rank\teff. rank\tmean |cos|\t/ random\t")
		for _, w := range a.Weights {
			fmt.Fprintf(tw, "%s\t%dx%d\t%.2f\t%.2f\t%.4f\t%.2f\t\n", w.Name, w.Rows, w.Cols, w.StableRank, w.EffectiveRank, w.MeanAbsCos, w.CosRatio)
		}
		tw.Flush()
	}
	if st := a.Activations; st != nil {
		fmt.Printf("\nactivations on %d probes of %d tokens (probe loss %.4f): sink rate %.1f%%, first-token mass %.4f\n",
			st.ProbeWindows, st.ProbeLen, st.ProbeLoss, st.SinkRate, st.FirstTokenMass)
		tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "layer\thidden RMS\tattn norm r\tattn norm s\tffn norm r\tattn ratio\tffn ratio\tfirst-token mass\t")
		for _, l := range st.Layers {
			var mass float64
			for _, v := range l.FirstTokenMass {
				mass += v / float64(len(l.FirstTokenMass))
			}
			fmt.Fprintf(tw, "%d\t%.4g\t%.3f\t%.3f\t%.3f\t%.4g\t%.4g\t%.4f\t\n", l.Layer, l.HiddenRMS, l.AttnNorm.OutputRMS,
				l.AttnNorm.Saturation, l.FFNNorm.OutputRMS, l.AttnResidualRatio, l.FFNResidualRatio, mass)
		}
		fmt.Fprintf(tw, "final\t%.4g\t%.3f\t%.3f\t\t\t\t\t\n", st.FinalHiddenRMS, st.FinalNorm.OutputRMS, st.FinalNorm.Saturation)
		tw.Flush()
	}
	return nil
}
