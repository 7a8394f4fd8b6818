package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/dirname"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// Files of a sweep directory DIR. Each run lives in DIR/runs/<id>/, a `smallinit train` run directory
// (config.toml, metrics.jsonl, checkpoints/, final/) plus the sweep's own files below.
const (
	PlanFile  = "plan.json" // the expansion: axes, runs, fingerprint
	GridFile  = "grid.toml" // a copy of the grid file as first run
	BaseCopy  = "base.toml" // a copy of the base run config file, when the grid names one
	RunsDir   = "runs"      // one directory per run
	ErrorFile = "error.txt" // in a run directory: why its last attempt failed (removed when it is retried)
	LogFile   = "train.log" // in a run directory: the training log lines of every attempt
)

const planVersion = 1

// MaxRuns bounds the runs of one sweep: a grid's expansion and plan.json as read back (a study's arms × seeds
// too, sweep.MaxRuns). Far above any sweep this toolkit can train (each run takes minutes), far below what
// would make status or collect run for minutes and hold gigabytes.
const MaxRuns = 10_000

// Plan is a grid's expansion, as written to DIR/plan.json: what `sweep status` and `sweep collect` read.
type Plan struct {
	Version     int      `json:"version"`
	Fingerprint string   `json:"fingerprint"`         // see fingerprint: equal plans run identical configs
	BaseFile    string   `json:"base_file,omitempty"` // the base run config file as first resolved, if any
	Base        []string `json:"base,omitempty"`      // the inline base as key=value overrides, if any
	Axes        []Axis   `json:"axes"`
	Runs        []Run    `json:"runs"`
}

// NDefinition says what the N column counts (arch.Config.NonEmbeddingParams).
const NDefinition = "N = non-embedding parameters: model.Config.NumParams() minus the token embedding (V·d) and minus the LM head (V·d) when it is untied; norm gains, attention, FFN, gate and router weights are counted, and for MoE models all experts (total, not active, parameters)"

// ErrNotSweep is wrapped by ReadPlan's error for a directory without a plan.
var ErrNotSweep = errors.New("is not a sweep directory")

// ReadPlan reads DIR/plan.json. Axis values come back as json.Number (numbers), string or bool.
func ReadPlan(dir string) (*Plan, error) {
	b, err := inputfile.ReadFile(filepath.Join(dir, PlanFile), inputfile.MaxTable) // a FIFO or device is refused, not read
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s %w: no %s", dir, ErrNotSweep, PlanFile)
		}
		return nil, err
	}
	return decodePlan(b, filepath.Join(dir, PlanFile))
}

