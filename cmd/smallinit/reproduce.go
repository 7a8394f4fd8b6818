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
	Budget    time.Duration `default:"30m" help:"Wall-clock budget for all runs (e.g. 30m, 2h, 8h); sets the steps per run."`
	Out       string        `default:"smallinit-reproduce" type:"path" help:"Directory for data, sweeps, claims.json."`
	Seeds     int           `help:"Seeds per configuration (default 2, 3 from 4h)."`
	Steps     int           `help:"Steps per run (overrides --budget)."`
	Jobs      int           `default:"1" help:"Runs of a sweep trained at once (they share the cores)."`
	PrintPlan bool          `help:"Print the reproduction's plan (TOML) and exit."`
}

// Run runs the study's experiments scaled to this machine and prints, for each claim of SPEC's
// introduction, whether this run supports it, with the numbers.
func (cmd *reproduceCmd) Run() error {
	if cmd.PrintPlan {
		p, err := reproduce.Plan()
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(p.Text)
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := reproduce.Run(ctx, reproduce.Options{Out: cmd.Out, Budget: cmd.Budget, Seeds: cmd.Seeds, Steps: cmd.Steps, Jobs: cmd.Jobs, Log: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Printf("reproduction in %s: %d runs of %d steps (%d tokens each), %d seeds per configuration\n\n", res.Out, res.Runs, res.Steps, res.Tokens, res.Seeds)
	for _, c := range res.Claims {
		fmt.Printf("claim %d: %s\n  %s: %s\n\n", c.N, c.Text, c.Verdict, c.Evidence)
	}
	fmt.Printf("details in %s/claims.json, figures in %s\n", res.Out, filepath.Join(res.Out, "report.html"))
	return nil
}
