package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/smallinit/smallinit/analyze"
	"github.com/smallinit/smallinit/report"
	"github.com/smallinit/smallinit/train"
)

// WriteReport makes the plan's HTML report (OUT/report.html, or report-probes.html) of its groups' runs as
// `smallinit report` does (analyze.MakeReport), less the groups report.exclude names, with the token-difficulty
// comparison of the outcome's Compare pair (scored on at most max(Options.Windows, report.compare_windows)
// validation windows; 0: all) when it has both runs. A comparison that cannot be made is a note on the page,
// not a failed plan. The log gets every run's problems. A cancelled ctx (SIGTERM) stops it before it starts:
// the report is the last thing a study writes, and the next call writes it.
//
// Only the plan's runs as this call sized them (the outcome's trunks and branches) are drawn: a run directory
// under the groups that is none of them (one of an earlier --steps, budget or seed list, whose directory names
// another step count or seed) is left out and named on the page and in the log, rather than drawn beside this
// call's runs.
func (x *Execution) WriteReport(ctx context.Context) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w before the report: %w", train.ErrInterrupted, context.Cause(ctx))
	}
	out, o, p := x.out, &x.o, x.out.Plan
	var dirs []string
	for _, g := range p.Groups {
		if slices.Contains(p.Report.Exclude, g.Name) {
			o.logf("report: group %s left out (report.exclude)\n", g.Name)
			continue
		}
		dirs = append(dirs, filepath.Join(o.Out, g.Name+out.Suffix))
	}
	d, err := report.Gather(dirs)
	if err != nil {
		return err
	}
	mine := map[string]bool{}
	for _, r := range out.RunList {
		mine[filepath.Clean(r.Dir)] = true
	}
	for _, r := range out.Branches {
		mine[filepath.Clean(r.Dir)] = true
	}
	d.Leave(func(r *report.Run) string {
		if mine[filepath.Clean(r.Dir)] {
			return ""
		}
		if r.HasConfig && r.TotalSteps != out.Steps {
			return fmt.Sprintf("a run of an earlier sizing (%d steps; this call trains %d per run), left out of the report: rerun with --steps %d to report those runs, or remove it", r.TotalSteps, out.Steps, r.TotalSteps)
		}
		return "not one of the runs this call planned (an earlier --steps, --budget or --seeds), left out of the report: remove it, or rerun with the options that planned it"
	})
	out.Report = filepath.Join(o.Out, "report"+out.Suffix+".html")
	r := report.Request{Dirs: dirs, Data: d, Out: out.Report, Title: p.Report.Title, Generated: time.Now().UTC().Format(time.RFC3339), Warn: o.Log}
	in := analyze.ReportInputs{CompareWindows: max(o.Windows, p.Report.CompareWindows), CompareBins: 10, CompareNote: true}
	if c := out.Compare; c.A != "" && c.B != "" {
		in.Compare = analyze.Comparison{A: c.A, B: c.B}
	} else {
		r.Notes = append(r.Notes, "token-difficulty comparison: the plan names no two arms to compare")
	}
	if _, _, err := analyze.MakeReport(r, in); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
