package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/summary"
)

type demoCmd struct {
	Out       string  `default:"smallinit-demo" type:"path" help:"Directory for the prepared data, the four runs and summary.json."`
	Minutes   float64 `default:"5" help:"Training budget for all four runs together (the step count is set from a throughput probe)."`
	Steps     int     `help:"Steps per run (overrides --minutes)."`
	Seed      uint64  `default:"0" help:"Seed shared by the four runs (init, data order)."`
	Windows   int     `help:"Score at most this many validation windows per file in the final table (0: all)."`
	Probes    bool    `help:"Mix reasoning and memorisation probes into training (a quarter of the tokens; probes make) and report each run's exact match on held-out reasoning prompts and recalled memorisation prompts."`
	PrintPlan bool    `help:"Print the demo's plan (TOML; run an edited copy with smallinit study FILE) and exit."`

	probeTest int // test (and recall) probes per kind with --probes; 0: 100 (tests use fewer)
}

func (cmd *demoCmd) Run() error {
	ctx, stop := interruptible()
	defer stop()
	_, err := runDemo(ctx, cmd, os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
	return err
}

// runDemo runs the built-in demo plan: the embedded corpus (once), the four corners on the same data, budget
// and seed, the table, summary.json and report.html.
func runDemo(ctx context.Context, cmd *demoCmd, stdout, log io.Writer, progress bool) (*experiment.Outcome, error) {
	p, err := experiment.Builtin("demo")
	if err != nil {
		return nil, err
	}
	if cmd.PrintPlan {
		_, err := stdout.Write(p.Text)
		return nil, err
	}
	if cmd.Minutes <= 0 && cmd.Steps <= 0 {
		return nil, errors.New("--minutes or --steps must be positive")
	}
	out, err := experiment.Run(ctx, p, experiment.Options{Out: cmd.Out, Budget: time.Duration(cmd.Minutes * float64(time.Minute)),
		Steps: cmd.Steps, Seeds: []uint64{cmd.Seed}, Probes: cmd.Probes, ProbeTest: cmd.probeTest, Windows: cmd.Windows,
		Log: log, Progress: progress})
	if err != nil {
		return nil, err
	}
	summary.WriteTable(stdout, out.Rows, out.Tokens/int64(max(out.Steps, 1)))
	fmt.Fprintf(stdout, "\neverything is under %s (report%s.html, %s, data/, runs%s/)\n", cmd.Out, out.Suffix, summary.FileName(out.Suffix), out.Suffix)
	return out, nil
}
