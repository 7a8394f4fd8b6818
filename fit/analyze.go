package fit

import (
	"errors"
	"fmt"
	"github.com/smallinit/smallinit/internal/finitejson"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Options say which rows and columns of a table Analyze uses.
type Options struct {
	Baseline  Selector // the baseline arm (empty: every row)
	Treated   Selector // the treated arm (nil: none; only the baseline's law is fitted)
	SizeKey   string   // column of the model size N (default "N", non-embedding parameters)
	DataKey   string   // column of the token budget D (default "tokens"; a table without it has one budget)
	LossKey   string   // column of the loss (default "val_loss")
	SeedKeys  []string // columns that tell the seeds of one configuration apart (default ["seed"])
	Bootstrap int      // bootstrap resamples over seeds (0: no intervals)
	Seed      uint64   // the bootstrap's random seed
}

// Report is Analyze's result: the laws it fitted and the treated arm's gains.
type Report struct {
	LossKey  string   `json:"loss_key"`
	SizeKey  string   `json:"size_key"`
	DataKey  string   `json:"data_key,omitempty"`
	Baseline string   `json:"baseline"`
	Treated  string   `json:"treated,omitempty"`
	Skipped  int      `json:"skipped_unfinished"` // rows whose state column is not "done"
	Laws     []LawFit `json:"laws"`
}

// LawFit is one law fitted on the baseline: L(N) at one token budget ("size"), or L(D) at one size ("data"), or
// L(N) along a ladder at constant tokens per parameter ("size" with FixedKey "tokens/N", the ratio in Fixed).
type LawFit struct {
	Kind      string        `json:"kind"`       // "size" (x = N) or "data" (x = D)
	XKey      string        `json:"x_key"`      // the column of x
	FixedKey  string        `json:"fixed_key"`  // the column held fixed
	Fixed     float64       `json:"fixed"`      // its value
	Baseline  []Cell        `json:"baseline"`   // the baseline's mean losses, one per x
	Law       *Law          `json:"law"`        // nil when the fit was refused
	Params    []Interval    `json:"params_ci"`  // bootstrap intervals of E, A, α
	Treated   []Gain        `json:"treated"`    // the treated arm's points at the same fixed value
	Bootstrap *Bootstrapped `json:"bootstrap"`  // nil without --bootstrap or a fit
	Error     string        `json:"error"`      // why the law was not fitted
	BootError string        `json:"boot_error"` // why the bootstrap failed
}

// Cell is the mean loss of one configuration over its seeds.
type Cell struct {
	X        float64   `json:"x"`
	Loss     float64   `json:"loss"`   // mean over seeds
	Losses   []float64 `json:"losses"` // per seed
	IDs      []string  `json:"ids"`
	Fitted   float64   `json:"fitted"`   // the law at X (0 without a law)
	Residual float64   `json:"residual"` // Loss − Fitted
}

// Gain is a treated point read through the baseline's law (docs/definitions.md §4): x_eff = (A/(L − E))^(1/α) and
// gain = x_eff/x − 1, for its mean loss over seeds and for each of its runs.
type Gain struct {
	Cell
	Eff   float64   `json:"eff"`  // N_eff (size law) or D_eff (data law)
	Gain  float64   `json:"gain"` // Eff/X − 1
	CI    *Interval `json:"gain_ci"`
	Runs  []RunGain `json:"runs"`
	Error string    `json:"error"` // the refusal (L ≤ E)
}

// RunGain is one treated run's effective size and gain.
type RunGain struct {
	ID   string  `json:"id"`
	Loss float64 `json:"loss"`
	Eff  float64 `json:"eff"`
	Gain float64 `json:"gain"`
}

// MarshalJSON writes non-finite numbers (a law that overflows where it is evaluated) as null.
func (c Cell) MarshalJSON() ([]byte, error) { return finitejson.Marshal(c) }

// MarshalJSON writes non-finite numbers (an unbounded or undefined N_eff) as null.
func (g Gain) MarshalJSON() ([]byte, error) { return finitejson.Marshal(g) }

// MarshalJSON writes non-finite bounds (an interval reaching an unbounded N_eff) as null.
func (iv Interval) MarshalJSON() ([]byte, error) { return finitejson.Marshal(iv) }

func (o *Options) defaults() {
	if o.SizeKey == "" {
		o.SizeKey = "N"
	}
	if o.DataKey == "" {
		o.DataKey = "tokens"
	}
	if o.LossKey == "" {
		o.LossKey = "val_loss"
	}
	if o.SeedKeys == nil {
		o.SeedKeys = []string{"seed"}
	}
}

// Analyze fits docs/definitions.md §4's laws on the table's baseline rows and reads the treated rows through them.
//
// Rows with a "state" column other than "done" are skipped. Rows of one arm with the same size and budget are
// the seeds of one configuration: they must agree on every axis column but the seed columns (else the arm is
// ambiguous and Analyze asks for a narrower selector), and the law is fitted to their mean loss. For each token
// budget D at which the baseline has more than one size (or the only budget), L(N) = E + A·N^(−α) is fitted
// and each treated configuration at that D gets N_eff and gain = N_eff/N − 1; for each size at which the
// baseline has more than one budget, L(D) = E + B·D^(−β) likewise gives D_eff and D_eff/D − 1. A baseline where
// no budget has two sizes and no size two budgets is a ladder whose budget grows with the size: at constant
// tokens per parameter (D/N within LadderRatioTolerance) L(N) is fitted along it and treated points at the same
// ratio get N_eff; otherwise the error wraps ErrBudgetFollowsSize. With
// Options.Bootstrap > 0, seeds are resampled within every configuration of both arms (Bootstrap), the law is
// refitted, and the gains recomputed, giving 95% percentile intervals.
//
// A law that cannot be fitted (fewer than 4 sizes, losses that do not fall, α at its bound) carries its
// refusal in LawFit.Error, a treated point at or below E in Gain.Error. The error is non-nil, with the
// report still filled in, when no law could be fitted or some treated point was refused.
func Analyze(t *Table, o Options) (*Report, error) {
	o.defaults()
	rep := &Report{LossKey: o.LossKey, SizeKey: o.SizeKey, Baseline: o.Baseline.String()}
	if o.Treated != nil {
		rep.Treated = o.Treated.String()
	}
	has := map[string]bool{}
	for _, c := range t.Columns {
		has[c] = true
	}
	for _, k := range []string{o.SizeKey, o.LossKey} {
		if !has[k] {
			return nil, fmt.Errorf("the table has no column %q (columns: %s)", k, strings.Join(t.Columns, ", "))
		}
	}
	if has[o.DataKey] {
		rep.DataKey = o.DataKey
	}
	if err := o.Baseline.check(t); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	if err := o.Treated.check(t); err != nil {
		return nil, fmt.Errorf("treated: %w", err)
	}
	var base, treated []map[string]string
	for i, r := range t.Rows {
		if s, ok := r["state"]; ok && has["state"] && s != "done" {
			rep.Skipped++
			continue
		}
		inBase, inTreated := o.Baseline.Match(r), o.Treated != nil && o.Treated.Match(r)
		if inBase && inTreated {
			return nil, fmt.Errorf("row %s matches both the baseline %s and the treated %s", rowName(r, i), o.Baseline, o.Treated)
		}
		if inBase {
			base = append(base, r)
		} else if inTreated {
			treated = append(treated, r)
		}
	}
	if len(base) == 0 {
		return nil, fmt.Errorf("no finished run matches the baseline %s", o.Baseline)
	}
	if o.Treated != nil && len(treated) == 0 {
		return nil, fmt.Errorf("no finished run matches the treated %s", o.Treated)
	}
	baseCells, err := cells(base, t.Axes, o, rep.DataKey, "baseline")
	if err != nil {
		return nil, err
	}
	treatedCells, err := cells(treated, t.Axes, o, rep.DataKey, "treated")
	if err != nil {
		return nil, err
	}

	// One size law per budget, one data law per size.
	byD, byN := map[float64][]cellKey{}, map[float64][]cellKey{}
	for k := range baseCells {
		byD[k.D] = append(byD[k.D], k)
		byN[k.N] = append(byN[k.N], k)
	}
	for _, d := range sortedKeys(byD) {
		if len(byD[d]) > 1 || len(byD) == 1 {
			rep.Laws = append(rep.Laws, fitLaw(sizeAxis(o, rep.DataKey, d), o, byD[d], baseCells, treatedCells))
		}
	}
	if rep.DataKey != "" {
		for _, n := range sortedKeys(byN) {
			if len(byN[n]) > 1 {
				rep.Laws = append(rep.Laws, fitLaw(dataAxis(o, rep.DataKey, n), o, byN[n], baseCells, treatedCells))
			}
		}
	}
	// No size shares a budget and no budget a size: a ladder whose budget grows with the size. At constant
	// tokens per parameter its losses are a size law along the ladder.
	var diverse bool
	if len(rep.Laws) == 0 && len(byN) > 1 {
		keys := make([]cellKey, 0, len(baseCells))
		for k := range baseCells {
			keys = append(keys, k)
		}
		ax, ok := ladderAxis(o, rep.DataKey, keys)
		if ok {
			rep.Laws = append(rep.Laws, fitLaw(ax, o, keys, baseCells, treatedCells))
		} else {
			diverse = true
		}
	}
	var problems []string
	fitted := 0
	for _, l := range rep.Laws {
		if l.Law != nil {
			fitted++
		}
		for _, g := range l.Treated {
			if g.Error != "" {
				problems = append(problems, fmt.Sprintf("treated point %s = %.4g: %s", l.XKey, g.X, g.Error))
			}
		}
	}
	if fitted == 0 {
		var why []string
		for _, l := range rep.Laws {
			why = append(why, fmt.Sprintf("%s law at %s = %.4g: %s", l.Kind, l.FixedKey, l.Fixed, l.Error))
		}
		switch {
		case diverse:
			lo, hi := ratioRange(baseCells)
			return rep, fmt.Errorf("no law could be fitted: %w: %s/%s runs from %.4g to %.4g across the baseline's %d sizes, so no budget has two sizes, no size two budgets, and the ratio is not constant (within %.0f%%) for a law along the ladder",
				ErrBudgetFollowsSize, rep.DataKey, o.SizeKey, lo, hi, len(byN), 100*LadderRatioTolerance)
		case len(why) == 0:
			why = append(why, "the baseline has one configuration: nothing varies")
		}
		return rep, fmt.Errorf("no law could be fitted: %s", strings.Join(why, "; "))
	}
	if len(problems) > 0 {
		return rep, errors.New(strings.Join(problems, "; "))
	}
	return rep, nil
}

// cellKey identifies a configuration by size and budget.
type cellKey struct{ N, D float64 }

func rowName(r map[string]string, i int) string {
	if id := r["id"]; id != "" {
		return id
	}
	return fmt.Sprintf("%d", i+1)
}

// cells groups an arm's rows by (N, D), checking that rows of a group differ only in seed columns.
func cells(rows []map[string]string, axes []string, o Options, dataKey, arm string) (map[cellKey]*Cell, error) {
	out := map[cellKey]*Cell{}
	first := map[cellKey]map[string]string{}
	num := func(r map[string]string, i int, key string) (float64, error) {
		x, err := strconv.ParseFloat(r[key], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%s row %s: %s = %q is not a number", arm, rowName(r, i), key, r[key])
		}
		return x, nil
	}
	ignore := map[string]bool{o.SizeKey: true, dataKey: true}
	for _, k := range o.SeedKeys {
		ignore[k] = true
	}
	for i, r := range rows {
		var k cellKey
		var err error
		if k.N, err = num(r, i, o.SizeKey); err != nil {
			return nil, err
		}
		if dataKey != "" {
			if k.D, err = num(r, i, dataKey); err != nil {
				return nil, err
			}
		}
		loss, err := num(r, i, o.LossKey)
		if err != nil {
			return nil, err
		}
		c := out[k]
		if c == nil {
			c = &Cell{X: k.N}
			out[k], first[k] = c, r
		} else {
			for _, a := range axes {
				if !ignore[a] && !sameValue(r[a], first[k][a]) {
					return nil, fmt.Errorf("%s rows %s and %s have the same %s and %s but differ in %s (%s vs %s), not only in %s: narrow the selector (e.g. add ,%s=%s)",
						arm, rowName(first[k], 0), rowName(r, i), o.SizeKey, orNone(dataKey), a, first[k][a], r[a], strings.Join(o.SeedKeys, "/"), a, first[k][a])
				}
			}
		}
		c.Losses = append(c.Losses, loss)
		c.IDs = append(c.IDs, rowName(r, i))
	}
	for _, c := range out {
		c.Loss = mean(c.Losses)
	}
	return out, nil
}

func orNone(s string) string {
	if s == "" {
		return "budget"
	}
	return s
}

// mean is the arithmetic mean of finite values. A plain sum can overflow for values near ±MaxFloat64 (a
// hostile or corrupt table); then the terms are scaled by the largest magnitude before summing, and the result
// is clamped to [min, max], where any mean lies, so that rounding cannot carry it out of range.
func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	if r := s / float64(len(v)); !math.IsInf(r, 0) {
		return r
	}
	lo, hi, m := v[0], v[0], 0.0
	for _, x := range v {
		lo, hi, m = min(lo, x), max(hi, x), max(m, math.Abs(x))
	}
	s = 0
	for _, x := range v {
		s += x / m
	}
	return min(max(s/float64(len(v))*m, lo), hi)
}

