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
			return checkLaw(path, &law)
		}
	}
	if rep.E != nil && rep.A != nil && rep.Alpha != nil {
		return checkLaw(path, &Law{PowerLaw: fit.PowerLaw{E: *rep.E, A: *rep.A, Alpha: *rep.Alpha}, Source: src})
	}
	return nil, fmt.Errorf("size law %s: no size law (want the JSON output of smallinit fit with a law of kind \"size\", or {\"E\", \"A\", \"alpha\"})", path)
}

// checkLaw refuses a law the figure cannot mean: a size law falls with N towards its floor E (docs/definitions.md
// §7: E ≥ 0 and α > 0; A > 0 for it to fall), so a fit with α ≤ 0 (loss growing with size) or a non-finite number is an error naming
// the file, not a curve drawn without a word.
func checkLaw(path string, l *Law) (*Law, error) {
	for _, v := range []struct {
		key string
		x   float64
	}{{"E", l.E}, {"A", l.A}, {"alpha", l.Alpha}} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			return nil, fmt.Errorf("size law %s: %s = %g: want a finite number", path, v.key, v.x)
		}
	}
	switch {
	case l.Alpha <= 0:
		return nil, fmt.Errorf("size law %s: alpha = %g: a size law falls with N (alpha > 0); this fit has loss not falling with size, so it is not drawn (refit on more sizes, or leave out the law)", path, l.Alpha)
	case l.A <= 0:
		return nil, fmt.Errorf("size law %s: A = %g: a size law falls with N (A > 0)", path, l.A)
	case l.E < 0:
		return nil, fmt.Errorf("size law %s: E = %g: a loss floor is ≥ 0", path, l.E)
	}
	return l, nil
}
