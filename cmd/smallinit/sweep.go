package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/smallinit/smallinit/sweep"
)

// sweepCmd is `smallinit sweep`: expand, run, watch and collect a grid of runs (package sweep).
type sweepCmd struct {
	Plan    sweepPlanCmd    `cmd:"" help:"Expand a grid file (base run config + [axes]) into numbered runs, validate every run's config and print them."`
	Run     sweepRunCmd     `cmd:"" help:"Run a grid's runs in --out (all with --jobs in parallel, or one with --index for job arrays); finished runs are skipped, interrupted ones resumed."`
	Status  sweepStatusCmd  `cmd:"" help:"Show each run of a sweep directory as done, running, failed or pending."`
	Collect sweepCollectCmd `cmd:"" help:"Write one table (CSV and JSON) of every run's axis values, N, tokens and final losses."`
}

// sweepPlanCmd is `smallinit sweep plan GRID`.
type sweepPlanCmd struct {
	Grid  string `arg:"" type:"existingfile" help:"Grid file (TOML): base = \"run.toml\" or a [base] table, and [axes] of dotted config keys to lists."`
	Count bool   `help:"Print only the number of runs (for sbatch --array=0-<count−1> or an Indexed Job's completions)."`
}

// Run prints the plan (or its run count).
func (c *sweepPlanCmd) Run() error { return c.run(os.Stdout) }

func (c *sweepPlanCmd) run(w io.Writer) error {
	g, err := sweep.ParseGrid(c.Grid)
	if err != nil {
		return err
	}
	p, err := g.Expand()
	if err != nil {
		return err
	}
	if c.Count {
		_, err := fmt.Fprintln(w, len(p.Runs))
		return err
	}
	return p.WriteTable(w)
}

// sweepRunCmd is `smallinit sweep run GRID --out DIR`.
type sweepRunCmd struct {
	Grid       string        `arg:"" type:"existingfile" help:"Grid file (TOML)."`
	Out        string        `required:"" type:"path" placeholder:"DIR" help:"Sweep directory: DIR/grid.toml, DIR/plan.json and one run directory per run in DIR/runs/<id>/. A directory holding another grid's sweep is refused."`
	Jobs       jobsFlag      `default:"auto" help:"Runs trained at once, each with train.threads = cores/jobs unless the grid sets it, or auto: a packing probe on the largest run's model measures one run on all cores against one run per core and keeps the faster (recorded in DIR/packing.json)."`
	Index      int           `default:"-1" placeholder:"I" help:"Run only run I (0-based), e.g. --index $SLURM_ARRAY_TASK_ID or --index $JOB_COMPLETION_INDEX; waits if another task holds its lock. -1: every run."`
	Cores      int           `help:"Cores shared by the jobs (default: all of this machine's)."`
	StaleAfter time.Duration `default:"5m" help:"A run lock whose heartbeat is older than this is taken to be abandoned (its holder was killed) and the run is taken over."`
}

// Run executes the sweep until done or SIGINT/SIGTERM (runs then stop at a checkpoint).
func (c *sweepRunCmd) Run() error {
	ctx, stop := interruptible()
	defer stop()
	return c.run(ctx, os.Stdout, os.Stderr)
}

func (c *sweepRunCmd) run(ctx context.Context, stdout, log io.Writer) error {
	g, err := sweep.ParseGrid(c.Grid)
	if err != nil {
		return err
	}
	reps, err := sweep.Execute(ctx, g, c.Out, sweep.Options{Jobs: int(c.Jobs), Index: c.Index, Cores: c.Cores, StaleAfter: c.StaleAfter, Log: log})
	if err != nil {
		err = fmt.Errorf("sweep run %s (--out %s, --index %d): %w", c.Grid, c.Out, c.Index, err)
	}
	sweep.WriteReports(stdout, reps)
	return err
}

// sweepStatusCmd is `smallinit sweep status DIR`.
type sweepStatusCmd struct {
	Dir        string        `arg:"" type:"existingdir" help:"Sweep directory."`
	StaleAfter time.Duration `default:"5m" help:"Lock heartbeat age after which a run counts as no longer running."`
}

// Run prints the runs' states.
func (c *sweepStatusCmd) Run() error { return c.run(os.Stdout) }

func (c *sweepStatusCmd) run(w io.Writer) error {
	_, sts, err := sweep.Status(c.Dir, c.StaleAfter)
	if err != nil {
		return notSweep(err, c.Dir)
	}
	return sweep.WriteStatus(w, sts)
}

// sweepCollectCmd is `smallinit sweep collect DIR`.
type sweepCollectCmd struct {
	Dir string `arg:"" type:"existingdir" help:"Sweep directory."`
	Out string `type:"path" placeholder:"FILE" help:"Write FILE.csv and FILE.json (an extension .csv or .json is dropped first); default DIR/results."`
}

// Run writes the table files and prints the table.
func (c *sweepCollectCmd) Run() error { return c.run(os.Stdout) }

func (c *sweepCollectCmd) run(w io.Writer) error {
	t, err := sweep.Collect(c.Dir)
	if err != nil {
		return notSweep(err, c.Dir)
	}
	stem, err := t.WriteFiles(cmp.Or(c.Out, filepath.Join(c.Dir, "results")))
	if err != nil {
		return err
	}
	if err := t.WriteText(w); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "wrote %s.csv and %s.json (%s)\n", stem, stem, sweep.NDefinition)
	return err
}

// notSweep adds how to make dir a sweep directory to an error saying it is not one.
func notSweep(err error, dir string) error {
	if errors.Is(err, sweep.ErrNotSweep) {
		return fmt.Errorf("%w; run `smallinit sweep run GRID --out %s` first", err, dir)
	}
	return err
}
