package report

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// Law is a size law to draw, L(N) = E + A·N^(−α) (fit.PowerLaw, docs/definitions.md §4), and where it came
// from. The report fits nothing of its own: a law comes from a file (ReadLaw) or from fit.Fit.
type Law struct {
	fit.PowerLaw
	Source string `json:"-"` // where it came from, for the legend
}

// String is "L = E + A·N^(−α)" with the law's numbers.
func (l Law) String() string {
	return fmt.Sprintf("L = %.3g + %.3g·N^(−%.3g)", l.E, l.A, l.Alpha)
}

// curve samples the law at n log-spaced points between lo and hi.
func (l Law) curve(lo, hi float64, n int) (xs, ys []float64) {
	for i := 0; i < n; i++ {
		x := lo * math.Pow(hi/lo, float64(i)/float64(n-1))
		xs, ys = append(xs, x), append(ys, l.Eval(x))
	}
	return xs, ys
}

// ReadLaw reads a size law from a JSON file: `smallinit fit --json`'s report (its first law of kind "size"),
// or a bare {"E": ..., "A": ..., "alpha": ...}.
func ReadLaw(path string) (*Law, error) {
	b, err := inputfile.ReadFile(path, inputfile.MaxTable)
	if err != nil {
		return nil, fmt.Errorf("size law: %w", err)
	}
	var rep struct {
		Baseline string `json:"baseline"`
		Laws     []struct {
			Kind string `json:"kind"`
			Law  *Law   `json:"law"`
		} `json:"laws"`
		E     *float64 `json:"E"`
		A     *float64 `json:"A"`
		Alpha *float64 `json:"alpha"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("size law %s: %w", path, err)
	}
	src := filepath.Base(path)
	for _, l := range rep.Laws {
		if l.Law != nil && (l.Kind == "size" || l.Kind == "") {
			law := *l.Law
			law.Source = src
			if rep.Baseline != "" {
				law.Source += " (baseline " + rep.Baseline + ")"
			}
			return &law, nil
		}
	}
	if rep.E != nil && rep.A != nil && rep.Alpha != nil {
		return &Law{PowerLaw: fit.PowerLaw{E: *rep.E, A: *rep.A, Alpha: *rep.Alpha}, Source: src}, nil
	}
	return nil, fmt.Errorf("size law %s: no size law (want the JSON output of smallinit fit with a law of kind \"size\", or {\"E\", \"A\", \"alpha\"})", path)
}
