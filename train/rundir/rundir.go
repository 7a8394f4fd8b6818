// Package rundir reads a run directory back: the reader half of train's Start and Resume, holding the types of
// the run's files (the recipe of config.toml, the lines of metrics.jsonl and diagnostics.jsonl) and its names.
// It stands below the model, so that a package that only reads runs (a report) builds without the model and
// its kernels; train.Run adds the two readers that need them (the final model, the init record).
package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/recipe"
)

// Files of a run directory besides checkpoints/.
const (
	ConfigFile  = "config.toml"   // the resolved run config
	MetricsFile = "metrics.jsonl" // one JSON object per logged step
	InitFile    = "init.json"     // per-tensor intended and drawn std at step 0
	DiagFile    = "diagnostics.jsonl"
	FinalDir    = "final" // the final model (engine format)
	// InitDir holds the step-0 weights (engine format), so that figures of the initialisation come from the
	// run's own files, never from redrawing it with a later build's init code.
	InitDir = "init"
)

// Metrics is one line of metrics.jsonl. Loss is the mean training loss over the steps since the previous line.
type Metrics struct {
	Step       int      `json:"step"`
	Tokens     int64    `json:"tokens"`
	Loss       float64  `json:"loss,omitempty"`
	LR         float64  `json:"lr,omitempty"`
	GradNorm   float64  `json:"grad_norm,omitempty"`
	ValLoss    *float64 `json:"val_loss,omitempty"`
	Skipped    int      `json:"skipped,omitempty"`
	TokensPerS float64  `json:"tokens_per_s,omitempty"` // wall-clock: the only field that differs between identical runs
}

// DiagLine is one line of diagnostics.jsonl: the step and the record train.Options.Diagnostics returned at it (T, such
// as *diagrec.Record), or the error that kept the record from being encoded (a non-finite metric of a diverging
// model). A run writes DiagLine[any]; a reader names the record's type. The fields are in the order of their
// keys, as the map the first writer encoded, so old and new lines are byte-identical.
type DiagLine[T any] struct {
	Diagnostics T      `json:"diagnostics,omitempty"`
	Error       string `json:"error,omitempty"`
	Step        int    `json:"step"`
}

// CheckpointsDir is the subdirectory of a run that holds its checkpoints, one StepName directory each.
const CheckpointsDir = "checkpoints"

// StepName is the name of the directory of the checkpoint (or snapshot) of step.
func StepName(step int) string { return fmt.Sprintf("step-%06d", step) }

// ListSteps returns the steps of the complete checkpoints in root (DIR/checkpoints or DIR/snapshots), ascending.
func ListSteps(root string) ([]int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var steps []int
	for _, e := range entries {
		var s int
		if e.IsDir() && strings.HasPrefix(e.Name(), "step-") {
			// Only names this package writes: "step-000012.broken" or "step-12" (a checkpoint moved aside by
			// hand) is not step 12.
			if _, err := fmt.Sscanf(e.Name(), "step-%d", &s); err == nil && e.Name() == StepName(s) {
				steps = append(steps, s)
			}
		}
	}
	sort.Ints(steps)
	return steps, nil
}

// Run is a run directory read back: the reader half of train's Start and Resume, and the only code outside the
// training loop that parses a run's files. Every other package reads config.toml, metrics.jsonl and
// diagnostics.jsonl through it (and init.json and final/ through train.Run, which embeds it), so a field added
// to one of those files is read in one place.
//
//	r, err := rundir.Open(dir)
//	ms, err := r.Metrics()                          // every line of metrics.jsonl
//	ds, err := rundir.Diagnostics[diagrec.Record](r) // every line of diagnostics.jsonl, as diag's record
//
// Opening a run reads nothing; each method reads its file when called, so a caller pays only for what it uses.
// Errors name the file and, for a JSON-lines file, the line.
type Run struct {
	dir string
}

