package analyze

import (
	"fmt"

	"github.com/smallinit/smallinit/report"
)

// ReportInputs are the computations of a report that need the models: package report reads files and draws,
// and MakeReport makes these for it.
type ReportInputs struct {
	// Compare is the token-difficulty comparison to draw (the zero Comparison: none).
	Compare        Comparison
	CompareWindows int  // validation windows scored by a comparison of two runs (0: all)
	CompareBins    int  // its difficulty quantiles
	CompareNote    bool // a comparison that cannot be made is a note on the page instead of an error
	NoHeatmaps     bool // skip the heatmaps (they load each arm's checkpoints and final model)
}

// MakeReport gathers r's runs, makes the comparison and the heatmaps the inputs ask for, and hands everything
// to report.Make as data. Errors of an input are *report.InputError naming the Request field or "Compare".
func MakeReport(r report.Request, in ReportInputs) (*report.Page, *report.Data, error) {
	if r.Data == nil {
		d, err := report.Gather(r.Dirs)
		if err != nil {
			return nil, nil, err
		}
		r.Data = d
	}
	warn := func(format string, a ...any) {
		if r.Warn != nil {
			fmt.Fprintf(r.Warn, format, a...)
		}
	}
	if c := in.Compare; c != (Comparison{}) {
		var err error
		if c.File != "" {
			r.Compare, err = report.ReadCompare(c.File)
		} else {
			warn("comparing %s and %s...\n", c.A, c.B)
			r.Compare, err = CompareModels(c.A, c.B, in.CompareWindows, in.CompareBins)
		}
		switch {
		case err != nil && in.CompareNote:
			r.Compare, r.Notes = nil, append(r.Notes, "token-difficulty comparison: "+err.Error())
		case err != nil:
			return nil, r.Data, &report.InputError{Input: "Compare", Err: err}
		}
	}
	if !in.NoHeatmaps && r.MaxArms >= 0 {
		srcs, problems := report.HeatmapSources(r.Data, r.MaxArms)
		sets, more := Heatmaps(srcs, r.HeatmapTensor)
		r.Heatmaps = sets
		for _, p := range append(problems, more...) {
			r.Notes = append(r.Notes, "heatmap "+p)
		}
	}
	return report.Make(r)
}
