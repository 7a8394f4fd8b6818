package fit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Interval is a bootstrap percentile interval.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Bootstrapped is the outcome of Bootstrap.
type Bootstrapped struct {
	Reps      int         `json:"reps"`      // resamples drawn
	Failed    int         `json:"failed"`    // resamples whose statistic could not be computed (e.g. a refused refit)
	Level     float64     `json:"level"`     // confidence level of the intervals
	Intervals []Interval  `json:"intervals"` // one per component of the statistic
	Samples   [][]float64 `json:"-"`         // per component, the successful resamples' values
}

// Level95 is the confidence level of the intervals reported (docs/definitions.md §4 asks for a bootstrap interval; 95% percentile).
const Level95 = 0.95

// Bootstrap resamples seeds: each group holds one cell's values over seeds (the losses of one size of the
// baseline, or of one treated point), and each of reps resamples draws every group's values with
// replacement (same count, within the group: a size never borrows another size's seeds), passes the
// resampled group means to stat, and collects the statistic's components. The intervals are the
// percentile intervals at level over the resamples where stat succeeded; components may be ±Inf (an N_eff
// beyond the law's asymptote) and are kept, NaN components are dropped. More than half of the resamples
// failing is an error. seed makes the result reproducible. A group of one value never varies: with one seed
// per size the intervals only reflect the other groups.
func Bootstrap(groups [][]float64, reps int, seed uint64, level float64, stat func(means []float64) ([]float64, error)) (Bootstrapped, error) {
	b := Bootstrapped{Reps: reps, Level: level}
	if reps < 1 {
		return b, errors.New("bootstrap: reps must be ≥ 1")
	}
	if !(level > 0 && level < 1) {
		return b, fmt.Errorf("bootstrap: level %g: want a value in (0, 1)", level)
	}
	for i, g := range groups {
		if len(g) == 0 {
			return b, fmt.Errorf("bootstrap: group %d is empty", i)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	means := make([]float64, len(groups))
	for range reps {
		for i, g := range groups {
			s := 0.0
			for range g {
				s += g[rng.IntN(len(g))]
			}
			means[i] = s / float64(len(g))
		}
		v, err := stat(means)
		if err != nil {
			b.Failed++
			continue
		}
		if b.Samples == nil {
			b.Samples = make([][]float64, len(v))
		}
		for k, x := range v {
			if k < len(b.Samples) && !math.IsNaN(x) {
				b.Samples[k] = append(b.Samples[k], x)
			}
		}
	}
	if 2*b.Failed > reps {
		return b, fmt.Errorf("bootstrap: %d of %d resamples could not be refitted", b.Failed, reps)
	}
	b.Intervals = make([]Interval, len(b.Samples))
	for k, s := range b.Samples {
		sort.Float64s(s)
		b.Intervals[k] = Interval{Lo: Quantile(s, (1-level)/2), Hi: Quantile(s, (1+level)/2)}
	}
	return b, nil
}

// Quantile is the q-quantile of sorted values by linear interpolation between order statistics (type 7, R's
// and NumPy's default); NaN for no values. Next to an infinite value it returns the nearer order statistic.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := q * float64(n-1)
	i := int(math.Floor(h))
	if i >= n-1 {
		return sorted[n-1]
	}
	if i < 0 {
		return sorted[0]
	}
	a, b, f := sorted[i], sorted[i+1], h-float64(i)
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		if f < 0.5 {
			return a
		}
		return b
	}
	return a + f*(b-a)
}