// Open opens the run directory dir. It checks only that dir is a directory: a run that has not written a
// file yet is still a run, and each reader says which file is missing.
func Open(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run directory %s: is %s, not a directory", dir, inputfile.Kind(st.Mode()))
	}
	return &Run{dir: dir}, nil
}

// IsRunDir says whether dir looks like a run directory: it holds config.toml or metrics.jsonl (a run so old or
// broken that one of them is missing is still a run to list).
func IsRunDir(dir string) bool {
	return IsRegular(filepath.Join(dir, ConfigFile)) || IsRegular(filepath.Join(dir, MetricsFile))
}

// Checkpoints are the steps of the run's complete checkpoints, ascending; HasModel(CheckpointSub(step)) says
// whether one holds a whole model.
func (r *Run) Checkpoints() ([]int, error) { return ListSteps(filepath.Join(r.dir, CheckpointsDir)) }

// CheckpointSub is the subdirectory of a run that holds the checkpoint of step.
func CheckpointSub(step int) string { return filepath.Join(CheckpointsDir, StepName(step)) }

// Dir is the run directory.
func (r *Run) Dir() string { return r.dir }

// Path is the path of one of the run's files (ConfigFile, MetricsFile, ...).
func (r *Run) Path(name string) string { return filepath.Join(r.dir, name) }

// HasConfig says whether the run has its config.toml, that is whether it was ever started.
func (r *Run) HasConfig() bool { return IsRegular(r.Path(ConfigFile)) }

// Config is the run's resolved config (config.toml).
func (r *Run) Config() (recipe.Config, error) { return recipe.Load(r.Path(ConfigFile), nil) }

// Done says whether the run finished: its final model is whole. Save writes final/config.json last, so its
// presence is the mark.
func (r *Run) Done() bool { return Finished(r.dir) }

// Finished is Done for the run directory dir, opened or not (a run being started, whose lock asks it).
func Finished(dir string) bool { return IsRegular(filepath.Join(dir, FinalDir, arch.ConfigFile)) }

// HasModel says whether the subdirectory sub of the run (FinalDir, InitDir or a checkpoint) holds a whole model.
func (r *Run) HasModel(sub string) bool {
	d := filepath.Join(r.dir, sub)
	return IsRegular(filepath.Join(d, arch.ConfigFile)) && IsRegular(filepath.Join(d, arch.WeightsFile))
}