func sortedKeys(m map[float64][]cellKey) []float64 {
	out := make([]float64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Float64s(out)
	return out
}

// ErrBudgetFollowsSize is Analyze's refusal of a baseline whose token budget changes with its size but not in
// proportion: no law holds N, D or D/N fixed. Fitting L(N) with the budgets ignored (Options.DataKey a column
// the table lacks) is the caller's choice to offer.
var ErrBudgetFollowsSize = errors.New("the baseline's token budget changes with its size")

// LadderRatioTolerance is how far (relative, largest over smallest − 1) the tokens per parameter D/N of a
// ladder's sizes may spread and still count as one constant ratio: a ladder's step counts are whole numbers, so
// D/N at a target of 20 comes out 19.9 at one size and 20.1 at another.
const LadderRatioTolerance = 0.05

// axis is what one law holds fixed and fits along: its LawFit fields, the cell's x, and which treated cells
// lie on it.
type axis struct {
	kind, xKey, fixedKey string
	fixed                float64
	x                    func(cellKey) float64
	on                   func(cellKey) bool
}

// sizeAxis is L(N) at the budget d.
func sizeAxis(o Options, dataKey string, d float64) axis {
	return axis{"size", o.SizeKey, dataKey, d, func(k cellKey) float64 { return k.N }, func(k cellKey) bool { return k.D == d }}
}

// dataAxis is L(D) at the size n.
func dataAxis(o Options, dataKey string, n float64) axis {
	return axis{"data", dataKey, o.SizeKey, n, func(k cellKey) float64 { return k.D }, func(k cellKey) bool { return k.N == n }}
}

// ladderAxis is L(N) along a ladder at constant tokens per parameter (a size law whose fixed column is
// "tokens/N", its value the ratios' geometric mean): false when the keys' D/N spread more than
// LadderRatioTolerance. A treated cell lies on it when its own D/N is within the tolerance of the ratio; its
// N_eff is then the size that, trained at the same tokens per parameter, would reach its loss.
func ladderAxis(o Options, dataKey string, keys []cellKey) (axis, bool) {
	if dataKey == "" || len(keys) == 0 {
		return axis{}, false
	}
	lo, hi, logSum := math.Inf(1), math.Inf(-1), 0.0
	for _, k := range keys {
		r := k.D / k.N
		if !(r > 0) || math.IsInf(r, 0) {
			return axis{}, false
		}
		lo, hi, logSum = min(lo, r), max(hi, r), logSum+math.Log(r)
	}
	if hi/lo-1 > LadderRatioTolerance {
		return axis{}, false
	}
	ratio := math.Exp(logSum / float64(len(keys)))
	on := func(k cellKey) bool {
		r := k.D / k.N
		return max(r/ratio, ratio/r)-1 <= LadderRatioTolerance
	}
	return axis{"size", o.SizeKey, dataKey + "/" + o.SizeKey, ratio, func(k cellKey) float64 { return k.N }, on}, true
}

// ratioRange is the smallest and largest D/N of the cells.
func ratioRange(cells map[cellKey]*Cell) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for k := range cells {
		lo, hi = min(lo, k.D/k.N), max(hi, k.D/k.N)
	}
	return lo, hi
}

