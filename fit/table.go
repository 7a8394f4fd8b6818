package fit

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// Table is a table of runs as text cells: the input of Analyze. `smallinit sweep collect` writes one (CSV,
// or JSON {"axes", "columns", "rows": [{column: value}]}); any CSV with a header or JSON array of objects works.
type Table struct {
	Columns []string            // column names in order
	Axes    []string            // the swept columns (from the JSON's "axes"; nil when the file does not say)
	Rows    []map[string]string // column → cell text ("" for missing)
}

// ReadTable reads a .json or .csv table.
func ReadTable(path string) (*Table, error) {
	b, err := inputfile.ReadFile(path, inputfile.MaxTable)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	var t *Table
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		t, err = parseJSONTable(b)
	case ".csv":
		t, err = parseCSVTable(b)
	default:
		return nil, fmt.Errorf("table %s: want a .json or .csv file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", path, err)
	}
	return t, nil
}

func parseCSVTable(b []byte) (*Table, error) {
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("empty: no header line")
	}
	t := &Table{Columns: recs[0]}
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, c := range t.Columns {
			row[c] = rec[i]
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func parseJSONTable(b []byte) (*Table, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	t := &Table{}
	var rows []any
	switch v := doc.(type) {
	case []any:
		rows = v
	case map[string]any:
		r, ok := v["rows"].([]any)
		if !ok {
			return nil, fmt.Errorf(`want an array of rows or an object with "rows"`)
		}
		rows = r
		t.Columns = stringList(v["columns"])
		if _, ok := v["axes"]; ok {
			t.Axes = append([]string{}, stringList(v["axes"])...)
		}
	default:
		return nil, fmt.Errorf(`want an array of rows or an object with "rows"`)
	}
	seen := map[string]bool{}
	for _, c := range t.Columns {
		seen[c] = true
	}
	for i, r := range rows {
		obj, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("row %d is not an object", i)
		}
		row := map[string]string{}
		var extra []string
		for k, v := range obj {
			row[k] = cellText(v)
			if !seen[k] {
				seen[k] = true
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		t.Columns = append(t.Columns, extra...)
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Selector picks rows by column values: "key=value" conditions joined by commas, all of which must hold, e.g.
// "init.gamma=0.5,model.attn_gate=none". Values compare as numbers when both sides parse as numbers (so 1,
// 1.0 and 1e0 match), else as strings. The empty selector matches every row.
type Selector []Cond

// Cond is one key=value condition of a Selector.
type Cond struct{ Key, Value string }

// ParseSelector parses "k=v[,k=v...]"; "" is the empty selector.
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("selector %q: want key=value[,key=value...]", s)
		}
		sel = append(sel, Cond{k, strings.Trim(v, `"'`)})
	}
	return sel, nil
}

// String writes the selector back as k=v,k=v ("all runs" when empty).
func (s Selector) String() string {
	if len(s) == 0 {
		return "all runs"
	}
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.Key + "=" + c.Value
	}
	return strings.Join(parts, ",")
}

// Match reports whether row satisfies every condition.
func (s Selector) Match(row map[string]string) bool {
	for _, c := range s {
		if !sameValue(row[c.Key], c.Value) {
			return false
		}
	}
	return true
}

// check reports a condition naming a column the table does not have.
func (s Selector) check(t *Table) error {
	for _, c := range s {
		found := false
		for _, col := range t.Columns {
			found = found || col == c.Key
		}
		if !found {
			return fmt.Errorf("selector %s: the table has no column %q (columns: %s)", s, c.Key, strings.Join(t.Columns, ", "))
		}
	}
	return nil
}

func sameValue(a, b string) bool {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return x == y
	}
	return a == b
}
