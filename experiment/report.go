package experiment

import (
	"fmt"
	"io"
	"time"

	"github.com/smallinit/smallinit/analyze"
	"github.com/smallinit/smallinit/report"
)

// writeReport makes the plan's HTML report of the runs under dirs as `smallinit report` does
// (analyze.MakeReport), with the token-difficulty comparison of the final models of runs a and b (scored on
// at most windows validation windows; 0: all) when both are given. A comparison that cannot be made is a note
// on the page, not a failed plan. warn gets every run's problems (nil: silent).
func writeReport(dirs []string, out, title, a, b string, windows int, warn io.Writer) error {
	r := report.Request{Dirs: dirs, Out: out, Title: title, Generated: time.Now().UTC().Format(time.RFC3339), Warn: warn}
	in := analyze.ReportInputs{CompareWindows: windows, CompareBins: 10, CompareNote: true}
	if a != "" && b != "" {
		in.Compare = "A=" + a + ",B=" + b
	} else {
		r.Notes = append(r.Notes, "token-difficulty comparison: the plan names no two arms to compare")
	}
	if _, _, err := analyze.MakeReport(r, in); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
