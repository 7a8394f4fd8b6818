package eval

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// Options control RunTask.
type Options struct {
	Limit         int                     // stop reading after this many valid records, or windows of an lm task (0: all)
	Shots         int                     // few-shot examples before each record, when the task has a Fewshot file
	MaxNewTokens  int                     // most tokens generated per record (0: 256, the harness's default)
	StrictRecords bool                    // a malformed record is an error instead of being skipped and counted
	Chunk         int                     // records scored together (0: 64, generative kinds 4); larger chunks pack forwards better
	Progress      func(done, total int64) // records read so far (scored or skipped) of total (nil: no progress); see RunTask
	Malformed     func(*RecordError)      // called for every skipped record (nil: only counted and listed)
}

// RecordError is a malformed record: its file, its 1-based line and what is wrong with it.
type RecordError struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Err  string `json:"error"`
}

// Error formats the record error as FILE:LINE: problem, the form editors and compilers use.
func (e *RecordError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Err) }

// maxListed is how many malformed records a TaskResult lists (all are counted).
const maxListed = 100

// Example is one scored generative record, kept so that a report shows what the model wrote.
type Example struct {
	Line    int    `json:"line"`
	Output  string `json:"output"`
	Gold    string `json:"gold"`
	Correct bool   `json:"correct"`
}

// TaskResult is one task's summary.
type TaskResult struct {
	Task       string        `json:"task"`
	Kind       Kind          `json:"kind"`
	File       string        `json:"file"`
	Fewshot    string        `json:"fewshot,omitempty"`
	Shots      int           `json:"shots"`
	Docs       int           `json:"docs"`              // records scored (windows for lm tasks)
	Skipped    int           `json:"malformed_records"` // malformed records skipped (task and few-shot files)
	Malformed  []RecordError `json:"malformed,omitempty"`
	Truncation Truncation    `json:"truncation"`
	// Subjects is which subjects a per-subject kind scored (nil for other kinds).
	Subjects *SubjectCoverage `json:"subjects,omitempty"`
	Metrics  Metrics          `json:"metrics"`
	Examples []Example        `json:"examples,omitempty"` // the first few generative records
	Seconds  float64          `json:"seconds"`
}

// Truncation counts a task's requests that did not fit the model's context, where it happened: a scoring
// (a choice's or gold answer's log-likelihood) whose context lost its start, or whose continuation was longer
// than the context; a generation prompt that lost its start to leave room for the new tokens.
type Truncation struct {
	Scored          int `json:"scored"`
	ScoredTotal     int `json:"scored_total"`
	Generation      int `json:"generation"`
	GenerationTotal int `json:"generation_total"`
}

// Any reports whether any request was truncated.
func (t Truncation) Any() bool { return t.Scored > 0 || t.Generation > 0 }

// recordReader reads the non-blank lines of a record file with their line numbers, lines of any length.
type recordReader struct {
	br   *bufio.Reader
	file string
	line int
}

func newRecordReader(r io.Reader, file string) *recordReader {
	return &recordReader{br: bufio.NewReaderSize(r, 1<<16), file: file}
}