// Metrics reads every line of metrics.jsonl, in file order. A missing file is an error wrapping
// fs.ErrNotExist. A malformed line gives the lines that do parse and an error naming the file, the number of bad
// lines and the first; an unterminated malformed last line (a line being written, or cut by a crash) is left
// out without an error.
func (r *Run) Metrics() ([]Metrics, error) {
	var out []Metrics
	err := readLines(r.Path(MetricsFile), func(b []byte) error {
		var l struct {
			Metrics
			Step *int `json:"step"` // shadows Metrics.Step, to tell a line without a step from step 0
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if l.Step == nil {
			return errors.New(`no "step"`)
		}
		l.Metrics.Step = *l.Step
		out = append(out, l.Metrics)
		return nil
	})
	return out, err
}

// Diagnostics reads every line of r's diagnostics.jsonl, in file order, with its record decoded as T (the
// record type of the train.Options.Diagnostics that wrote it, such as diagrec.Record; train does not depend on it). A
// run without diagnostics (no file) gives none and no error; malformed lines are treated as by Metrics.
func Diagnostics[T any](r *Run) ([]DiagLine[T], error) {
	var out []DiagLine[T]
	err := readLines(r.Path(DiagFile), func(b []byte) error {
		var l struct {
			DiagLine[T]
			Step *int `json:"step"` // shadows DiagLine.Step, as in Metrics
		}
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if l.Step == nil {
			return errors.New(`no "step"`)
		}
		l.DiagLine.Step = *l.Step
		out = append(out, l.DiagLine)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return out, err
}

// Summary is what a run's metrics.jsonl says about it as a whole (Summarise).
type Summary struct {
	Step        int     // the last logged step (0 without lines)
	Tokens      int64   // training tokens consumed at the last line that records them
	TrainLoss   float64 // the last logged training loss (the mean over the last logging interval); NaN if none
	ValLoss     float64 // the last logged validation loss; NaN if none
	BestValLoss float64 // the smallest logged validation loss; NaN if none
	TokensPerS  float64 // the training throughput over the logged intervals (Summarise); NaN if none
}

// Summary summarises the run's metrics.jsonl (Summarise). Like Metrics, it returns what it could read along
// with an error for malformed lines.
func (r *Run) Summary() (Summary, error) {
	ms, err := r.Metrics()
	return Summarise(ms), err
}

// Summarise summarises metrics lines in file order. It is the one definition of a run's throughput: the
// tokens of the logged intervals over the time they took, Σ Δtokens / Σ (Δtokens / tokens_per_s), where each
// line's tokens_per_s was measured over its interval (evaluation and checkpoints between lines excluded). A
// line without a throughput (the step-0 validation line) or without new tokens adds nothing.
func Summarise(ms []Metrics) Summary {
	nan := math.NaN()
	s := Summary{TrainLoss: nan, ValLoss: nan, BestValLoss: nan, TokensPerS: nan}
	var prev int64
	var tokens, secs float64
	for _, m := range ms {
		s.Step = m.Step
		if m.Loss != 0 {
			s.TrainLoss = m.Loss
		}
		if v := m.ValLoss; v != nil {
			s.ValLoss = *v
			if math.IsNaN(s.BestValLoss) || *v < s.BestValLoss {
				s.BestValLoss = *v
			}
		}
		if d := float64(m.Tokens - prev); d > 0 && m.TokensPerS > 0 {
			tokens, secs = tokens+d, secs+d/m.TokensPerS
		}
		if m.Tokens > 0 {
			prev, s.Tokens = m.Tokens, m.Tokens
		}
	}
	if secs > 0 {
		s.TokensPerS = tokens / secs
	}
	return s
}

// maxLine caps one line of a run's JSON-lines files: a diagnostics line of a large model with per-tensor
// metrics is a few MB; a longer line is not one this package wrote.
const maxLine = 256 << 20

// readLines calls fn on every non-blank line of the JSON-lines file at path. A line fn refuses is counted and
// the rest are read; the error names the file, the count and the first bad line. A refused last line without
// its newline is a line being written (the writer ends every line with one) and is not an error.
func readLines(path string, fn func([]byte) error) error { return readLinesMax(path, maxLine, fn) }

// readLinesMax is readLines with lines capped at limit bytes.
func readLinesMax(path string, limit int, fn func([]byte) error) error {
	f, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return err // names the path; wraps fs.ErrNotExist for a missing file
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var bad []int
	var firstErr error
	for n := 1; ; n++ {
		line, err := readLine(br, limit)
		if err != nil && !errors.Is(err, errEOF) {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
		terminated := err == nil
		if len(bytes.TrimSpace(line)) == 0 {
			if !terminated {
				break
			}
			continue
		}
		if ferr := fn(line); ferr != nil {
			if !terminated {
				break
			}
			if firstErr == nil {
				firstErr = ferr
			}
			bad = append(bad, n)
		}
		if !terminated {
			break
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %d unreadable line(s), first at line %d: %w", path, len(bad), bad[0], firstErr)
	}
	return nil
}

// errEOF ends readLine's input: the line returned with it (possibly empty) had no newline.
var errEOF = errors.New("end of file")

// readLine reads one line without its newline. At the end of the input it returns the unterminated rest and
// errEOF; a line longer than limit is an error.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			return nil, fmt.Errorf("line longer than %s", inputfile.Bytes(int64(limit)))
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, errEOF
		default:
			return line, err
		}
	}
}

// IsRegular says whether p is a regular file (a run's marks: config.toml, final/config.json).
func IsRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
