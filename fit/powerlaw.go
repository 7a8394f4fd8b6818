// Package fit fits the scaling laws of docs/definitions.md §4 "Effective model size": L(N) = E + A·N^(−α) on a baseline's
// losses over ≥ 4 model sizes N (non-embedding parameters), and reads a treated model's loss L as the size
// the baseline would need for it, N_eff = (A/(L − E))^(1/α), and its effective-size gain N_eff/N − 1, with a
// bootstrap interval over seeds. The same law in the token budget D, L(D) = E + B·D^(−β) at fixed N, gives the
// data-side gain D_eff/D − 1.
//
// The math (PowerLaw, Fit, Bootstrap) knows nothing of sweeps; Analyze applies it to a table of runs such as
// `smallinit sweep collect` writes.
package fit

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// PowerLaw is L(x) = E + A·x^(−α): the loss as a function of model size (or token budget) x, with E the
// irreducible loss the law tends to as x → ∞ (docs/definitions.md §4).
type PowerLaw struct {
	E     float64 `json:"E"`
	A     float64 `json:"A"`
	Alpha float64 `json:"alpha"`
}

// Eval is L(x) = E + A·x^(−α).
func (p PowerLaw) Eval(x float64) float64 { return p.E + p.A*math.Pow(x, -p.Alpha) }

// ErrBeyondAsymptote is returned by EffectiveSize for a loss at or below E.
var ErrBeyondAsymptote = errors.New("loss at or below the law's asymptote E")

// EffectiveSize inverts the law: the x at which it reaches loss L, x_eff = (A/(L − E))^(1/α) (docs/definitions.md §4's
// N_eff). A loss L ≤ E is below anything the law predicts at any size: EffectiveSize returns +Inf and an
// error wrapping ErrBeyondAsymptote, since such an N_eff says more about the fit than about the model.
func (p PowerLaw) EffectiveSize(L float64) (float64, error) {
	if !(L > p.E) {
		return math.Inf(1), fmt.Errorf("%w: L = %.4f ≤ E = %.4f, so N_eff = (A/(L − E))^(1/α) is unbounded", ErrBeyondAsymptote, L, p.E)
	}
	return math.Pow(p.A/(L-p.E), 1/p.Alpha), nil
}

// String writes the law as "E + A·x^(−α)".
func (p PowerLaw) String() string {
	return fmt.Sprintf("%.4g + %.4g·x^(−%.4g)", p.E, p.A, p.Alpha)
}

// Point is one observation: size (or budget) X > 0 and loss Y.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"loss"`
}

// Law is a fitted PowerLaw with its goodness of fit on the points it was fitted to.
type Law struct {
	PowerLaw
	Points    []Point   `json:"points"`
	Residuals []float64 `json:"residuals"` // Y − Eval(X), per point
	R2        float64   `json:"r2"`        // 1 − SS_res/SS_tot
	RMSE      float64   `json:"rmse"`      // sqrt(SS_res/n)
}

// Fitting constants.
const (
	MinSizes = 4    // distinct x values a fit needs (docs/definitions.md §4: ≥ 4 sizes); three free parameters leave 1 dof
	AlphaMin = 0.01 // the search range of α; a best fit at either end means the data do not pin α down
	AlphaMax = 3.0
	gridSize = 300 // log-spaced α values of the grid search
)

// ErrUndetermined is wrapped by every refusal of Fit: the data cannot determine the law.
var ErrUndetermined = errors.New("the data do not determine L = E + A·x^(−α)")

// ErrNegativeE is wrapped (beside ErrUndetermined) by Fit's refusal of a best fit with E < 0: a loss cannot
// fall below zero, so such a law describes only the fitted range and its N_eff readings are artefacts (docs/definitions.md §7:
// E ≥ 0 and α > 0).
var ErrNegativeE = errors.New("the best fit has E < 0")