// next returns the next non-blank line (without its line ending) and its number, or io.EOF.
func (rr *recordReader) next() ([]byte, int, error) {
	for {
		b, err := rr.br.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			if err != io.EOF {
				err = fmt.Errorf("read %s after line %d: %w", rr.file, rr.line, err)
			}
			return nil, 0, err
		}
		rr.line++
		if err != nil && err != io.EOF {
			return nil, 0, fmt.Errorf("read %s line %d: %w", rr.file, rr.line, err)
		}
		b = bytes.TrimRight(b, "\r\n")
		if len(bytes.TrimSpace(b)) > 0 {
			return b, rr.line, nil
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader and counts the bytes.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// RunTask streams spec.File, scores its records with be in chunks and returns the task's metrics. Malformed
// records are skipped, counted and reported through o.Malformed (or returned as a *RecordError with
// o.StrictRecords); errors name the file and line. lm tasks need a backend that implements TextScorer.
//
// o.Progress is called with 0 before the first record and after each chunk with the records read so far
// (scored or skipped) of total: o.Limit when set (reading stops there, so the rest of the file is never read),
// else the file's record count, from a first pass that only splits records. For lm tasks both are bytes of
// text.
func RunTask(ctx context.Context, spec TaskSpec, be Backend, o Options) (*TaskResult, error) {
	t0 := time.Now()
	if o.MaxNewTokens <= 0 {
		o.MaxNewTokens = 256
	}
	if o.Chunk <= 0 {
		o.Chunk = 64
		if ks, ok := kindSpecs[spec.Kind]; ok && ks.grader.generative() {
			// Generation runs one record at a time, so a small chunk loses nothing and lets progress move.
			o.Chunk = 4
		}
	}
	res := &TaskResult{Task: spec.Name, Kind: spec.Kind, File: spec.File, Metrics: Metrics{}}
	if spec.Kind == KindLM {
		f, err := inputfile.Open(spec.File, inputfile.NoLimit)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", spec.Name, err)
		}
		defer f.Close()
		var total int64
		if st, err := f.Stat(); err == nil {
			total = st.Size()
		}
		cr := &countingReader{r: f}
		progress := func() {
			if o.Progress != nil {
				o.Progress(cr.n, total)
			}
		}
		ts, ok := be.(TextScorer)
		if !ok {
			return nil, fmt.Errorf("task %s: this backend cannot score plain text", spec.Name)
		}
		s, err := ts.ScoreText(ctx, cr, o.Limit, func(int64) { progress() })
		if err != nil {
			return nil, fmt.Errorf("task %s: %s: %w", spec.Name, spec.File, err)
		}
		res.Docs, res.Metrics = s.Windows, s.metrics()
		res.Seconds = time.Since(t0).Seconds()
		return res, nil
	}
	ks, ok := kindSpecs[spec.Kind]
	if !ok {
		return nil, fmt.Errorf("task %s: unknown kind %q", spec.Name, spec.Kind)
	}
	r := &runner{spec: spec, ks: ks, be: be, o: o, res: res, agg: newAggregate(spec.Kind)}
	if spec.Fewshot != "" && o.Shots > 0 {
		if err := r.readShots(); err != nil {
			return nil, err
		}
		res.Fewshot, res.Shots = spec.Fewshot, o.Shots
	}
	var total int64
	if o.Progress != nil {
		var err error
		if total, err = r.progressTotal(); err != nil {
			return nil, err
		}
	}
	src, err := openRecords(spec.File, ks, o.Limit > 0)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", spec.Name, err)
	}
	defer src.Close()
	read := func() int64 { return int64(res.Docs + res.Skipped - r.shotSkipped) } // records of spec.File read
	progress := func() {
		if o.Progress != nil {
			o.Progress(read(), max(total, read()))
		}
	}
	progress()
	var chunk []doc
	// Reading stops as soon as Limit valid records are in hand, so the rest of the file is never read.
	for o.Limit <= 0 || res.Docs+len(chunk) < o.Limit {
		d, ok, err := r.nextDoc(src)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		chunk = append(chunk, d)
		if len(chunk) == o.Chunk {
			if err := r.score(chunk); err != nil {
				return nil, err
			}
			chunk = chunk[:0]
			progress()
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("task %s: %w", spec.Name, err)
			}
		}
	}
	if err := r.score(chunk); err != nil {
		return nil, err
	}
	if o.Progress != nil {
		o.Progress(read(), read()) // the end, also where malformed records or a short file made total an overestimate
	}
	if res.Docs == 0 {
		first := ""
		if len(res.Malformed) > 0 {
			first = "; the first: " + res.Malformed[0].Error()
		}
		return nil, fmt.Errorf("task %s: %s has no valid records (%d malformed%s)", spec.Name, spec.File, res.Skipped, first)
	}
	res.Metrics = r.agg.metrics()
	// Missing subjects are listed when a directory (or a .jsonl of all subjects) was read to its end: one CSV
	// file is one subject by choice.
	whole := o.Limit <= 0 || res.Docs < o.Limit
	if st, err := os.Stat(spec.File); err == nil && !st.IsDir() && strings.EqualFold(filepath.Ext(spec.File), ".csv") {
		whole = false
	}
	res.Subjects = r.agg.coverage(ks.subjects, whole)
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// runner holds one task's state.
type runner struct {
	spec  TaskSpec
	ks    kindSpec
	be    Backend
	o     Options
	res   *TaskResult
	agg   *aggregate
	shots map[string][]doc // few-shot examples by subject ("" for kinds without subjects)
	// shotSkipped counts the malformed records of the few-shot file, which res.Skipped includes.
	shotSkipped int
}

// progressTotal is the number of records the task will read: o.Limit when set, else the records of its file
// (valid or not), counted in a pass that splits them without parsing.
func (r *runner) progressTotal() (int64, error) {
	if r.o.Limit > 0 {
		return int64(r.o.Limit), nil
	}
	src, err := openRecords(r.spec.File, r.ks, false)
	if err != nil {
		return 0, fmt.Errorf("task %s: %w", r.spec.Name, err)
	}
	defer src.Close()
	var n int64
	for {
		_, err := src.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("task %s: %w", r.spec.Name, err)
		}
		n++
	}
}

