package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/scale"
)

// analyzeCmd is `smallinit analyze`: weight metrics streamed matrix by matrix, activation metrics with --tokens.
type analyzeCmd struct {
	Model    string `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors or a sharded model.safetensors.index.json; F32, F16 or BF16)."`
	Tokens   string `type:"existingfile" help:"Token file for the activation metrics (probe windows) and the embedding's frequent tokens. Without it only the weight metrics are computed, streaming one matrix at a time."`
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

// Run analyses the model, with a progress bar on a terminal.
func (cmd *analyzeCmd) Run() error {
	return cmd.run(os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// run is Run with its outputs given: the report goes to stdout, progress to log.
//
// The weight metrics stream the checkpoint matrix by matrix (scale.WeightReport), so they work on models far
// larger than memory. The activation metrics need the whole model: only with --tokens is it loaded, with its
// context shortened to the probe length (max_position_embeddings = --probe-len) and a batch of --probes
// sequences, so that the activation buffers stay small.
func (cmd *analyzeCmd) run(out, log io.Writer, tty bool) error {
	if cmd.Probes < 1 || cmd.ProbeLen < 2 {
		return fmt.Errorf("--probes %d and --probe-len %d: need at least 1 probe of at least 2 tokens", cmd.Probes, cmd.ProbeLen)
	}
	stdout := &errWriter{w: out}
	if err := cmd.report(stdout, log, tty); err != nil {
		return err
	}
	if stdout.err != nil {
		return fmt.Errorf("write the analysis: %w", stdout.err)
	}
	return nil
}

func (cmd *analyzeCmd) report(stdout io.Writer, log io.Writer, tty bool) error {
	c, _, err := model.ReadConfig(cmd.Model)
	if err != nil {
		return err
	}
	var toks []int32
	if cmd.Tokens != "" {
		if toks, err = data.ReadTokens(cmd.Tokens, c.Vocab); err != nil {
			return err
		}
	}
	r, err := safetensors.OpenModel(cmd.Model)
	if err != nil {
		return err
	}
	p := newByteProgress(log, tty, "analyze weights")
	a := analysis{Model: cmd.Model}
	a.Weights, err = scale.WeightReport(r, c.Tensors(), diag.DefaultWeightOptions(), diag.FrequentTokens(toks, c.Vocab),
		scale.StreamOptions{Progress: p.update})
	p.finish()
	r.Close()
	if err != nil {
		return fmt.Errorf("analyze %s: %w", cmd.Model, err)
	}
	a.Classes = diag.SummariseClasses(a.Weights)
	if toks != nil {
		probeLen := min(cmd.ProbeLen, c.SeqLen)
		ac := c
		ac.SeqLen = probeLen
		pool := kernel.NewPool(0)
		defer pool.Close()
		m, err := model.New(ac, max(1, cmd.Probes), pool)
		if err != nil {
			return fmt.Errorf("analyze %s: %w", cmd.Model, err)
		}
		if err := m.LoadWeights(cmd.Model); err != nil {
			return err
		}
		st, err := diag.Activations(m, toks, cmd.Probes, probeLen)
		if err != nil {
			return fmt.Errorf("analyze %s on %s: %w", cmd.Model, cmd.Tokens, err)
		}
		a.Activations = &st
	}
	if cmd.JSON {
		return json.NewEncoder(stdout).Encode(a)
	}
	fmt.Fprintf(stdout, "model %s: %s\n\nweights (mean over each class)\n", cmd.Model, describe(c))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\ttensors\tstable rank\tmean |cos|\t/ random\t|cos|>0.9\t")
	for _, s := range a.Classes {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.4f\t%.2f\t%.4f\t\n", s.Class, s.Tensors, s.StableRank, s.MeanAbsCos, s.CosRatio, s.FracAbove)
	}
	tw.Flush()
	if cmd.Tensors {
		fmt.Fprintln(stdout)
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "tensor\tshape\tstable rank\teff. rank\tmean |cos|\t/ random\t")
		for _, w := range a.Weights {
			fmt.Fprintf(tw, "%s\t%dx%d\t%.2f\t%.2f\t%.4f\t%.2f\t\n", w.Name, w.Rows, w.Cols, w.StableRank, w.EffectiveRank, w.MeanAbsCos, w.CosRatio)
		}
		tw.Flush()
	}
	if st := a.Activations; st != nil {
		fmt.Fprintf(stdout, "\nactivations on %d probes of %d tokens (probe loss %.4f): sink rate %.1f%%, first-token mass %.4f\n",
			st.ProbeWindows, st.ProbeLen, st.ProbeLoss, st.SinkRate, st.FirstTokenMass)
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
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
