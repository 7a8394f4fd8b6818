package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/reproduce"
)

// judgeCmd is `smallinit judge PLAN OUT...`: a plan's primaries judged on the runs that `study` trained into one
// or more output directories (reproduce.JudgeStudies), e.g. issue 44's verdict plans, whose width-128 runs are
// split between two directories.
type judgeCmd struct {
	Plan       string   `arg:"" help:"The plan whose [primaries] are judged (a plan file or a built-in plan: ${builtin_plans})."`
	Outs       []string `arg:"" type:"existingdir" name:"out" help:"Study output directories (each with summary.json) whose finished runs are read; they must hold one corpus (by the sha256 sums of their stats.json)."`
	Bootstrap  int      `default:"10000" help:"Bootstrap resamples of seeds for the effective sizes' 95% intervals."`
	Record     string   `type:"path" placeholder:"FILE" help:"Also write the verdict (inputs, claims, effective size, runs) as JSON to FILE (atomically)."`
	Partial    bool     `help:"Read a study that has not ended (no summary.json) from its finished runs, each scored here on the whole validation split as the study's summary would (cached in each run as validation_score.json): an interim readout."`
	HeldOut    []string `name:"held-out" type:"existingfile" placeholder:"ARCHIVE" help:"The npm archives the corpus was built from (docs/data.md), every one and no other; repeat the flag or separate them by commas: the primaries' γ arms are also scored on the corpus's held-out text, by source, each document whole (issue 44's family C; cached in each run as held_out_score.json)."`
	OODWindows int      `name:"ood-windows" default:"0" help:"Score the primaries' γ arms on the embedded out-of-distribution texts (corpus/ood), this many windows of the model's context per text (0: each text whole; −1: not scored). Scores are cached in each run directory (ood_score.json)."`
}

// Run prints the verdict and, with --record, writes it.
func (c *judgeCmd) Run() error { return c.run(os.Stdout) }

func (c *judgeCmd) run(w io.Writer) error {
	if c.Bootstrap < 0 || c.Bootstrap > 1_000_000 {
		return fmt.Errorf("--bootstrap %d: want 0 … 1000000", c.Bootstrap)
	}
	if c.OODWindows < -1 || c.OODWindows > 1_000_000 {
		return fmt.Errorf("--ood-windows %d: want −1 (not scored), 0 (each text whole) or a window count up to 1000000", c.OODWindows)
	}
	p, err := loadPlan(c.Plan, os.Stderr)
	if err != nil {
		return err
	}
	v, err := reproduce.JudgeStudies(p, c.Outs, reproduce.JudgeOptions{Bootstrap: c.Bootstrap, Partial: c.Partial, OODWindows: c.OODWindows, HeldOut: c.HeldOut, Log: os.Stderr})
	if err != nil {
		return err
	}
	if err := v.WriteText(w); err != nil {
		return err
	}
	return writeRecord(w, c.Record, v)
}

// writeRecord writes v as indented JSON to path (--record; "": nothing), atomically, and says so on w.
func writeRecord(w io.Writer, path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("--record %s: %w", path, err)
	}
	fmt.Fprintf(w, "\nwrote %s\n", path)
	return nil
}