func decodePlan(b []byte, name string) (*Plan, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var p Plan
	if err := d.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if p.Version != planVersion {
		return nil, fmt.Errorf("%s: version %d, this build reads version %d", name, p.Version, planVersion)
	}
	if len(p.Runs) > MaxRuns {
		return nil, fmt.Errorf("%s: %d runs, more than %d (no grid expands to so many)", name, len(p.Runs), MaxRuns)
	}
	for i, r := range p.Runs {
		// A run id becomes a directory under DIR/runs: one read from the file is held to the alphabet every
		// such name is, so no id can lead status, collect or run outside the sweep directory.
		if err := dirname.Check(fmt.Sprintf("runs[%d]: id", i), r.ID); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return &p, nil
}

// Select returns the runs an invocation with --index index works on: every run for −1, else the one run.
func (p *Plan) Select(index int) ([]Run, error) {
	switch {
	case index == -1:
		return p.Runs, nil
	case index < 0:
		return nil, fmt.Errorf("run index %d: want a run index ≥ 0 (or −1 for every run)", index)
	case index >= len(p.Runs):
		return nil, fmt.Errorf("run index %d: the sweep has %d runs (indices 0..%d)", index, len(p.Runs), len(p.Runs)-1)
	}
	return p.Runs[index : index+1], nil
}

// RunDir is the directory of run r in sweep directory dir.
func RunDir(dir string, r Run) string { return filepath.Join(dir, RunsDir, r.ID) }

// Prepare makes dir a sweep directory for plan p, or checks that it already is one for the same plan: a
// directory whose plan.json has another fingerprint is refused, so that two different grids never share
// run directories. plan.json and the grid copy are created atomically and only once (write to a temporary
// file, then hard-link it into place), so concurrent tasks of a job array agree on them.
func Prepare(dir string, g *Grid, p *Plan) error {
	if err := os.MkdirAll(filepath.Join(dir, RunsDir), 0o755); err != nil {
		return fmt.Errorf("sweep directory: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	existing, err := createOnce(filepath.Join(dir, PlanFile), append(b, '\n'))
	if err != nil {
		return err
	}
	if existing != nil {
		old, err := decodePlan(existing, filepath.Join(dir, PlanFile))
		if err != nil {
			return err
		}
		moved, err := movedPlan(dir, old, p)
		if err != nil {
			return err
		}
		if moved {
			// A study's sweep group whose directory was moved with its data: plan.json names the data where
			// they are now (each run's config.toml follows in train.StartOrResume).
			if err := atomicfile.Write(filepath.Join(dir, PlanFile), append(b, '\n')); err != nil {
				return err
			}
		} else if old.Fingerprint != p.Fingerprint {
			return fmt.Errorf("%s holds another sweep (plan fingerprint %s, this grid's %s: %s); use another directory",
				dir, old.Fingerprint, p.Fingerprint, planDiff(old, p))
		}
	}
	if _, err := createOnce(filepath.Join(dir, GridFile), g.Text); err != nil {
		return err
	}
	if g.BaseFile != "" {
		base, err := inputfile.ReadFile(g.BaseFile, inputfile.MaxConfig)
		if err != nil {
			return fmt.Errorf("base: %w", err)
		}
		if _, err := createOnce(filepath.Join(dir, BaseCopy), base); err != nil {
			return err
		}
	}
	return nil
}

// movedPlan reports whether old, the plan.json of sweep directory dir, is plan p but for the data paths of its
// inline base, which name the same files under a directory that was moved since (train.MovedPath, one old
// place for all of them): the sweep group of a study whose --out was renamed. Only a base whose every other
// key is equal, and runs whose fingerprint with the old data paths is old's, qualify.
func movedPlan(dir string, old, p *Plan) (bool, error) {
	if old.Fingerprint == p.Fingerprint || len(old.Base) != len(p.Base) || len(old.Runs) != len(p.Runs) || len(p.Base) == 0 {
		return false, nil
	}
	olds, err := override.ParseAll(old.Base)
	if err != nil {
		return false, nil // not a plan this build wrote: the fingerprint check refuses it
	}
	ns, err := override.ParseAll(p.Base)
	if err != nil {
		return false, err
	}
	was := map[string]string{}
	oldRoot := ""
	for i := range ns {
		if olds[i].Key != ns[i].Key {
			return false, nil
		}
		if override.Equal(olds[i].Value, ns[i].Value) {
			continue
		}
		ov, ok1 := olds[i].Value.(string)
		nv, ok2 := ns[i].Value.(string)
		if !ok1 || !ok2 || (&recipe.Config{}).DataPath(ns[i].Key) == nil {
			return false, nil
		}
		root, err := train.MovedPath(ov, nv, dir)
		if err != nil || len(was) > 0 && root != oldRoot {
			return false, nil
		}
		was[ns[i].Key], oldRoot = ov, root
	}
	if len(was) == 0 {
		return false, nil
	}
	runs := slices.Clone(p.Runs)
	for i := range runs {
		for k, v := range was {
			*runs[i].Config.DataPath(k) = v
		}
	}
	return fingerprint(runs) == old.Fingerprint, nil
}

// planDiff says in words where two plans differ.
func planDiff(old, p *Plan) string {
	if len(old.Runs) != len(p.Runs) {
		return fmt.Sprintf("%d runs there, %d here", len(old.Runs), len(p.Runs))
	}
	for i := range p.Runs {
		if old.Runs[i].ID != p.Runs[i].ID || !slices.Equal(old.Runs[i].Sets, p.Runs[i].Sets) {
			return fmt.Sprintf("run %d is %s there, %s here", i, old.Runs[i].ID, p.Runs[i].ID)
		}
	}
	return "same runs, but the base config or this build's defaults differ"
}

// createOnce creates path with contents b unless it exists; it returns the existing contents when it does.
func createOnce(path string, b []byte) (existing []byte, err error) {
	if old, err := inputfile.ReadFile(path, inputfile.MaxTable); err == nil {
		return old, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return inputfile.ReadFile(path, inputfile.MaxTable)
		}
		// A file system without hard links: fall back to a rename (last writer wins, same contents).
		if err := os.Rename(tmp, path); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil, nil
}

// WriteTable prints the plan: one line per run with its index, id, axis values, N, steps and tokens.
func (p *Plan) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "index\tid")
	for _, a := range p.Axes {
		fmt.Fprintf(tw, "\t%s", a.Key)
	}
	fmt.Fprintln(tw, "\tN\tsteps\ttokens")
	for _, r := range p.Runs {
		fmt.Fprintf(tw, "%d\t%s", r.Index, r.ID)
		for _, a := range p.Axes {
			fmt.Fprintf(tw, "\t%s", override.Format(r.Values[a.Key]))
		}
		fmt.Fprintf(tw, "\t%d\t%d\t%d\n", r.N, r.Steps, r.Tokens)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d runs (%s), fingerprint %s; N = non-embedding parameters\n", len(p.Runs), p.axesSummary(), p.Fingerprint)
	return err
}

func (p *Plan) axesSummary() string {
	s := ""
	for i, a := range p.Axes {
		if i > 0 {
			s += " × "
		}
		s += fmt.Sprintf("%d %s", len(a.Values), a.Key)
	}
	return s
}
