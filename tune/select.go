package tune

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Trainer trains one arm for steps steps at peak learning rate lr (from scratch: the schedule depends on the
// total steps) and returns its loss on the LR-selection slice. A diverged run may return NaN or ±Inf: that
// trial counts as the worst loss, not as an error. An error stops the search.
type Trainer func(lr float64, steps int) (loss float64, err error)

// Options configure Select. The zero values of Factor, Eta, Keep and MaxExtend take the defaults below.
type Options struct {
	Center    float64 // a value of the initial grid, near where the optimum is expected (e.g. 4e-3)
	Values    int     // initial grid size, ≥ 4 (at least 4 values): Center·Factor^k for k = −⌊Values/2⌋ …
	Factor    float64 // ratio of neighbouring values; default 2 (docs/definitions.md §7: log-spaced, factor 2)
	MinSteps  int     // the first rung's budget per trial
	MaxSteps  int     // the last rung's budget per trial (≥ MinSteps)
	Eta       int     // halving rate: each rung keeps 1/Eta of the trials and multiplies their steps by Eta; default 3
	Keep      int     // trials kept at least per rung, so the last rung still brackets its best; default 3
	MaxExtend int     // values added at most per rung to bracket the best (grid extension); default 3
	MinLR     float64 // no value below this is tried (0: no bound)
	MaxLR     float64 // no value above this is tried (0: no bound)
}

// Defaults of Options.
const (
	DefaultFactor    = 2
	DefaultEta       = 3
	DefaultKeep      = 3
	DefaultMaxExtend = 3
	MinValues        = 4
)

// Point is one trial: a learning rate trained for Steps steps and its selection loss (+Inf when it diverged).
type Point struct {
	LR    float64 `json:"lr"`
	Steps int     `json:"steps"`
	Loss  float64 `json:"loss"` // +Inf for a diverged trial; see MarshalJSON
}

// Result is Select's outcome.
type Result struct {
	LR   float64 `json:"lr"`   // the chosen learning rate: the best of the last rung
	Loss float64 `json:"loss"` // its selection loss at MaxSteps
	// Bracketed is true when the chosen value's two neighbours on the grid were trained at MaxSteps too and
	// were worse (or diverged): the optimum lies inside the grid. False means the search stopped at MinLR,
	// MaxLR or MaxExtend with the best at an edge, which the report must say.
	Bracketed bool    `json:"bracketed"`
	Curve     []Point `json:"curve"`       // every trial, sorted by steps and then learning rate
	Steps     int     `json:"steps_spent"` // training steps spent, the sum of Curve's Steps
}

func (o Options) withDefaults() Options {
	if o.Factor == 0 {
		o.Factor = DefaultFactor
	}
	if o.Eta == 0 {
		o.Eta = DefaultEta
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	if o.MaxExtend == 0 {
		o.MaxExtend = DefaultMaxExtend
	}
	return o
}

// Validate reports options Select cannot run.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case !(o.Center > 0) || math.IsInf(o.Center, 0):
		return fmt.Errorf("tune: center learning rate %g: must be positive and finite", o.Center)
	case o.Values < MinValues:
		return fmt.Errorf("tune: %d grid values: need at least %d", o.Values, MinValues)
	case !(o.Factor > 1) || math.IsInf(o.Factor, 0):
		return fmt.Errorf("tune: grid factor %g: must be > 1", o.Factor)
	case o.MinSteps < 1 || o.MaxSteps < o.MinSteps:
		return fmt.Errorf("tune: steps %d to %d: need 1 ≤ MinSteps ≤ MaxSteps", o.MinSteps, o.MaxSteps)
	case o.Eta < 2:
		return fmt.Errorf("tune: halving rate %d: must be ≥ 2", o.Eta)
	case o.Keep < 3:
		return fmt.Errorf("tune: keep %d: must be ≥ 3 so that the last rung brackets its best", o.Keep)
	case o.MaxExtend < 0:
		return fmt.Errorf("tune: max extension %d: must be ≥ 0", o.MaxExtend)
	case o.MinLR < 0 || o.MaxLR < 0 || (o.MaxLR > 0 && o.MaxLR < o.MinLR):
		return fmt.Errorf("tune: learning-rate bounds [%g, %g]: need 0 ≤ MinLR ≤ MaxLR (0: no bound)", o.MinLR, o.MaxLR)
	case o.MinLR > 0 && o.Center < o.MinLR, o.MaxLR > 0 && o.Center > o.MaxLR:
		return fmt.Errorf("tune: center %g outside the bounds [%g, %g]", o.Center, o.MinLR, o.MaxLR)
	}
	return nil
}

