package eval

import (
	"fmt"
	"io"
	"math"
	"strconv"
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

// WriteText prints the task's metrics with their standard errors, and a note on how to read its kind's.
func (r *TaskResult) WriteText(w io.Writer) {
	unit := "records"
	if r.Kind == KindLM {
		unit = "windows"
	}
	fmt.Fprintf(w, "%s (%s, %s): %d %s", r.Task, r.Kind, r.File, r.Docs, unit)
	if r.Shots > 0 {
		fmt.Fprintf(w, ", %d-shot", r.Shots)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(w, ", %d malformed skipped", r.Skipped)
	}
	if t := r.Truncation; t.Any() {
		fmt.Fprintf(w, ", prompts lost their start to the context length:")
		if t.Scored > 0 {
			fmt.Fprintf(w, " %d of %d scored contexts", t.Scored, t.ScoredTotal)
		}
		if t.Generation > 0 {
			if t.Scored > 0 {
				fmt.Fprint(w, " and")
			}
			fmt.Fprintf(w, " %d of %d generation prompts", t.Generation, t.GenerationTotal)
		}
	}
	fmt.Fprintf(w, ", %.1fs\n", r.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range r.Metrics {
		if m.HasStdErr() {
			fmt.Fprintf(tw, "  %s\t%.4f\t± %.4f\t\n", m.Name, m.Value, m.StdErr)
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t\t\n", m.Name, formatPlain(m.Value))
		}
	}
	tw.Flush()
	switch r.Kind {
	case KindHellaSwag, KindMultipleChoice, KindWinoGrande, KindCMMLU, KindCEval:
		fmt.Fprintln(w, "  (acc_norm_bytes: log-likelihood divided by the choice's length in bytes; ll_margin: log p(gold) − max log p(other), nats)")
	case KindProbe:
		fmt.Fprintln(w, "  (chance: what the best guess that does not do the task scores, the mean of the records' chance; memorisation")
		fmt.Fprintln(w, "  kinds on held-out prompts are at chance by design, on recall prompts they measure memorisation)")
	}
}
