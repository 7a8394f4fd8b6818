package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/coordcheck"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/override"
)

type coordcheckCmd struct {
	Gamma     float64  `help:"γ of the initialisation σ = d_in^(-γ) (default: the plan's, 1)."`
	Widths    string   `help:"Comma-separated widths d, 2 to ${coord_max_points} of them, each at most ${coord_max_width} (heads fixed, d_ff follows d; default: the plan's, 64,128,256,512)."`
	Steps     string   `help:"Comma-separated training steps at which to measure, 1 to ${coord_max_points} of them, each 0 to ${coord_max_steps} (default: the plan's, 0,1,10)."`
	Set       []string `placeholder:"KEY=VALUE" help:"Override a key in the one override language (run-config keys in TOML syntax; a key without a section is a model key): e.g. init.gamma=0.75 or norm_eps=1e-5, on the base recipe (tiny preset, T=64, ε=1e-12); repeatable."`
	LR        float64  `help:"AdamW learning rate of the few training steps (default: the plan's, 1e-3)."`
	Seed      uint64   `default:"0" help:"Seed of init and data."`
	JSON      bool     `name:"json" help:"Print the measurements and fitted exponents as JSON."`
	Plan      string   `default:"coordcheck" help:"A coordinate-check plan file, or the built-in one."`
	PrintPlan bool     `help:"Print the plan (TOML) and exit."`
}

func parseInts(s, flag string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--%s %q: want comma-separated non-negative integers", flag, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// Run runs the coordinate-check plan (package coordcheck) and prints its table or JSON.
func (cmd *coordcheckCmd) Run() error {
	p, err := loadPlan(cmd.Plan, os.Stderr)
	if err != nil {
		return fmt.Errorf("--plan: %w", err)
	}
	if cmd.PrintPlan {
		_, err := os.Stdout.Write(p.Text)
		return err
	}
	if p.Kind != experiment.KindCoordcheck {
		return fmt.Errorf("--plan %s: plan %s is a %s plan, not a coordinate check (run it with smallinit study)", cmd.Plan, p.Name, p.Kind)
	}
	o, err := cmd.options()
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	res, err := coordcheck.Run(ctx, p.Base, p.Coord, o)
	var we *coordcheck.WidthError
	if errors.As(err, &we) {
		return fmt.Errorf("--widths %d (with --set %v): %w", we.Width, cmd.Set, we.Err)
	} else if err != nil {
		return fmt.Errorf("coordcheck (--widths, --steps): %w", err)
	}
	if cmd.JSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	return coordcheck.WriteTable(os.Stdout, res)
}

// options are the flags as coordcheck.Options (Validate has checked --widths and --steps).
func (cmd *coordcheckCmd) options() (coordcheck.Options, error) {
	o := coordcheck.Options{Gamma: cmd.Gamma, LR: cmd.LR, Seed: cmd.Seed}
	var err error
	if o.Widths, err = parseInts(cmd.Widths, "widths"); err != nil {
		return o, err
	}
	if o.Steps, err = parseInts(cmd.Steps, "steps"); err != nil {
		return o, err
	}
	if o.Sets, err = override.ParseAll(cmd.Set); err != nil {
		return o, fmt.Errorf("--set: %w", err)
	}
	return o, nil
}
