package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/sweep"
)

// fitCmd is `smallinit fit TABLE`: docs/definitions.md §4's effective model size from a collected sweep table (package fit).
type fitCmd struct {
	Table     string   `arg:"" type:"existingfile" help:"Table of runs: sweep collect's .json or .csv (or any table with the size, budget and loss columns)."`
	Baseline  string   `placeholder:"KEY=VALUE[,...]" help:"Rows of the baseline arm, whose law L(N) = E + A·N^(−α) is fitted, e.g. 'init.gamma=0.5' (default: every finished row)."`
	Treated   string   `placeholder:"KEY=VALUE[,...]" help:"Rows of the treated arm, read through the baseline's law as N_eff = (A/(L − E))^(1/α) and gain N_eff/N − 1, e.g. 'init.gamma=1'."`
	SizeKey   string   `default:"N" help:"Column of the model size (sweep collect's N: non-embedding parameters)."`
	DataKey   string   `default:"tokens" help:"Column of the token budget D; where the baseline has several budgets per size, L(D) = E + B·D^(−β) is fitted too; a ladder at constant tokens per parameter gets L(N) along it. A column the table lacks (none) ignores the budgets."`
	LossKey   string   `default:"val_loss" help:"Column of the loss (val_loss, best_val_loss or train_loss)."`
	SeedKey   []string `default:"seed" help:"Columns that tell seeds apart (rows differing only in these are averaged)."`
	Bootstrap int      `default:"1000" help:"Bootstrap resamples of seeds within each size for the 95% intervals (0: none)."`
	Seed      uint64   `default:"0" help:"Seed of the bootstrap's resampling."`
	JSON      bool     `name:"json" help:"Print the report as JSON."`
}

// Run prints the fit report; refusals are returned as errors after it.
func (c *fitCmd) Run() error { return c.run(os.Stdout) }

func (c *fitCmd) run(w io.Writer) error {
	t, err := fit.ReadTable(c.Table)
	if err != nil {
		return err
	}
	if t.Axes == nil { // a CSV: the axes are the columns sweep collect does not add itself
		for _, col := range t.Columns {
			if !slices.Contains(sweep.LeadColumns, col) && !slices.Contains(sweep.MetricColumns, col) {
				t.Axes = append(t.Axes, col)
			}
		}
	}
	o := fit.Options{SizeKey: c.SizeKey, DataKey: c.DataKey, LossKey: c.LossKey, SeedKeys: c.SeedKey, Bootstrap: c.Bootstrap, Seed: c.Seed}
	if o.Baseline, err = fit.ParseSelector(c.Baseline); err != nil {
		return err
	}
	if c.Treated != "" {
		if o.Treated, err = fit.ParseSelector(c.Treated); err != nil {
			return err
		}
	}
	rep, err := fit.Analyze(t, o)
	if errors.Is(err, fit.ErrBudgetFollowsSize) {
		err = fmt.Errorf("%w; to fit L(N) across the budgets as they are, ignoring them, pass --data-key none", err)
	}
	if err != nil {
		err = fmt.Errorf("fit (--baseline %q, --treated %q): %w", c.Baseline, c.Treated, err)
	}
	if rep != nil {
		if c.JSON {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(rep); jerr != nil {
				return jerr
			}
		} else if werr := rep.WriteText(w); werr != nil {
			return werr
		}
	}
	return err
}