// nextDoc returns the next valid record of src (ok false at the end), counting and reporting the malformed
// ones it skips.
func (r *runner) nextDoc(src recordSource) (doc, bool, error) {
	for {
		rec, err := src.next()
		if err == io.EOF {
			return doc{}, false, nil
		}
		if err != nil {
			return doc{}, false, fmt.Errorf("task %s: %w", r.spec.Name, err)
		}
		var d doc
		perr := rec.err
		if perr == nil {
			if r.ks.parseRow != nil {
				row := rec.row
				if rec.text != nil { // a .jsonl file of rows
					row, perr = jsonRow(rec.text, subjectOf(rec.file, r.ks.subjects))
				}
				if perr == nil {
					d, perr = r.ks.parseRow(row)
					d.subject = row.subject
				}
			} else {
				d, perr = r.ks.parse(rec.text)
				if perr != nil {
					if h := schemaHint(r.spec.Kind, rec.text); h != "" {
						perr = fmt.Errorf("%w (%s)", perr, h)
					}
				}
			}
		}
		if perr == nil {
			perr = d.check()
		}
		if perr != nil {
			if err := r.malformed(&RecordError{File: rec.file, Line: rec.line, Err: perr.Error()}); err != nil {
				return doc{}, false, err
			}
			continue
		}
		d.line = rec.line
		return d, true, nil
	}
}

func (r *runner) malformed(e *RecordError) error {
	if r.o.StrictRecords {
		return fmt.Errorf("task %s: malformed record (strict records): %w", r.spec.Name, e)
	}
	r.res.Skipped++
	if len(r.res.Malformed) < maxListed {
		r.res.Malformed = append(r.res.Malformed, *e)
	}
	if r.o.Malformed != nil {
		r.o.Malformed(e)
	}
	return nil
}

// readShots reads the first Shots+1 valid records of the few-shot file (one spare, for when a record is
// its own few-shot example); for per-subject kinds, the first Shots+1 of each subject (the harness's first_n
// sampler on the subject's dev split).
func (r *runner) readShots() error {
	src, err := openRecords(r.spec.Fewshot, r.ks, false)
	if err != nil {
		return fmt.Errorf("task %s: few-shot file: %w", r.spec.Name, err)
	}
	defer src.Close()
	r.shots = map[string][]doc{}
	for r.ks.parseRow != nil || len(r.shots[""]) < r.o.Shots+1 {
		d, ok, err := r.nextDoc(src)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if len(r.shots[d.subject]) < r.o.Shots+1 {
			r.shots[d.subject] = append(r.shots[d.subject], d)
		}
	}
	r.shotSkipped = r.res.Skipped
	if n := len(r.shots[""]); r.ks.parseRow == nil && n < r.o.Shots {
		return fmt.Errorf("task %s: few-shot file %s has %d valid records, %d shots wanted", r.spec.Name, r.spec.Fewshot, n, r.o.Shots)
	}
	return nil
}

// prefix is the context before d's own: the kind's description of d's subject, then the first Shots examples
// (of d's subject) other than d itself, each followed by the kind's separator (lm-evaluation-harness's
// description and fewshot_delimiter).
func (r *runner) prefix(d *doc) (string, error) {
	var b strings.Builder
	if r.ks.description != nil {
		b.WriteString(r.ks.description(d.subject))
	}
	if r.shots == nil {
		return b.String(), nil
	}
	shots := r.shots[d.subject]
	if len(shots) < r.o.Shots {
		where := "few-shot file " + r.spec.Fewshot
		if st, err := os.Stat(r.spec.Fewshot); err == nil && st.IsDir() && r.ks.shotFile != nil {
			f := filepath.Join(r.spec.Fewshot, r.ks.shotFile(d.subject))
			if len(shots) == 0 {
				return "", fmt.Errorf("task %s: %s line %d: no few-shot file %s for subject %q (%d shots wanted)",
					r.spec.Name, r.spec.File, d.line, f, d.subject, r.o.Shots)
			}
			where = "few-shot file " + f
		}
		return "", fmt.Errorf("task %s: %s line %d: %s has %d valid records of subject %q, %d shots wanted",
			r.spec.Name, r.spec.File, d.line, where, len(shots), d.subject, r.o.Shots)
	}
	k := 0
	for i := range shots {
		if k == r.o.Shots {
			break
		}
		if shots[i].shot == d.shot {
			continue
		}
		b.WriteString(shots[i].shot)
		b.WriteString(r.ks.shotSep)
		k++
	}
	return b.String(), nil
}