// fitLaw fits one law along ax on the baseline cells keys and reads the treated cells on ax through it.
func fitLaw(ax axis, o Options, keys []cellKey, base, treated map[cellKey]*Cell) LawFit {
	lf := LawFit{Kind: ax.kind, XKey: ax.xKey, FixedKey: ax.fixedKey, Fixed: ax.fixed}
	x, onLaw := ax.x, ax.on
	sort.Slice(keys, func(i, j int) bool { return x(keys[i]) < x(keys[j]) })
	pts := make([]Point, len(keys))
	var groups [][]float64
	for i, k := range keys {
		c := *base[k]
		c.X = x(k)
		lf.Baseline = append(lf.Baseline, c)
		pts[i] = Point{X: c.X, Y: c.Loss}
		groups = append(groups, c.Losses)
	}
	var tkeys []cellKey
	for k := range treated {
		if onLaw(k) {
			tkeys = append(tkeys, k)
		}
	}
	sort.Slice(tkeys, func(i, j int) bool { return x(tkeys[i]) < x(tkeys[j]) })
	for _, k := range tkeys {
		c := *treated[k]
		c.X = x(k)
		lf.Treated = append(lf.Treated, Gain{Cell: c})
		groups = append(groups, c.Losses)
	}
	law, err := Fit(pts)
	if err != nil {
		lf.Error = err.Error()
		for i := range lf.Treated {
			lf.Treated[i].Eff, lf.Treated[i].Gain = math.NaN(), math.NaN()
		}
		return lf
	}
	lf.Law = &law
	for i := range lf.Baseline {
		c := &lf.Baseline[i]
		c.Fitted = law.Eval(c.X)
		c.Residual = c.Loss - c.Fitted
	}
	gain := func(p PowerLaw, xv, loss float64) (eff, g float64, err error) {
		eff, err = p.EffectiveSize(loss)
		return eff, eff/xv - 1, err
	}
	for i := range lf.Treated {
		g := &lf.Treated[i]
		g.Fitted = law.Eval(g.X)
		g.Residual = g.Loss - g.Fitted
		var err error
		if g.Eff, g.Gain, err = gain(law.PowerLaw, g.X, g.Loss); err != nil {
			g.Error = err.Error()
		}
		for j, id := range g.IDs {
			eff, gn, _ := gain(law.PowerLaw, g.X, g.Losses[j])
			g.Runs = append(g.Runs, RunGain{ID: id, Loss: g.Losses[j], Eff: eff, Gain: gn})
		}
	}
	if o.Bootstrap <= 0 {
		return lf
	}
	nb := len(keys)
	bs, err := Bootstrap(groups, o.Bootstrap, o.Seed, Level95, func(means []float64) ([]float64, error) {
		p := make([]Point, nb)
		for i := range p {
			p[i] = Point{X: pts[i].X, Y: means[i]}
		}
		l, err := Fit(p)
		if err != nil {
			return nil, err
		}
		out := []float64{l.E, l.A, l.Alpha}
		for i, g := range lf.Treated {
			_, gn, _ := gain(l.PowerLaw, g.X, means[nb+i]) // +Inf beyond the asymptote: kept
			out = append(out, gn)
		}
		return out, nil
	})
	if err != nil {
		lf.BootError = err.Error()
		return lf
	}
	lf.Bootstrap = &bs
	if len(bs.Intervals) >= 3 {
		lf.Params = bs.Intervals[:3]
		for i := range lf.Treated {
			iv := bs.Intervals[3+i]
			lf.Treated[i].CI = &iv
		}
	}
	return lf
}

