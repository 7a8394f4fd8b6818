package stats

import (
	"github.com/smallinit/smallinit/internal/finitejson"
	"math"
	"slices"
)

// Power is the power at which MDE is stated (choice: 80%, the usual convention).
const Power = 0.8

// BySeed is one arm's value per seed (a final model's validation loss, a per-seed slope). Two arms are
// compared seed by seed: the same seed gives the same data order and the same normalised init draws (docs/definitions.md §7).
type BySeed map[int]float64

// Diff is the seed-by-seed difference of two arms.
type Diff struct {
	Seeds   []int     `json:"seeds"`             // the seeds both arms have, ascending
	Values  []float64 `json:"values"`            // x[s] − y[s] per seed of Seeds
	Missing []int     `json:"missing,omitempty"` // seeds only one arm has, or with a non-finite value in either
}

// Paired is x − y seed by seed over the seeds both have with finite values (docs/definitions.md §7: compare arms paired by
// seed). A seed without its partner, or whose value is NaN or infinite in either arm (a diverged run), is
// listed in Missing and enters no difference.
func Paired(x, y BySeed) Diff {
	var d Diff
	seen := map[int]bool{}
	for _, m := range []BySeed{x, y} {
		for s := range m {
			if seen[s] {
				continue
			}
			seen[s] = true
			a, okA := x[s]
			b, okB := y[s]
			if okA && okB && finite(a) && finite(b) {
				d.Seeds = append(d.Seeds, s)
			} else {
				d.Missing = append(d.Missing, s)
			}
		}
	}
	slices.Sort(d.Seeds)
	slices.Sort(d.Missing)
	d.Values = make([]float64, len(d.Seeds))
	for i, s := range d.Seeds {
		d.Values[i] = x[s] - y[s]
	}
	return d
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Estimate is the mean of per-seed values with its t-interval on n − 1 degrees of freedom (docs/definitions.md §7), the
// two-sided p-value of "the mean is 0", and the smallest effect the comparison could have detected.
// With fewer than two values there is no estimate of the noise between seeds: SD, SE, T, Lo, Hi, P and MDE are
// NaN (null in JSON).
type Estimate struct {
	Seeds  []int     `json:"seeds,omitempty"`
	Values []float64 `json:"values"` // per seed
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	SD     float64   `json:"sd"`     // sample standard deviation over seeds (n − 1 in the denominator)
	SE     float64   `json:"se"`     // SD/√n
	DF     int       `json:"df"`     // n − 1
	Alpha  float64   `json:"alpha"`  // two-sided level: [Lo, Hi] covers the true mean with probability 1 − Alpha
	T      float64   `json:"t"`      // the critical value t_{1−α/2, df} of the interval (not the statistic: TStat)
	TStat  float64   `json:"t_stat"` // the observed statistic Mean/SE (±Inf when SE = 0 and Mean ≠ 0)
	Lo     float64   `json:"lo"`     // Mean − T·SE
	Hi     float64   `json:"hi"`     // Mean + T·SE
	P      float64   `json:"p"`      // two-sided p-value of the mean being 0: 2·(1 − F_df(|Mean|/SE))
	// MDE is the minimum detectable effect: the true mean that a two-sided level-α t-test on these n seeds
	// would detect with probability Power, taking the measured SE as the true one, computed exactly from the
	// noncentral t (MDEMultiplier; the shortcut (t_{1−α/2} + t_{Power})·SE understates it at few seeds). A
	// verdict "inconclusive" with |Mean| < MDE says the budget could not have seen an effect that small; every
	// verdict states it (docs/definitions.md §7, "Power and the minimum detectable effect").
	MDE float64 `json:"mde"`
}

// Mean estimates the mean of values (one per seed, in the order of seeds; seeds may be nil) at two-sided level
// alpha ∈ (0, 1).
func Mean(values []float64, seeds []int, alpha float64) Estimate {
	n := len(values)
	e := Estimate{Seeds: seeds, Values: values, N: n, DF: n - 1, Alpha: alpha, Mean: math.NaN()}
	nan := math.NaN()
	e.SD, e.SE, e.T, e.TStat, e.Lo, e.Hi, e.P, e.MDE = nan, nan, nan, nan, nan, nan, nan, nan
	if n == 0 {
		e.DF = 0
		return e
	}
	e.Mean = 0
	for _, v := range values {
		e.Mean += v
	}
	e.Mean /= float64(n)
	if n < 2 {
		return e
	}
	var ss float64
	for _, v := range values {
		ss += (v - e.Mean) * (v - e.Mean)
	}
	df := float64(n - 1)
	e.SD = math.Sqrt(ss / df)
	e.SE = e.SD / math.Sqrt(float64(n))
	e.T = TQuantile(1-alpha/2, df)
	e.Lo, e.Hi = e.Mean-e.T*e.SE, e.Mean+e.T*e.SE
	if e.SE > 0 || e.Mean != 0 {
		e.TStat = e.Mean / e.SE
	}
	switch {
	case e.SE > 0:
		e.P = 2 * (1 - TCDF(math.Abs(e.Mean)/e.SE, df))
	case e.Mean == 0:
		e.P = 1
	default:
		e.P = 0 // identical non-zero differences on every seed
	}
	e.MDE = MDEMultiplier(n, alpha, Power) * e.SE
	return e
}

// Sign is +1 when the interval lies above 0, −1 when below, 0 when it contains 0 or is undetermined.
func (e Estimate) Sign() int {
	switch {
	case e.Lo > 0:
		return 1
	case e.Hi < 0:
		return -1
	}
	return 0
}

// MarshalJSON writes NaN and ±Inf (no noise estimate from one seed) as null, which encoding/json cannot.
func (e Estimate) MarshalJSON() ([]byte, error) { return finitejson.Marshal(e) }

// Finite is &x, or nil (JSON null) for NaN and ±Inf.
func Finite(x float64) *float64 {
	if !finite(x) {
		return nil
	}
	return &x
}

// Slope is the least-squares slope of y on x (NaN with fewer than two distinct x).
func Slope(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i] / n
		my += y[i] / n
	}
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if !(sxx > 0) {
		return math.NaN()
	}
	return sxy / sxx
}
