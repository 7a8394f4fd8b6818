// Package analyze computes from models what other packages show. It is what `smallinit analyze` measures of a
// model directory: the weight metrics of every matrix and their class summaries (package diag's, with the
// checkpoint streamed by package scale, so any size works) and, on probe windows of a token file, the
// activation metrics. It also makes the model computations of a report (the row-cosine heatmaps and the
// comparison of two models), which package report, reading files only, takes as data: MakeReport. And it scores
// a finished run's final model for the studies: the summary's row of the run on the validation split and the
// probes (Score), and an LR trial's loss on the LR-selection slice (SelectionScore).
//
//	a, err := analyze.Measure("model-dir", analyze.Options{Tokens: "val.tok", Probes: 16, ProbeLen: 64})
//	a.WriteText(os.Stdout, false)
package analyze

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/scale"
)

// Analysis is a model's weight metrics (per matrix and per class) and, on probe tokens, its activation
// metrics: what `smallinit analyze` prints (--json: this struct; keys documented in the README).
type Analysis struct {
	Model       string                   `json:"model"`
	Config      arch.Config              `json:"-"`
	Weights     []diagrec.TensorWeights  `json:"weights"`
	Classes     []diagrec.ClassSummary   `json:"classes"`
	Activations *diagrec.ActivationStats `json:"activations,omitempty"`
}

// Options say what to measure besides the weights.
type Options struct {
	Tokens   string // token file for the activation metrics and the embedding's frequent tokens ("": weights only)
	Probes   int    // probe windows of the activation metrics
	ProbeLen int    // tokens per probe window, at most the model's context (0: DefaultProbeLen, or the context if shorter)
	Progress func(done, total int64)
}

// DefaultProbeLen is the probe windows' length when Options.ProbeLen is 0 (or the model's context, if shorter):
// the sink rate is defined on 64-token probes (docs/definitions.md §4).
const DefaultProbeLen = 64

// CheckProbeLen refuses a probe length (Options.ProbeLen; 0 is the default) outside [2, the context of c]: a
// probe window is one sequence of the model, so a longer one would be cut to the context in silence. The
// PyTorch side's activations refuse the same lengths.
func CheckProbeLen(probeLen int, c arch.Config) error {
	if probeLen != 0 && (probeLen < 2 || probeLen > c.SeqLen) {
		return fmt.Errorf("probe length %d: must be in [2, %d], the model's context (max_position_embeddings)", probeLen, c.SeqLen)
	}
	return nil
}

// Measure measures the model directory dir. The weight metrics stream the checkpoint matrix by matrix
// (scale.WeightReport), so they work on models far larger than memory. The activation metrics need the whole
// model: only with a token file is it loaded, with its context shortened to the probe length and a batch of
// Probes sequences, so that the activation buffers stay small.
func Measure(dir string, o Options) (*Analysis, error) {
	if o.Probes < 1 || o.ProbeLen != 0 && o.ProbeLen < 2 {
		return nil, fmt.Errorf("%d probes of %d tokens: need at least 1 probe of at least 2 tokens", o.Probes, o.ProbeLen)
	}
	c, _, err := model.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := CheckProbeLen(o.ProbeLen, c); err != nil {
		return nil, fmt.Errorf("analyze %s: %w", dir, err)
	}
	var toks []int32
	if o.Tokens != "" {
		if toks, err = data.ReadTokens(o.Tokens, c.Vocab); err != nil {
			return nil, err
		}
	}
	r, err := safetensors.OpenModel(dir)
	if err != nil {
		return nil, err
	}
	a := &Analysis{Model: dir, Config: c}
	a.Weights, err = scale.WeightReport(r, c.Tensors(), diag.DefaultWeightOptions(), diag.FrequentTokens(toks, c.Vocab),
		scale.StreamOptions{Progress: o.Progress})
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", dir, err)
	}
	a.Classes = diagrec.SummariseClasses(a.Weights)
	if toks != nil {
		probeLen := o.ProbeLen
		if probeLen == 0 {
			probeLen = min(DefaultProbeLen, c.SeqLen)
		}
		ac := c
		ac.SeqLen = probeLen
		pool := kernel.NewPool(0)
		defer pool.Close()
		m, err := model.New(ac, max(1, o.Probes), pool)
		if err != nil {
			return nil, fmt.Errorf("analyze %s: %w", dir, err)
		}
		if err := m.LoadWeights(dir); err != nil {
			return nil, err
		}
		st, err := diag.Activations(m, toks, o.Probes, probeLen)
		if err != nil {
			return nil, fmt.Errorf("analyze %s on %s: %w", dir, o.Tokens, err)
		}
		a.Activations = &st
	}
	return a, nil
}

// WriteText prints the analysis as tables: the classes, every matrix with tensors, and the activations.
func (a *Analysis) WriteText(w io.Writer, tensors bool) {
	fmt.Fprintf(w, "model %s: %s\n\nweights (mean over each class)\n", a.Model, a.Config.Describe())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\ttensors\tstable rank\tmean |cos|\t/ random\t|cos|>0.9\t")
	for _, s := range a.Classes {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.4f\t%.2f\t%.4f\t\n", s.Class, s.Tensors, s.Mean(diagrec.MetricStableRank), s.Mean(diagrec.MetricMeanAbsCos), s.Mean(diagrec.MetricCosRatio), s.Mean(diagrec.MetricFracAbove))
	}
	tw.Flush()
	if tensors {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "tensor\tshape\tstable rank\teff. rank\tmean |cos|\t/ random\t")
		for _, w := range a.Weights {
			fmt.Fprintf(tw, "%s\t%dx%d\t%.2f\t%.2f\t%.4f\t%.2f\t\n", w.Name, w.Rows, w.Cols, w.StableRank, w.EffectiveRank, w.MeanAbsCos, w.CosRatio)
		}
		tw.Flush()
	}
	if st := a.Activations; st != nil {
		fmt.Fprintf(w, "\nactivations on %d probes of %d tokens (probe loss %.4f): sink rate %.1f%%, first-token mass %.4f\n",
			st.ProbeWindows, st.ProbeLen, st.ProbeLoss, st.SinkRate, st.FirstTokenMass)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
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
}
