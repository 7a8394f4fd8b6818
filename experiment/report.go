package experiment

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/smallinit/smallinit/analyze"
	"github.com/smallinit/smallinit/report"
)

// writeReport makes the plan's HTML report of the runs under dirs as `smallinit report` does
// (analyze.MakeReport), with the token-difficulty comparison of the final models of runs a and b (scored on
// at most windows validation windows; 0: all) when both are given. A comparison that cannot be made is a note
// on the page, not a failed plan. warn gets every run's problems (nil: silent).
//
// Only the plan's runs as this call sized them (outcome's trunks and branches) are drawn: a run directory under
// dirs that is none of them (one of an earlier --steps, budget or seed list, whose directory names another step
// count or seed) is left out and named on the page and in warn, rather than drawn beside this call's runs.
func writeReport(dirs []string, outcome *Outcome, out, title, a, b string, windows int, warn io.Writer) error {
	d, err := report.Gather(dirs)
	if err != nil {
		return err
	}
	mine := map[string]bool{}
	for _, r := range outcome.RunList {
		mine[filepath.Clean(r.Dir)] = true
	}
	for _, r := range outcome.Branches {
		mine[filepath.Clean(r.Dir)] = true
	}
	d.Leave(func(r *report.Run) string {
		if mine[filepath.Clean(r.Dir)] {
			return ""
		}
		if r.HasConfig && r.TotalSteps != outcome.Steps {
			return fmt.Sprintf("a run of an earlier sizing (%d steps; this call trains %d per run), left out of the report: rerun with --steps %d to report those runs, or remove it", r.TotalSteps, outcome.Steps, r.TotalSteps)
		}
		return "not one of the runs this call planned (an earlier --steps, --budget or --seeds), left out of the report: remove it, or rerun with the options that planned it"
	})
	r := report.Request{Dirs: dirs, Data: d, Out: out, Title: title, Generated: time.Now().UTC().Format(time.RFC3339), Warn: warn}
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
