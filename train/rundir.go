package train

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

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

// Run is a run directory read back: the reader half of Start and Resume, and the only code outside the training
// loop that parses a run's files. Every other package reads config.toml, metrics.jsonl, diagnostics.jsonl,
// init.json and final/ through it, so a field added to one of those files is read in one place.
//
//	r, err := train.OpenRun(dir)
//	ms, err := r.Metrics()                      // every line of metrics.jsonl
//	ds, err := train.Diagnostics[diag.Record](r) // every line of diagnostics.jsonl, as diag's record
//	m, err := r.FinalModel(16, pool)            // the trained model
//
// Opening a run reads nothing; each method reads its file when called, so a caller pays only for what it uses.
// Errors name the file and, for a JSON-lines file, the line.
type Run struct {
	dir string
}

// OpenRun opens the run directory dir. It checks only that dir is a directory: a run that has not written a
// file yet is still a run, and each reader says which file is missing.
func OpenRun(dir string) (*Run, error) {
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
	return isRegular(filepath.Join(dir, ConfigFile)) || isRegular(filepath.Join(dir, MetricsFile))
}

// Checkpoints are the steps of the run's complete checkpoints, ascending; HasModel(CheckpointSub(step)) says
// whether one holds a whole model.
func (r *Run) Checkpoints() ([]int, error) { return listCheckpoints(r.dir) }

// CheckpointSub is the subdirectory of a run that holds the checkpoint of step.
func CheckpointSub(step int) string { return filepath.Join(checkpointsDir, checkpointName(step)) }

// Dir is the run directory.
func (r *Run) Dir() string { return r.dir }

// Path is the path of one of the run's files (ConfigFile, MetricsFile, ...).
func (r *Run) Path(name string) string { return filepath.Join(r.dir, name) }

// HasConfig says whether the run has its config.toml, that is whether it was ever started.
func (r *Run) HasConfig() bool { return isRegular(r.Path(ConfigFile)) }

// Config is the run's resolved config (config.toml).
func (r *Run) Config() (Config, error) { return Load(r.Path(ConfigFile), nil) }

// Done says whether the run finished: its final model is whole. Save writes final/config.json last, so its
// presence is the mark.
func (r *Run) Done() bool { return isRegular(filepath.Join(r.dir, FinalDir, model.ConfigFile)) }

// HasModel says whether the subdirectory sub of the run (FinalDir, InitDir or a checkpoint) holds a whole model.
func (r *Run) HasModel(sub string) bool {
	d := filepath.Join(r.dir, sub)
	return isRegular(filepath.Join(d, model.ConfigFile)) && isRegular(filepath.Join(d, model.WeightsFile))
}

// FinalModel loads the run's final model (final/) with room for batch sequences per forward pass, on pool.
// It is the one loader of a run's trained model.
func (r *Run) FinalModel(batch int, pool *kernel.Pool) (*model.Model, error) {
	m, _, err := model.Load(filepath.Join(r.dir, FinalDir), batch, pool)
	if err != nil {
		return nil, fmt.Errorf("run %s: final model: %w", r.dir, err)
	}
	return m, nil
}

// Init is the run's init record (init.json): the recipe, seed and optimizer it started with and the std of
// every matrix as drawn.
func (r *Run) Init() (gammainit.Record, error) {
	path := r.Path(InitFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return gammainit.Record{}, err
	}
	rec, err := gammainit.ParseRecord(b)
	if err != nil {
		return gammainit.Record{}, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
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
// record type of the Options.Diagnostics that wrote it, such as diag.Record; train does not depend on it). A
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

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
