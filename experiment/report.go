package experiment

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/smallinit/smallinit/report"
)

// WriteReport makes the HTML report of the runs under dirs with report.Make (the same page, figures and
// warnings as `smallinit report`), with the token-difficulty comparison of the final models of runs a and b
// (scored on at most windows validation windows; 0: all) when both are given. A comparison that cannot be
// made is a note on the page, not a failed plan. warn gets every run's problems (nil: silent).
func WriteReport(dirs []string, out, title, a, b string, windows int, warn io.Writer) error {
	r := report.Request{Dirs: dirs, Out: out, Title: title, CompareWindows: windows, CompareBins: 10,
		Generated: time.Now().UTC().Format(time.RFC3339), Warn: warn}
	if a != "" && b != "" {
		r.Compare = "A=" + a + ",B=" + b
	} else {
		r.Notes = append(r.Notes, "token-difficulty comparison: the plan names no two arms to compare")
	}
	_, _, err := report.Make(r)
	var in *report.InputError
	if errors.As(err, &in) && in.Input == "Compare" {
		r.Compare, r.Notes = "", append(r.Notes, "token-difficulty comparison: "+err.Error())
		_, _, err = report.Make(r)
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
