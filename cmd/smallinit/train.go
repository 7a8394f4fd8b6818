package main

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

type trainCmd struct {
	Config string   `type:"existingfile" help:"Run config (TOML); every key has a default, see the README."`
	Set    []string `placeholder:"KEY=VALUE" help:"Override a key in the one override language (run-config keys in TOML syntax; a key without a section is a model key): e.g. init.gamma=0.5, model.attn_gate=elementwise or norm_eps=1e-12; repeatable."`
	Out    string   `type:"path" help:"Run directory to create."`
	Resume string   `type:"existingdir" help:"Continue the run in this directory from its newest checkpoint."`
}

func (cmd *trainCmd) Run() error {
	ctx, stop := interruptible()
	defer stop()
	opts := train.Options{Log: os.Stderr, Progress: term.IsTerminal(int(os.Stderr.Fd())), Diagnostics: diag.Training}
	var res train.Result
	var err error
	switch {
	case cmd.Resume != "" && (cmd.Out != "" || cmd.Config != "" || len(cmd.Set) > 0):
		return errors.New("--resume takes no --config, --set or --out: the run's config.toml is used as written")
	case cmd.Resume != "":
		res, err = train.Resume(ctx, cmd.Resume, opts)
	case cmd.Out == "":
		return errors.New("--out DIR is required (or --resume DIR)")
	default:
		sets, lerr := override.ParseAll(cmd.Set)
		if lerr != nil {
			return fmt.Errorf("--set: %w", lerr)
		}
		c, lerr := train.LoadSets(cmd.Config, sets)
		if lerr != nil {
			return lerr
		}
		// train.precision = "auto" is measured (and recorded in the run directory) before the header names it.
		if c, lerr = train.ResolvePrecision(c, cmd.Out, os.Stderr); lerr != nil {
			return lerr
		}
		fmt.Fprintf(os.Stderr, "run %s: %s, %d steps of %d×%d tokens, init %s γ=%g, seed %d, precision %s\n", cmd.Out,
			c.Model.Config.Describe(), c.TotalSteps(), c.Train.BatchSize, c.Model.SeqLen, c.Init.Rule, c.Init.Gamma, c.Seed, cmp.Or(c.Train.Precision, "f32"))
		res, err = train.Start(ctx, c, cmd.Out, opts)
	}
	switch dir := cmp.Or(cmd.Resume, cmd.Out); {
	case errors.Is(err, train.ErrRunExists):
		return fmt.Errorf("--out: %w (smallinit train --resume %s continues it)", err, dir)
	case errors.Is(err, train.ErrInterrupted):
		return fmt.Errorf("%w; continue with: smallinit train --resume %s", err, dir)
	case err != nil:
		return err
	}
	fmt.Printf("done: %d steps, train loss %.4f", res.Steps, res.Loss)
	if !math.IsNaN(res.ValLoss) {
		fmt.Printf(", val loss %.4f (training-time estimate)", res.ValLoss)
	}
	fmt.Printf(", %.0f tokens/s; final model in %s/%s\n", res.TokensPerS, res.Dir, rundir.FinalDir)
	return nil
}