// Rungs returns the steps per trial of each rung: MinSteps·Eta^r, the last one MaxSteps.
func (o Options) Rungs() []int {
	o = o.withDefaults()
	var out []int
	for s := o.MinSteps; s < o.MaxSteps; s *= o.Eta {
		out = append(out, s)
	}
	return append(out, o.MaxSteps)
}

// WorstCaseSteps is the most training steps Select can spend with these options (every rung extended by
// MaxExtend values): what a plan prints and budgets. Select never spends more.
func (o Options) WorstCaseSteps() int {
	o = o.withDefaults()
	total, n := 0, o.Values
	for r, s := range o.Rungs() {
		if r > 0 {
			n = max(o.Keep, ceilDiv(n, o.Eta))
		}
		total += (n + o.MaxExtend) * s
		n += o.MaxExtend
	}
	return total
}

// WorstCaseTrials is the most trials (trainings of one value for one rung) Select can run with these options:
// what a plan charges each trial's fixed cost (initialisation, evaluation, checkpoints) by.
func (o Options) WorstCaseTrials() int {
	o = o.withDefaults()
	total, n := 0, o.Values
	for r := range o.Rungs() {
		if r > 0 {
			n = max(o.Keep, ceilDiv(n, o.Eta))
		}
		total += n + o.MaxExtend
		n += o.MaxExtend
	}
	return total
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Select runs successive halving over the grid. Rung 0 trains every grid value for MinSteps; each later rung
// keeps the best max(Keep, ⌈n/Eta⌉) values of the rung before and trains them for Eta times the steps, the
// last for MaxSteps. At every rung the best value's two grid neighbours are trained too where they were not
// (beyond the grid's edge: the grid is extended), up to MaxExtend values per rung, so the best of the last rung
// is bracketed by worse neighbours trained just as long. Ties go to the smaller learning rate.
func Select(o Options, train Trainer) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	o = o.withDefaults()
	lo := -(o.Values / 2)
	lr := func(k int) float64 { return o.Center * math.Pow(o.Factor, float64(k)) }
	inBounds := func(k int) bool {
		v := lr(k)
		return (o.MinLR == 0 || v >= o.MinLR*(1-1e-9)) && (o.MaxLR == 0 || v <= o.MaxLR*(1+1e-9))
	}
	var res Result
	alive := []int{}
	for k := lo; k < lo+o.Values; k++ {
		if inBounds(k) {
			alive = append(alive, k)
		}
	}
	if len(alive) < MinValues {
		return res, fmt.Errorf("tune: only %d of the %d grid values around %g lie inside [%g, %g]", len(alive), o.Values, o.Center, o.MinLR, o.MaxLR)
	}
	rungs := o.Rungs()
	for r, steps := range rungs {
		if r > 0 {
			// alive holds the previous rung's values, best first.
			alive = alive[:min(len(alive), max(o.Keep, ceilDiv(len(alive), o.Eta)))]
		}
		loss := map[int]float64{}
		run := func(k int) error {
			v, err := train(lr(k), steps)
			if err != nil {
				return fmt.Errorf("tune: lr %g, %d steps: %w", lr(k), steps, err)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = math.Inf(1)
			}
			loss[k] = v
			res.Curve = append(res.Curve, Point{LR: lr(k), Steps: steps, Loss: v})
			res.Steps += steps
			return nil
		}
		for _, k := range alive {
			if err := run(k); err != nil {
				return res, err
			}
		}
		// Bracket the best: train its missing neighbours, within bounds and MaxExtend.
		best := func() int {
			b, ok := 0, false
			for k, v := range loss {
				if !ok || v < loss[b] || (v == loss[b] && k < b) {
					b, ok = k, true
				}
			}
			return b
		}
		bracketed := false
		for added := 0; ; {
			b := best()
			missing := []int{}
			for _, k := range []int{b - 1, b + 1} {
				if _, ok := loss[k]; !ok && inBounds(k) {
					missing = append(missing, k)
				}
			}
			_, left := loss[b-1]
			_, right := loss[b+1]
			bracketed = left && right
			if len(missing) == 0 || added >= o.MaxExtend {
				break
			}
			if err := run(missing[0]); err != nil {
				return res, err
			}
			added++
		}
		alive = alive[:0]
		for k := range loss {
			alive = append(alive, k)
		}
		slices.SortFunc(alive, func(a, b int) int { return cmp.Or(cmp.Compare(loss[a], loss[b]), cmp.Compare(a, b)) })
		if r == len(rungs)-1 {
			res.LR, res.Loss, res.Bracketed = lr(alive[0]), loss[alive[0]], bracketed && !math.IsInf(loss[alive[0]], 1)
		}
	}
	slices.SortStableFunc(res.Curve, func(a, b Point) int { return cmp.Or(cmp.Compare(a.Steps, b.Steps), cmp.Compare(a.LR, b.LR)) })
	return res, nil
}