// WriteText prints the report: per law, its parameters with their intervals, the baseline's points and
// residuals, and the treated points' effective sizes and gains.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "loss %s; baseline %s", r.LossKey, r.Baseline)
	if r.Treated != "" {
		fmt.Fprintf(w, "; treated %s", r.Treated)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(w, "; %d unfinished runs skipped", r.Skipped)
	}
	fmt.Fprintln(w)
	for _, l := range r.Laws {
		x, eff, sym, what := "N", "N_eff", "α", "sizes"
		if l.Kind == "data" {
			x, eff, sym, what = "D", "D_eff", "β", "budgets"
		}
		fmt.Fprintf(w, "\n%s law L(%s) = E + A·%s^(−%s) on %d baseline %s (column %s)", l.Kind, x, x, sym, len(l.Baseline), what, l.XKey)
		if l.FixedKey != "" {
			fmt.Fprintf(w, " at %s = %.6g", l.FixedKey, l.Fixed)
		}
		fmt.Fprintln(w, ":")
		if l.Law == nil {
			fmt.Fprintf(w, "  not fitted: %s\n", l.Error)
		} else {
			ci := func(i int) string {
				if len(l.Params) <= i {
					return ""
				}
				return fmt.Sprintf(" [%s, %s]", num(l.Params[i].Lo), num(l.Params[i].Hi))
			}
			fmt.Fprintf(w, "  E = %.4f%s   A = %.4g%s   %s = %.4f%s   R² = %.5f   RMSE = %.2g\n",
				l.Law.E, ci(0), l.Law.A, ci(1), sym, l.Law.Alpha, ci(2), l.Law.R2, l.Law.RMSE)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  baseline %s\tseeds\tloss\tfit\tresidual\t\n", x)
		for _, c := range l.Baseline {
			fmt.Fprintf(tw, "  %.6g\t%d\t%.4f\t%s\t%s\t\n", c.X, len(c.Losses), c.Loss, fitted(l, "%.4f", c.Fitted), fitted(l, "%+.4f", c.Residual))
		}
		tw.Flush()
		if len(l.Treated) > 0 {
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "  treated %s\tseeds\tloss\t%s\tgain\t95%% interval\t\n", x, eff)
			for _, g := range l.Treated {
				iv := ""
				if g.CI != nil {
					iv = fmt.Sprintf("[%s, %s]", pct(g.CI.Lo), pct(g.CI.Hi))
				}
				fmt.Fprintf(tw, "  %.6g\t%d\t%.4f\t%s\t%s\t%s\t\n", g.X, len(g.Losses), g.Loss, num(g.Eff), pct(g.Gain), iv)
			}
			tw.Flush()
			for _, g := range l.Treated {
				if g.Error != "" {
					fmt.Fprintf(w, "  refused at %s = %.6g: %s\n", x, g.X, g.Error)
				}
			}
		}
		if l.Bootstrap != nil {
			fmt.Fprintf(w, "  intervals: %d%% percentile, %d bootstrap resamples of seeds within each configuration (%d refits refused)\n",
				int(math.Round(100*l.Bootstrap.Level)), l.Bootstrap.Reps, l.Bootstrap.Failed)
		}
		if l.BootError != "" {
			fmt.Fprintf(w, "  no intervals: %s\n", l.BootError)
		}
	}
	return nil
}

func fitted(l LawFit, format string, v float64) string {
	if l.Law == nil {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

func num(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.4g", x)
}

func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return num(x)
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}
