package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/override"
)

// Columns of a collected table besides the axes, which sit between "state" and "N". Package fit takes every
// other column of a CSV table to be an axis.
var (
	LeadColumns   = []string{"index", "id", "state"}
	MetricColumns = []string{"N", "n_params", "steps", "tokens", "train_loss", "val_loss", "best_val_loss", "tokens_per_s"}
)

// TimingColumns are the columns that differ between identical runs (wall-clock measurements).
var TimingColumns = []string{"tokens_per_s"}

// Row is one run of a collected table.
type Row struct {
	Index       int
	ID          string
	State       State
	Values      map[string]any // axis key → value
	N           int64          // non-embedding parameters (NDefinition)
	Params      int64          // all parameters
	Steps       int            // steps completed (last logged step)
	Tokens      int64          // training tokens seen
	TrainLoss   float64        // last logged training loss (mean over the last logging interval); NaN if none
	ValLoss     float64        // last validation loss (at the end of a finished run); NaN if none
	BestValLoss float64        // smallest validation loss logged; NaN if none
	TokensPerS  float64        // training throughput (rundir.Summarise); NaN if none
}

// Table is a sweep's collected results: one row per run of the plan, in index order.
type Table struct {
	Axes []string // axis keys, in plan order
	Rows []Row
}

// Collect reads every run's metrics in the sweep directory dir. Runs that have not finished are included with
// their state and whatever they logged, so a table can be collected while a sweep is running.
func Collect(dir string) (*Table, error) {
	p, sts, err := Status(dir, 0)
	if err != nil {
		return nil, err
	}
	t := &Table{}
	for _, a := range p.Axes {
		t.Axes = append(t.Axes, a.Key)
	}
	for i, r := range p.Runs {
		m, err := readMetrics(RunDir(dir, r))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("run %s: %w", r.ID, err)
		}
		t.Rows = append(t.Rows, Row{Index: r.Index, ID: r.ID, State: sts[i].State, Values: r.Values, N: r.N, Params: r.Params,
			Steps: m.Step, Tokens: m.Tokens, TrainLoss: m.TrainLoss, ValLoss: m.ValLoss, BestValLoss: m.BestValLoss, TokensPerS: m.TokensPerS})
	}
	return t, nil
}

// Columns lists the table's columns in order: LeadColumns, the axes, MetricColumns.
func (t *Table) Columns() []string {
	cols := append([]string{}, LeadColumns...)
	cols = append(cols, t.Axes...)
	return append(cols, MetricColumns...)
}

// cells returns row r's values in Columns order: numbers, strings, or nil for a missing value.
func (t *Table) cells(r Row) []any {
	f := func(x float64) any {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	}
	out := []any{r.Index, r.ID, string(r.State)}
	for _, a := range t.Axes {
		out = append(out, r.Values[a])
	}
	return append(out, r.N, r.Params, r.Steps, r.Tokens, f(r.TrainLoss), f(r.ValLoss), f(r.BestValLoss), f(r.TokensPerS))
}

func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return override.Format(v)
}

// WriteCSV writes the table as CSV with a header line; missing values are empty cells.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(t.Columns())
	for _, r := range t.Rows {
		cells := t.cells(r)
		rec := make([]string, len(cells))
		for i, c := range cells {
			rec[i] = cellText(c)
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the table as {"n_definition", "axes", "columns", "rows": [{column: value}]}, each row an
// object with the columns in order; missing values are null.
func (t *Table) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	head, _ := json.Marshal(map[string]any{"n_definition": NDefinition, "axes": t.Axes, "columns": t.Columns()})
	b.Write(head[:len(head)-1])
	b.WriteString(`,"rows":[`)
	cols := t.Columns()
	for i, r := range t.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n{")
		for j, c := range t.cells(r) {
			if j > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(cols[j])
			v, err := json.Marshal(c)
			if err != nil {
				return fmt.Errorf("row %s column %s: %w", r.ID, cols[j], err)
			}
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
	}
	b.WriteString("\n]}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// WriteText prints the table aligned for a terminal, losses to 4 decimals.
func (t *Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	cols := t.Columns()
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c)
	}
	fmt.Fprintln(tw)
	for _, r := range t.Rows {
		for i, c := range t.cells(r) {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			switch x := c.(type) {
			case float64:
				if cols[i] == "tokens_per_s" {
					fmt.Fprintf(tw, "%.0f", x)
				} else {
					fmt.Fprintf(tw, "%.4f", x)
				}
			case nil:
				fmt.Fprint(tw, "-")
			default:
				fmt.Fprint(tw, cellText(c))
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteFiles writes the table to STEM.csv and STEM.json (an extension .csv or .json of stem is dropped first),
// each atomically, and returns the stem.
func (t *Table) WriteFiles(stem string) (string, error) {
	if ext := strings.ToLower(filepath.Ext(stem)); ext == ".csv" || ext == ".json" {
		stem = strings.TrimSuffix(stem, filepath.Ext(stem))
	}
	for _, f := range []struct {
		ext   string
		write func(io.Writer) error
	}{{".csv", t.WriteCSV}, {".json", t.WriteJSON}} {
		var b strings.Builder
		if err := f.write(&b); err != nil {
			return stem, err
		}
		if err := atomicfile.Write(stem+f.ext, []byte(b.String())); err != nil {
			return stem, err
		}
	}
	return stem, nil
}
