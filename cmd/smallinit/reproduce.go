package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/smallinit/smallinit/reproduce"
)

type reproduceCmd struct {
	Budget time.Duration `default:"30m" help:"Wall-clock budget for all runs (e.g. 30m, 2h, 8h); sets the steps per run."`
	Out    string        `default:"smallinit-reproduce" type:"path" help:"Directory for data, sweeps, claims.json."`
	Seeds  int           `help:"Seeds per configuration (default 2, 3 from 4h)."`
	Steps  int           `help:"Steps per run (overrides --budget)."`
}

// Run runs the study's experiments scaled to this machine and prints, for each claim of SPEC's
// introduction, whether this run supports it, with the numbers.
func (cmd *reproduceCmd) Run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := reproduce.Run(ctx, reproduce.Options{Out: cmd.Out, Budget: cmd.Budget, Seeds: cmd.Seeds, Steps: cmd.Steps, Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Printf("reproduction in %s: %d runs of %d steps (%d tokens each), %d seeds per configuration\n\n", res.Out, res.Runs, res.Steps, res.Tokens, res.Seeds)
	for _, c := range res.Claims {
		fmt.Printf("claim %d: %s\n  %s: %s\n\n", c.N, c.Text, c.Verdict, c.Evidence)
	}
	// The probe arm trains on other data than the sweeps' runs of the same γ, which the report would group
	// with them (it ignores data paths when grouping runs into arms): its results are claim 1's second verdict.
	var dirs []string
	for _, exp := range reproduce.Experiments {
		if exp != reproduce.ExpProbes {
			dirs = append(dirs, filepath.Join(res.Out, exp))
		}
	}
	reportPath := filepath.Join(res.Out, "report.html")
	if err := writeReport(dirs, reportPath, "smallinit reproduce", res.CompareA, res.CompareB, 0); err != nil {
		return err
	}
	fmt.Printf("details in %s/claims.json, figures in %s\n", res.Out, reportPath)
	return nil
}
