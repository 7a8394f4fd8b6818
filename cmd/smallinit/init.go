package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

type initCmd struct {
	Preset string   `default:"tiny" help:"Model preset: tiny, small or medium."`
	Set    []string `placeholder:"KEY=VALUE" help:"Override a model config key (e.g. attn_gate=elementwise, norm_eps=1e-12); repeatable."`
	Rule   string   `default:"gamma" enum:"gamma,fixed,xavier,kaiming" help:"Initialisation rule for every matrix: ${enum}."`
	Gamma  float64  `default:"1" help:"γ of the gamma rule: σ = d_in^(-γ)."`
	Std    float64  `default:"0.02" help:"σ of the fixed rule."`
	Seed   uint64   `default:"0" help:"Seed of the per-tensor random streams."`
	Out    string   `required:"" type:"path" help:"Model directory to write."`
	JSON   bool     `name:"json" help:"Print the per-tensor std record as JSON."`
}

// configFromPreset returns a preset's config with --set overrides applied and validated.
func configFromPreset(name string, sets []string) (model.Config, model.Preset, error) {
	p, err := model.LookupPreset(name)
	if err != nil {
		return model.Config{}, p, err
	}
	c := p.Config
	ffnSet := false
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, p, fmt.Errorf("--set %q: want KEY=VALUE", kv)
		}
		k = strings.TrimSpace(k)
		if err := c.Set(k, strings.TrimSpace(v)); err != nil {
			return c, p, fmt.Errorf("--set: %w", err)
		}
		ffnSet = ffnSet || k == "intermediate_size"
	}
	if !ffnSet {
		c.FFN = model.DefaultFFN(c.Dim) // follow a changed hidden_size unless the width was given
	}
	if err := c.Validate(); err != nil {
		return c, p, err
	}
	return c, p, nil
}

func (cmd *initCmd) Run() error {
	c, _, err := configFromPreset(cmd.Preset, cmd.Set)
	if err != nil {
		return err
	}
	recipe := gammainit.Recipe{Rule: cmd.Rule, Gamma: cmd.Gamma, Std: cmd.Std}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, err := model.New(c, 1, pool)
	if err != nil {
		return err
	}
	stds, err := gammainit.Apply(m, recipe, cmd.Seed)
	if err != nil {
		return err
	}
	if err := m.Save(cmd.Out, map[string]any{"recipe": recipe, "seed": cmd.Seed}); err != nil {
		return err
	}
	if cmd.JSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"out": cmd.Out, "params": c.NumParams(), "tensors": stds})
	}
	fmt.Printf("wrote %s: %d parameters, %s\n", cmd.Out, c.NumParams(), describe(c))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tensor\td_in\tintended std\tdrawn std\tγ_eff\t")
	for _, s := range stds {
		fmt.Fprintf(tw, "%s\t%d\t%.5f\t%.5f\t%.3f\t\n", s.Name, s.FanIn, s.Intended, s.Drawn, s.GammaEff)
	}
	return tw.Flush()
}

// describe is a one-line summary of a config's shape and switches.
func describe(c model.Config) string {
	return fmt.Sprintf("V=%d d=%d L=%d H=%d d_ff=%d T=%d %s ε=%g gate=%s tied=%v",
		c.Vocab, c.Dim, c.Layers, c.Heads, c.FFN, c.SeqLen, c.Norm, c.NormEps, c.AttnGate, c.Tied)
}
