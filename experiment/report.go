package experiment

import (
	"fmt"
	"time"

	"github.com/smallinit/smallinit/report"
)

// WriteReport renders the HTML report of the runs under dirs to out, with the token-difficulty comparison of
// the final models of runs a and b (scored on at most windows validation windows; 0: all) when both are given.
func WriteReport(dirs []string, out, title, a, b string, windows int) error {
	d, err := report.Gather(dirs)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	o := report.Options{Title: title, Generated: time.Now().UTC().Format(time.RFC3339)}
	o.Heatmaps, o.Notes = report.Heatmaps(d, "", 4)
	if cmp, err := report.CompareModels(a, b, windows, 10); err == nil {
		o.Compare = cmp
	} else {
		o.Notes = append(o.Notes, "token-difficulty comparison: "+err.Error())
	}
	html, err := report.Render(d, o)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return report.WriteFile(out, html)
}