// score runs one chunk of records through the backend and adds them to the aggregate.
func (r *runner) score(chunk []doc) error {
	if len(chunk) == 0 {
		return nil
	}
	var reqs []Request
	var gens []GenRequest
	for i := range chunk {
		d := &chunk[i]
		p, err := r.prefix(d)
		if err != nil {
			return err
		}
		if r.ks.grader.generative() {
			reqs = append(reqs, Request{Context: p + d.prompt, Continuation: d.target})
			budget := r.o.MaxNewTokens
			if r.ks.budget != nil {
				budget = min(budget, r.ks.budget(d))
			}
			gens = append(gens, GenRequest{Prompt: p + d.prompt, MaxTokens: budget, Stop: r.ks.stop})
			continue
		}
		for j := range d.conts {
			reqs = append(reqs, Request{Context: p + d.contexts[j], Continuation: d.conts[j]})
		}
	}
	scores, err := r.be.Score(reqs)
	if err == nil && len(scores) != len(reqs) {
		err = fmt.Errorf("%d scores for %d requests", len(scores), len(reqs))
	}
	if err != nil {
		return fmt.Errorf("task %s: %s lines %d-%d: %w", r.spec.Name, r.spec.File, chunk[0].line, chunk[len(chunk)-1].line, err)
	}
	tr := &r.res.Truncation
	for _, s := range scores {
		tr.ScoredTotal++
		if s.Truncated {
			tr.Scored++
		}
	}
	var outs []Completion
	if len(gens) > 0 {
		outs, err = r.be.Generate(gens)
		if err == nil && len(outs) != len(gens) {
			err = fmt.Errorf("%d completions for %d prompts", len(outs), len(gens))
		}
		if err != nil {
			return fmt.Errorf("task %s: %s lines %d-%d: %w", r.spec.Name, r.spec.File, chunk[0].line, chunk[len(chunk)-1].line, err)
		}
		for _, c := range outs {
			tr.GenerationTotal++
			if c.PromptTruncated {
				tr.Generation++
			}
		}
	}
	k := 0
	for i := range chunk {
		d := &chunk[i]
		if r.ks.grader.generative() {
			ok := r.agg.addGenerative(d, scores[i], outs[i].Text)
			if len(r.res.Examples) < 3 {
				r.res.Examples = append(r.res.Examples, Example{Line: d.line, Output: outs[i].Text, Gold: d.answer, Correct: ok})
			}
		} else {
			r.agg.addChoices(d, scores[k:k+len(d.conts)])
			k += len(d.conts)
		}
		r.res.Docs++
	}
	return nil
}

// subjectMean is acc_subject_mean: the unweighted mean of the K subjects' accuracies (docs/definitions.md §5).
// Its standard error sqrt(Σ v_s)/K treats the subjects as independent estimates, each subject's variance v_s
// taken at its Agresti-Coull proportion p̃ = (h + z²/2)/(n + z²) over n + z² trials, so that a subject at 0 or
// 1 still carries its uncertainty (the plain p(1−p)/n would be 0 there); the 95% interval is the mean ± z·SE,
// cut to [0, 1]. N is K; when K is below the number of subjects the kind has, the metric's note says so.
func subjectMean(by map[string]*accuracy, known int) Metric {
	if len(by) == 0 {
		return noMetric("acc_subject_mean")
	}
	var sum, v float64
	z2 := z95 * z95
	for _, a := range by {
		sum += float64(a.hits) / float64(a.n)
		nt := float64(a.n) + z2
		pt := (float64(a.hits) + z2/2) / nt
		v += pt * (1 - pt) / nt
	}
	k := float64(len(by))
	mu, se := sum/k, math.Sqrt(v)/k
	m := Metric{Name: "acc_subject_mean", Value: mu, StdErr: se, Lo: math.Max(0, mu-z95*se), Hi: math.Min(1, mu+z95*se), N: len(by)}
	if len(by) < known {
		m.Note = fmt.Sprintf("over %d of the %d subjects", len(by), known)
	}
	return m
}

// SubjectCoverage says which subjects of a per-subject kind (CMMLU, C-Eval) a task scored: how many of the
// kind's subjects, those it has none of (listed only when the whole file was read: with --limit the rest
// were not reached), and records whose subject the kind does not know (named from their files; scored, and
// described by their file name).
type SubjectCoverage struct {
	Scored  int      `json:"scored"`
	Known   int      `json:"known"`
	Missing []string `json:"missing,omitempty"`
	Unknown []string `json:"unknown,omitempty"`
}

// coverage is the task's SubjectCoverage (nil for kinds without subjects).
func (a *aggregate) coverage(known map[string]string, whole bool) *SubjectCoverage {
	if known == nil {
		return nil
	}
	c := &SubjectCoverage{Scored: len(a.accBySubject), Known: len(known)}
	for _, s := range sortedKeys(a.accBySubject) {
		if _, ok := known[s]; !ok {
			c.Unknown = append(c.Unknown, s)
		}
	}
	if whole {
		for _, s := range sortedKeys(known) {
			if a.accBySubject[s] == nil {
				c.Missing = append(c.Missing, s)
			}
		}
	}
	return c
}

// errNoText is returned by ScoreText for input without a single scorable token.
var errNoText = errors.New("no tokens to score")
