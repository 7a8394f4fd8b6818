package report

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// Law is a saturating power law L(N) = E + A·N^(−α).
type Law struct {
	E      float64 `json:"E"`
	A      float64 `json:"A"`
	Alpha  float64 `json:"alpha"`
	Source string  `json:"-"` // where it came from, for the legend
}

// Eval is L(n).
func (l Law) Eval(n float64) float64 { return l.E + l.A*math.Pow(n, -l.Alpha) }

// String is "E + A·N^(−α)" with the fitted numbers.
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

// FitLaw fits L(N) = E + A·N^(−α) to (n, loss) by least squares in loss: for each E in [0, min loss) the best
// A and α come from a straight line through (log N, log(L − E)); E is chosen on a grid and refined by a
// golden-section search. It needs at least three distinct positive N and finds only decreasing laws (α > 0).
func FitLaw(n, loss []float64) (Law, bool) {
	var xs, ys []float64
	for i := range n {
		if n[i] > 0 && !math.IsNaN(loss[i]) && !math.IsInf(loss[i], 0) && loss[i] > 0 {
			xs, ys = append(xs, math.Log(n[i])), append(ys, loss[i])
		}
	}
	if distinct(xs) < 3 {
		return Law{}, false
	}
	lmin := math.Inf(1)
	for _, y := range ys {
		lmin = math.Min(lmin, y)
	}
	fitAt := func(e float64) (Law, float64) {
		var mx, my float64
		for i := range xs {
			mx += xs[i]
			my += math.Log(ys[i] - e)
		}
		mx, my = mx/float64(len(xs)), my/float64(len(xs))
		var sxy, sxx float64
		for i := range xs {
			sxy += (xs[i] - mx) * (math.Log(ys[i]-e) - my)
			sxx += (xs[i] - mx) * (xs[i] - mx)
		}
		b := sxy / sxx
		l := Law{E: e, A: math.Exp(my - b*mx), Alpha: -b}
		if !(l.Alpha > 0) {
			return l, math.Inf(1)
		}
		var sse float64
		for i := range xs {
			r := ys[i] - l.Eval(math.Exp(xs[i]))
			sse += r * r
		}
		return l, sse
	}
	top := lmin * (1 - 1e-9)
	const grid = 400
	best, bestE := math.Inf(1), 0.0
	for i := 0; i < grid; i++ {
		e := top * float64(i) / grid
		if _, sse := fitAt(e); sse < best {
			best, bestE = sse, e
		}
	}
	if math.IsInf(best, 1) {
		return Law{}, false
	}
	lo, hi := math.Max(0, bestE-top/grid), math.Min(top, bestE+top/grid)
	g := (math.Sqrt(5) - 1) / 2
	for k := 0; k < 60; k++ {
		a, b := hi-g*(hi-lo), lo+g*(hi-lo)
		_, fa := fitAt(a)
		_, fb := fitAt(b)
		if fa < fb {
			hi = b
		} else {
			lo = a
		}
	}
	l, sse := fitAt((lo + hi) / 2)
	if sse > best {
		l, _ = fitAt(bestE)
	}
	return l, true
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
		return checkLaw(path, &Law{E: *rep.E, A: *rep.A, Alpha: *rep.Alpha, Source: src})
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
