package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/internal/atomicfile"
)

// Request is a report to make: the runs found under Dirs (or already gathered, Data), the optional inputs
// beside them, and the results of the computations the report draws but does not make (a comparison of two
// models, row-cosine heatmaps: package analyze makes them from the models, see analyze.MakeReport).
type Request struct {
	Dirs          []string
	Data          *Data        // the runs, gathered from Dirs (Gather); nil: Make gathers Dirs
	Out           string       // the HTML file, written atomically
	Title         string       // page title
	Compare       *CompareData // a token-level comparison of two models (analyze.CompareModels, ReadCompare); nil: none
	Heatmaps      []HeatmapSet // row-cosine heatmaps of HeatmapSources' models (analyze.Heatmaps); none: not drawn
	HeatmapTensor string       // the matrix the heatmaps were asked for ("" for DefaultHeatmapTensor)
	Fit           string       // a size law file (ReadLaw), "" for none
	Coordchecks   []string     // coordinate-check files (ReadCoordcheck)
	MaxArms       int          // arms in the per-arm figures (0: DefaultMaxArms)
	Generated     string       // the header's line about when and how it was made
	Notes         []string     // notes the caller adds to the page's list (e.g. a comparison it could not make)
	Warn          io.Writer    // every run's problems and progress notes (nil: silent)
}

// DefaultMaxArms is the arms of the per-arm figures (weight trajectories, heatmaps) when a Request names none.
const DefaultMaxArms = 8

// InputError is a failure of one of a Request's inputs; Input names the Request field ("Compare", "Fit",
// "Coordchecks", "MaxArms"), so that a command can name its flag.
type InputError struct {
	Input string
	Err   error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Make gathers the runs, reads the inputs, draws the report and writes it to r.Out. A report of runs none of
// which can be read completely, or of nothing at all, is an error rather than a page.
func Make(r Request) (*Page, *Data, error) {
	warn := func(format string, a ...any) {
		if r.Warn != nil {
			fmt.Fprintf(r.Warn, format, a...)
		}
	}
	if r.MaxArms < 0 {
		return nil, nil, &InputError{"MaxArms", fmt.Errorf("%d arms: must be at least 1 (0: the default 8)", r.MaxArms)}
	}
	if r.MaxArms == 0 {
		r.MaxArms = DefaultMaxArms // as Build does, so that the heatmaps and the trajectories agree
	}
	d := r.Data
	if d == nil {
		var err error
		if d, err = Gather(r.Dirs); err != nil {
			return nil, nil, err
		}
	}
	for _, s := range d.Skipped {
		warn("smallinit report: warning: skipped %s: %s\n", s.Path, s.Reason)
	}
	readable := 0
	for _, run := range d.Runs {
		for _, p := range run.Problems {
			warn("smallinit report: warning: %s: %s\n", run.Dir, p)
		}
		if len(run.Problems) == 0 {
			readable++
		}
	}
	if readable == 0 && len(d.Runs) > 0 {
		return nil, d, fmt.Errorf("report: no run could be read completely (first: %s: %s)", d.Runs[0].Dir, strings.Join(d.Runs[0].Problems, "; "))
	}
	o := Options{Title: r.Title, MaxArms: r.MaxArms, HeatTensor: r.HeatmapTensor, Generated: r.Generated, Notes: slices.Clone(r.Notes),
		Compare: r.Compare, Heatmaps: r.Heatmaps}
	var err error
	if r.Fit != "" {
		if o.Law, err = ReadLaw(r.Fit); err != nil {
			return nil, d, &InputError{"Fit", err}
		}
	}
	for _, p := range r.Coordchecks {
		cc, err := ReadCoordcheck(p)
		if err != nil {
			return nil, d, &InputError{"Coordchecks", err}
		}
		o.Coordchecks = append(o.Coordchecks, cc)
	}
	if len(d.Runs) == 0 && o.Compare == nil && len(o.Coordchecks) == 0 {
		var why []string
		for _, s := range d.Skipped {
			why = append(why, s.Path+": "+s.Reason)
		}
		return nil, d, fmt.Errorf("nothing to report: no run directory (config.toml + metrics.jsonl) found (%s)", strings.Join(why, "; "))
	}
	pg, err := Build(d, o)
	if err != nil {
		return nil, d, err
	}
	if err := writePage(r.Out, pg.HTML); err != nil {
		return nil, d, err
	}
	return pg, d, nil
}

// WriteSummary prints what a made report holds: its runs and arms, the figures drawn and those not drawn.
func WriteSummary(w io.Writer, out string, pg *Page, d *Data) {
	complete := 0
	for _, r := range d.Runs {
		if r.Complete {
			complete++
		}
	}
	var drawn []string
	for _, f := range pg.Figures {
		drawn = append(drawn, f.ID)
	}
	fmt.Fprintf(w, "wrote %s: %d runs (%d complete) in %d arms; %d figures: %s\n", out, len(d.Runs), complete, len(d.Arms),
		len(pg.Figures), strings.Join(drawn, ", "))
	for _, om := range pg.Omitted {
		fmt.Fprintf(w, "  not drawn: %s (%s)\n", om.Title, om.Reason)
	}
	if len(d.Skipped) > 0 {
		fmt.Fprintf(w, "  %d path(s) skipped:\n", len(d.Skipped))
		for _, s := range d.Skipped {
			fmt.Fprintf(w, "    %s: %s\n", s.Path, s.Reason)
		}
	}
}

// writePage writes a page atomically (internal/atomicfile), creating its directory first.
func writePage(path string, html []byte) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("report: %s is a directory, not the HTML file to write: name a file (e.g. %s), or remove the directory (rm -r %s)",
			path, filepath.Join(path, "report.html"), path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return atomicfile.Write(path, html)
}