// Fit fits L(x) = E + A·x^(−α) to points by least squares (unweighted, over all points; with equally many
// seeds per size this equals the fit to the per-size means). Method (variable projection): for fixed α the
// model is linear in E and A, solved in closed form; the residual sum of squares S(α) of that solution is
// evaluated on a log-spaced grid of α in [AlphaMin, AlphaMax], and the best grid cell is refined by golden-
// section search, which converges to the joint least-squares optimum of (E, A, α). x is scaled by its
// geometric mean inside so that x^(−α) stays near 1.
//
// Fit refuses, with an error wrapping ErrUndetermined, when there are fewer than MinSizes distinct x, when
// the losses do not decrease from the smallest to the largest x (flat or rising: no A > 0 fits), when no α
// gives A > 0, or when the best α is at either end of the search range (the curvature, hence E, is not
// determined: a straight line in log x fits as well as any power law), or when the least-squares optimum has
// E < 0 (docs/definitions.md §7 constrains E ≥ 0; choice: Fit refuses such data, wrapping ErrNegativeE, rather than refit
// with E pinned at the boundary 0, because an optimum beyond the boundary means the sizes do not show the
// law's curvature; α > 0 holds by the search range).
func Fit(points []Point) (Law, error) {
	n := len(points)
	distinct := map[float64][]float64{}
	for _, p := range points {
		if !(p.X > 0) || math.IsInf(p.X, 0) || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
			return Law{}, fmt.Errorf("fit: point (%g, %g): x must be positive and the loss finite", p.X, p.Y)
		}
		distinct[p.X] = append(distinct[p.X], p.Y)
	}
	if len(distinct) < MinSizes {
		return Law{}, fmt.Errorf("%w: %d distinct sizes, need at least %d (docs/definitions.md §4)", ErrUndetermined, len(distinct), MinSizes)
	}
	xs := make([]float64, 0, len(distinct))
	for x := range distinct {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	mean := func(v []float64) float64 {
		s := 0.0
		for _, y := range v {
			s += y
		}
		return s / float64(len(v))
	}
	first, last := mean(distinct[xs[0]]), mean(distinct[xs[len(xs)-1]])
	if !(last < first) {
		return Law{}, fmt.Errorf("%w: the loss does not decrease with size (%.4f at x = %.4g, %.4f at x = %.4g)", ErrUndetermined, first, xs[0], last, xs[len(xs)-1])
	}
	var ym, sst float64 // the points' mean loss and total sum of squares, for R²
	for _, p := range points {
		ym += p.Y
	}
	ym /= float64(n)
	for _, p := range points {
		sst += (p.Y - ym) * (p.Y - ym)
	}
	if math.IsInf(sst, 0) || math.IsNaN(sst) {
		return Law{}, fmt.Errorf("%w: the fit overflows float64 (the losses' sum of squares is %g): the points are out of any loss's range", ErrUndetermined, sst)
	}
	logMean := 0.0
	for _, p := range points {
		logMean += math.Log(p.X)
	}
	scale := math.Exp(logMean / float64(n))
	u := make([]float64, n) // log(x/scale)
	for i, p := range points {
		u[i] = math.Log(p.X / scale)
	}
	// solve returns E, A' (the coefficient of (x/scale)^(−α)) and the residual sum of squares at α.
	z := make([]float64, n)
	solve := func(alpha float64) (e, a, sse float64) {
		var zm, ym float64
		for i := range z {
			z[i] = math.Exp(-alpha * u[i])
			zm += z[i]
			ym += points[i].Y
		}
		zm /= float64(n)
		ym /= float64(n)
		var szz, szy float64
		for i := range z {
			szz += (z[i] - zm) * (z[i] - zm)
			szy += (z[i] - zm) * (points[i].Y - ym)
		}
		a = szy / szz
		e = ym - a*zm
		for i := range z {
			r := points[i].Y - e - a*z[i]
			sse += r * r
		}
		return e, a, sse
	}
	grid := make([]float64, gridSize)
	best, bestSSE := -1, math.Inf(1)
	for k := range grid {
		grid[k] = AlphaMin * math.Pow(AlphaMax/AlphaMin, float64(k)/float64(gridSize-1))
		if _, a, sse := solve(grid[k]); a > 0 && sse < bestSSE {
			best, bestSSE = k, sse
		}
	}
	switch {
	case best < 0:
		return Law{}, fmt.Errorf("%w: no α in [%g, %g] gives A > 0", ErrUndetermined, AlphaMin, AlphaMax)
	case best == 0 || best == gridSize-1:
		return Law{}, fmt.Errorf("%w: the best α is at the bound %g of the search range [%g, %g] (the losses are close to a straight line in log N, or too noisy, to fix the curvature and E)",
			ErrUndetermined, grid[best], AlphaMin, AlphaMax)
	}
	// Golden-section search for the minimum of S(α) in the bracket around the best grid point.
	lo, hi := grid[best-1], grid[best+1]
	g := (math.Sqrt(5) - 1) / 2
	c, d := hi-g*(hi-lo), lo+g*(hi-lo)
	_, _, fc := solve(c)
	_, _, fd := solve(d)
	for it := 0; it < 200 && hi-lo > 1e-13*hi; it++ {
		if fc < fd {
			hi, d, fd = d, c, fc
			c = hi - g*(hi-lo)
			_, _, fc = solve(c)
		} else {
			lo, c, fc = c, d, fd
			d = lo + g*(hi-lo)
			_, _, fd = solve(d)
		}
	}
	alpha := (lo + hi) / 2
	e, a, sse := solve(alpha)
	if e < 0 { // docs/definitions.md §7: E ≥ 0
		return Law{}, fmt.Errorf("%w: %w: E = %.4g, α = %.4g (docs/definitions.md §7 wants E ≥ 0: the sizes do not show where the loss levels off)", ErrUndetermined, ErrNegativeE, e, alpha)
	}
	law := Law{PowerLaw: PowerLaw{E: e, A: a * math.Pow(scale, alpha), Alpha: alpha}, Points: append([]Point(nil), points...)}
	law.Residuals = make([]float64, n)
	for i, p := range points {
		law.Residuals[i] = p.Y - law.Eval(p.X)
	}
	law.R2 = 1 - sse/sst
	law.RMSE = math.Sqrt(sse / float64(n))
	// Finite points far from any real loss (a corrupt table: values near 1e150 and beyond) can overflow the
	// sums above; a law with a non-finite parameter or statistic predicts nothing.
	for _, v := range append([]float64{law.E, law.A, law.Alpha, law.R2, law.RMSE}, law.Residuals...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Law{}, fmt.Errorf("%w: the fit overflows float64 (E = %g, A = %g, α = %g, R² = %g): the points are out of any loss's range", ErrUndetermined, law.E, law.A, law.Alpha, law.R2)
		}
	}
	return law, nil
}
