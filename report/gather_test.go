package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// parseDiag reads one diagnostics line as readRun does: through rundir.Diagnostics (the owner of the file) and
// diagPoint.
func parseDiag(b []byte) (DiagPoint, error) {
	dir, err := os.MkdirTemp("", "report-diag")
	if err != nil {
		return DiagPoint{}, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, rundir.DiagFile), append(append([]byte{}, b...), '\n'), 0o644); err != nil {
		return DiagPoint{}, err
	}
	tr, err := train.OpenRun(dir)
	if err != nil {
		return DiagPoint{}, err
	}
	ls, err := rundir.Diagnostics[*diagrec.Record](tr.Run)
	if err != nil {
		return DiagPoint{}, err
	}
	if len(ls) != 1 {
		return DiagPoint{}, fmt.Errorf("%d lines read from one", len(ls))
	}
	return diagPoint(ls[0]), nil
}

// TestParseDiagReadsLandedFile: the report reads a diagnostics.jsonl written by the code as landed (the fixture
// of diag, see diag/diagrec/testdata/README.md) into diag's own record types, holding the whole record (what
// rundir.DiagLine[*diagrec.Record] decodes; that it keeps every value of the file is diag's test), and per-class
// means equal to diagrec.SummariseClasses of the tensors, also for a line that carries only the tensors.
func TestParseDiagReadsLandedFile(t *testing.T) {
	f, err := os.Open("../diag/diagrec/testdata/diagnostics-landed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		p, err := parseDiag(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		n++
		if p.Step != 2*(n-1) || p.Err != "" || p.Activations == nil || len(p.Weights) != 26 || len(p.Classes) == 0 {
			t.Fatalf("line %d: step %d, error %q, %d tensors, %d classes", n, p.Step, p.Err, len(p.Weights), len(p.Classes))
		}
		var direct rundir.DiagLine[*diagrec.Record] // the line as its own types read it
		if err := json.Unmarshal(sc.Bytes(), &direct); err != nil || direct.Diagnostics == nil {
			t.Fatal(err)
		}
		show := func(r diagrec.Record) string { return fmt.Sprintf("%+v %+v %+v", *r.Activations, r.Classes, r.Weights) }
		if got, want := show(p.Record), show(*direct.Diagnostics); got != want {
			t.Errorf("line %d: the report holds\n%s\nnot the whole record\n%s", n, got, want)
		}
		if got, want := fmt.Sprint(p.Classes), fmt.Sprint(diagrec.SummariseClasses(p.Weights)); got != want {
			t.Errorf("line %d: classes %s, want %s", n, got, want)
		}
		// The same line without "classes" (the oldest files): the report averages the tensors with diag's function.
		old := p.Record
		old.Classes = nil
		b, _ := json.Marshal(rundir.DiagLine[*diagrec.Record]{Step: p.Step, Diagnostics: &old})
		q, err := parseDiag(b)
		if err != nil || fmt.Sprint(q.Classes) != fmt.Sprint(p.Classes) {
			t.Errorf("line %d without classes: %v, %v; want %v", n, q.Classes, err, p.Classes)
		}
	}
	if err := sc.Err(); err != nil || n != 3 {
		t.Fatalf("%d lines, %v", n, err)
	}
	// A null class metric (a one-row matrix has no row cosines) is unknown, NaN, and not drawn; the mirror type
	// this replaced read it as 0.
	p, err := parseDiag([]byte(`{"diagnostics":{"classes":[{"class":"shared_gate","cos_ratio":null,"stable_rank":1,"tensors":1}]},"step":1}`))
	if err != nil || len(p.Classes) != 1 || !math.IsNaN(p.Classes[0].Mean(diagrec.MetricCosRatio)) || !math.IsNaN(p.Classes[0].Mean(diagrec.MetricMeanAbsCos)) || p.Classes[0].Mean(diagrec.MetricStableRank) != 1 {
		t.Errorf("null class metric: %+v, %v", p.Classes, err)
	}
	for _, tc := range []struct{ line, want string }{
		{`{"diagnostics": {}}`, `no "step"`},
		{`{"step": 3, "error": "json: unsupported value: NaN"}`, ""},
	} {
		p, err := parseDiag([]byte(tc.line))
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want error %q", tc.line, err, tc.want)
			}
		} else if err != nil || p.Step != 3 || p.Err == "" || p.Activations != nil {
			t.Errorf("%s: %+v, %v", tc.line, p, err)
		}
	}
}

// TestValLossIsTheSummaryScore: a run that a plan's summary.json names shows that score (the one the plan's
// table shows); one without shows the last val_loss its metrics.jsonl logged; one with neither, NaN.
func TestValLossIsTheSummaryScore(t *testing.T) {
	logged, scored := 6.81, 6.857
	ms := []rundir.Metrics{{Step: 0, ValLoss: &logged}, {Step: 10, Tokens: 100, Loss: 7}}
	for _, tc := range []struct {
		name string
		run  Run
		want float64
	}{
		{"summary row", Run{Metrics: ms, Summary: &summary.Row{ValLoss: scored}}, scored},
		{"metrics only", Run{Metrics: ms}, logged},
		{"summary row without a score", Run{Metrics: ms, Summary: &summary.Row{ValLoss: math.NaN()}}, logged},
		{"neither", Run{}, math.NaN()},
	} {
		if got := tc.run.ValLoss(); !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestValLossSourceNamesWhereTheLossCameFrom: a run's final validation loss is the plan's whole-split score when
// its summary.json row has one, else metrics.jsonl's training-time estimate, and the caption text says which
// (with the counts when a report mixes both); runs without a finite loss are not counted.
func TestValLossSourceNamesWhereTheLossCameFrom(t *testing.T) {
	est := 5.74
	scored := &Run{Summary: &summary.Row{ValLoss: 5.66}, Metrics: []rundir.Metrics{{Step: 40, ValLoss: &est}}}
	estimated := &Run{Metrics: []rundir.Metrics{{Step: 40, ValLoss: &est}}}
	infSummary := &Run{Summary: &summary.Row{ValLoss: math.Inf(1)}, Metrics: []rundir.Metrics{{Step: 40, ValLoss: &est}}}
	none := &Run{}
	if v := scored.ValLoss(); v != 5.66 || !scored.ValLossScored() {
		t.Errorf("run with a summary row: ValLoss %v, scored %v; want 5.66 from summary.json", v, scored.ValLossScored())
	}
	if v := infSummary.ValLoss(); v != est || infSummary.ValLossScored() {
		t.Errorf("run with an infinite summary loss: ValLoss %v, scored %v; want metrics.jsonl's %v", v, infSummary.ValLossScored(), est)
	}
	cases := []struct {
		name      string
		runs      []*Run
		want, not string
	}{
		{"all scored", []*Run{scored, scored, none}, "every token of the validation split", "training-time"},
		{"none scored", []*Run{estimated, infSummary}, "training-time estimate", "as the plan scored it"},
		{"mixed", []*Run{scored, estimated, estimated}, "1 run with every token of the validation split", ""},
		{"mixed counts", []*Run{scored, estimated, estimated}, "2 that no summary.json scored with the training-time estimate", ""},
	}
	for _, tc := range cases {
		got := valLossSource(tc.runs)
		if !strings.Contains(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
			t.Errorf("%s: %q, want it to contain %q and not %q", tc.name, got, tc.want, tc.not)
		}
	}
}
