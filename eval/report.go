package eval

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Report is the record of one model scored on several tasks: what `smallinit eval-tasks --json` prints.
type Report struct {
	Model     string        `json:"model"`
	Tokenizer string        `json:"tokenizer"`
	Params    int64         `json:"params"`
	PrefixEOT bool          `json:"prefix_eot"`     // <|endoftext|> came before every context and prompt
	Special   string        `json:"special_tokens"` // parse or literal (--special-tokens)
	Tasks     []*TaskResult `json:"tasks"`
}

// formatPlain formats a metric without a standard error: counts as integers, large values with 4 significant
// digits.
func formatPlain(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1e4:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// WriteText prints the task's metrics, a proportion with its 95% interval and any other mean with its standard
// error, and the kind's footnote.
func (r *TaskResult) WriteText(w io.Writer) {
	unit := "records"
	if r.Kind == KindLM {
		unit = "windows"
	}
	fmt.Fprintf(w, "%s (%s, %s): %d %s", r.Task, r.Kind, r.File, r.Docs, unit)
	if c := r.Subjects; c != nil {
		fmt.Fprintf(w, " from %d of the %d subjects", c.Scored, c.Known)
	}
	if r.Shots > 0 {
		fmt.Fprintf(w, ", %d-shot", r.Shots)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(w, ", %d malformed skipped", r.Skipped)
	}
	if t := r.Truncation; t.Any() {
		fmt.Fprintf(w, ", prompts lost their start to the context length:")
		if t.Scored > 0 {
			what := "scored contexts"
			if kindSpecs[r.Kind].grader.generative() {
				what = "teacher-forced gold answers"
			}
			fmt.Fprintf(w, " %d of %d %s", t.Scored, t.ScoredTotal, what)
		}
		if t.Generation > 0 {
			if t.Scored > 0 {
				fmt.Fprint(w, " and")
			}
			fmt.Fprintf(w, " %d of %d generation prompts", t.Generation, t.GenerationTotal)
		}
	}
	fmt.Fprintf(w, ", %.1fs\n", r.Seconds)
	if c := r.Subjects; c != nil {
		if len(c.Missing) > 0 {
			fmt.Fprintf(w, "  no records of %d subjects: %s\n", len(c.Missing), nameList(c.Missing, 8))
		}
		if len(c.Unknown) > 0 {
			fmt.Fprintf(w, "  subjects %s does not know (scored, described by their file names): %s\n", r.Kind, nameList(c.Unknown, 8))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range r.Metrics {
		note := ""
		if m.Note != "" {
			note = "  " + m.Note
		}
		switch {
		case m.HasInterval():
			fmt.Fprintf(tw, "  %s\t%.4f\t[%.4f, %.4f]%s\t\n", m.Name, m.Value, m.Lo, m.Hi, note)
		case m.HasStdErr():
			fmt.Fprintf(tw, "  %s\t%.4f\t± %.4f%s\t\n", m.Name, m.Value, m.StdErr, note)
		default:
			fmt.Fprintf(tw, "  %s\t%s\t%s\t\n", m.Name, formatPlain(m.Value), note)
		}
	}
	tw.Flush()
	if f := kindSpecs[r.Kind].footnote; f != "" {
		fmt.Fprintln(w, "  "+f)
	}
	if hasInterval(r.Metrics) {
		fmt.Fprintln(w, "  ([lo, hi]: 95% interval, the Wilson score interval of an accuracy; ±: standard error of a mean)")
	}
}

// WriteSummary prints one line per task, its headline metric (the first its kind reports: acc, exact match, or
// an lm task's loss) with its 95% interval or standard error, the records scored and the time taken, so that
// several tasks read as one table after their sections.
func (r *Report) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "summary of %d tasks (each task's headline metric; its section above has the rest):\n", len(r.Tasks))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  task\tkind\tn\tmetric\tvalue\t95% interval / ± SE\tseconds\t")
	for _, t := range r.Tasks {
		name, value, spread := "-", "-", ""
		if len(t.Metrics) > 0 {
			m := t.Metrics[0]
			name, value = m.Name, formatPlain(m.Value)
			switch {
			case m.HasInterval():
				value, spread = fmt.Sprintf("%.4f", m.Value), fmt.Sprintf("[%.4f, %.4f]", m.Lo, m.Hi)
			case m.HasStdErr():
				value, spread = fmt.Sprintf("%.4f", m.Value), fmt.Sprintf("± %.4f", m.StdErr)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%.1f\t\n", t.Task, t.Kind, t.Docs, name, value, spread, t.Seconds)
	}
	tw.Flush()
}

// hasInterval reports whether any metric carries an interval.
func hasInterval(ms Metrics) bool {
	for _, m := range ms {
		if m.HasInterval() {
			return true
		}
	}
	return false
}

// nameList joins names, the first max of them and a count of the rest.
func nameList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more (--json lists them)", strings.Join(names[:max], ", "), len(names)-max)
}
