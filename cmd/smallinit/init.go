package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/progress"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/scale"
)

// initCmd is `smallinit init`: a freshly initialised model directory, written by the streaming scale.Init.
type initCmd struct {
	Preset     string   `default:"tiny" help:"Model preset: tiny, small, medium, tiny-moe, small-moe, or one of the study's scales 0.1b, 0.3b, 0.7b, 1.5b (V=32000, T=2048; see arch.ScalePresets)."`
	Set        []string `placeholder:"KEY=VALUE" help:"Override a key in the one override language (run-config keys in TOML syntax; a key without a section is a model key): e.g. attn_gate=elementwise, norm_eps=1e-12 or model.hidden_size=3072 (model keys only); repeatable."`
	Rule       string   `default:"gamma" enum:"${init_rules}" help:"Initialisation rule for every matrix: ${enum}."`
	Gamma      float64  `default:"1" help:"γ of the gamma rule: σ = d_in^(-γ)."`
	Std        float64  `default:"0.02" help:"σ of the fixed rule."`
	DepthScale bool     `help:"Divide the std of o_proj and down_proj by sqrt(2L)."`
	Seed       uint64   `default:"0" help:"Seed of the per-tensor random streams."`
	Out        string   `required:"" type:"path" help:"Model directory to write (replaced atomically if it holds only checkpoint files)."`
	DType      string   `name:"dtype" default:"f32" enum:"f32,bf16" help:"Stored dtype: ${enum} (bf16 rounds the float32 draws to nearest even)."`
	ShardSize  string   `default:"2GB" help:"Largest tensor payload of one safetensors shard (e.g. 2GB, 500MB, 1GiB); a model that fits is one model.safetensors."`
	JSON       bool     `name:"json" help:"Print the per-tensor std record as JSON."`
}

// configFromPreset is arch.FromPreset with the --set texts parsed in the one override language.
func configFromPreset(name string, sets []string) (arch.Config, arch.Preset, error) {
	over, err := override.ParseAll(sets)
	if err != nil {
		return arch.Config{}, arch.Preset{}, fmt.Errorf("--set: %w", err)
	}
	c, p, err := arch.FromPreset(name, over)
	if err != nil {
		return c, p, fmt.Errorf("--preset %s --set: %w", name, err)
	}
	return c, p, nil
}

// Run writes the model directory, with a progress bar on a terminal; Ctrl-C stops it and leaves nothing behind.
func (cmd *initCmd) Run() error {
	ctx, stop := interruptible()
	defer stop()
	return cmd.run(ctx, os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// initRecord is what --json prints.
type initRecord struct {
	Out     string                `json:"out"`
	Params  int64                 `json:"params"`
	DType   string                `json:"dtype"`
	Files   []string              `json:"files"`
	Bytes   int64                 `json:"bytes"`
	Seconds float64               `json:"seconds"`
	Tensors []gammainit.TensorStd `json:"tensors"`
}

// run is Run with its outputs given: the report goes to stdout, progress to log.
func (cmd *initCmd) run(ctx context.Context, stdout, log io.Writer, tty bool) error {
	c, _, err := configFromPreset(cmd.Preset, cmd.Set)
	if err != nil {
		return err
	}
	shard, err := scale.ParseSize(cmd.ShardSize)
	if err != nil {
		return fmt.Errorf("--shard-size: %w", err)
	}
	dtype := safetensors.F32
	if cmd.DType == "bf16" {
		dtype = safetensors.BF16
	}
	recipe := recipe.Init{Rule: cmd.Rule, Gamma: cmd.Gamma, Std: cmd.Std, DepthScale: cmd.DepthScale}
	p := newByteProgress(log, tty, "init "+cmd.Out)
	start := time.Now()
	res, err := scale.Init(cmd.Out, c, recipe, cmd.Seed, scale.InitOptions{
		DType: dtype, ShardSize: shard, Progress: p.Update, Context: ctx,
		Record: &gammainit.Record{Recipe: recipe, Seed: cmd.Seed},
	})
	p.Finish()
	if err != nil {
		return fmt.Errorf("--out %s: %w", cmd.Out, err)
	}
	secs := time.Since(start).Seconds()
	if cmd.JSON {
		return json.NewEncoder(stdout).Encode(initRecord{Out: cmd.Out, Params: c.NumParams(), DType: string(dtype),
			Files: res.Files, Bytes: res.Bytes, Seconds: secs, Tensors: res.Stds})
	}
	fmt.Fprintf(stdout, "wrote %s: %d parameters, %s\n", cmd.Out, c.NumParams(), c.Describe())
	fmt.Fprintf(stdout, "%s in %s, %.2f GB of tensors in %.1fs\n", dtype, strings.Join(res.Files, " "), float64(res.Bytes)/1e9, secs)
	for _, gap := range model.TransformersGaps(c) {
		fmt.Fprintf(log, "note: transformers would not load this model exactly: %s\n", gap)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tensor\td_in\tintended std\tdrawn std\tγ_eff\t")
	for _, s := range res.Stds {
		fmt.Fprintf(tw, "%s\t%d\t%.5f\t%.5f\t%.3f\t\n", s.Name, s.FanIn, s.Intended, s.Drawn, s.GammaEff)
	}
	return tw.Flush()
}

// newByteProgress shows the progress of a job counted in tensor bytes written or read: a bar on a terminal,
// else a line every 15 s, for jobs of 64 MiB and more.
func newByteProgress(log io.Writer, tty bool, desc string) *progress.Bytes {
	return &progress.Bytes{Log: log, TTY: tty, Desc: desc, Min: 64 << 20, Every: 15 * time.Second, Unit: 1e9, Name: "GB"}
}
