package stats

import (
	"fmt"
	"math"
	"sync"
)

// NoncentralTCDF is P(T ≤ t) for the noncentral t distribution with df > 0 degrees of freedom and
// noncentrality ncp: T = (Z + ncp)/√(V/df) with Z standard normal and V chi-square on df, independent. It is
// the distribution of a one-sample t statistic when the true mean is ncp standard errors away from 0, so it
// gives the exact power of a t-test (docs/definitions.md §7, "Power and the minimum detectable effect").
//
// Conditioning on U = √(V/df): P(T ≤ t) = ∫₀^∞ Φ(t·u − ncp) f_U(u) du, with
// f_U(u) = 2 (df/2)^(df/2) / Γ(df/2) · u^(df−1) · exp(−df·u²/2). The integrand is smooth and has no
// singularity for df ≥ 1 (at df = 1, U = |Z'|), and f_U has a Gaussian tail, so composite Simpson on a finite
// range is accurate to about 1e-8 for the df this package meets (1 to a few hundred).
func NoncentralTCDF(t, df, ncp float64) float64 {
	switch {
	case math.IsNaN(t) || math.IsNaN(ncp) || !(df > 0):
		return math.NaN()
	case math.IsInf(t, 1):
		return 1
	case math.IsInf(t, -1):
		return 0
	case ncp == 0:
		return TCDF(t, df)
	}
	lg, _ := math.Lgamma(df / 2)
	logC := math.Ln2 + df/2*math.Log(df/2) - lg
	dens := func(u float64) float64 {
		if u == 0 {
			if df == 1 {
				return math.Exp(logC)
			}
			if df > 1 {
				return 0
			}
			return math.Inf(1)
		}
		return math.Exp(logC + (df-1)*math.Log(u) - df*u*u/2)
	}
	// U has mean ≈ 1 and SD ≈ 1/√(2df): outside [1 − 10/√df, 1 + 14/√df] its density is below e^(−49)
	// relative to the peak for every df ≥ 1.
	lo, hi := math.Max(0, 1-10/math.Sqrt(df)), 1+14/math.Sqrt(df)
	const n = 1024 // even
	h := (hi - lo) / n
	var s float64
	for i := 0; i <= n; i++ {
		u := lo + float64(i)*h
		w := 2.0
		switch {
		case i == 0 || i == n:
			w = 1
		case i%2 == 1:
			w = 4
		}
		s += w * normCDF(t*u-ncp) * dens(u)
	}
	return math.Min(1, math.Max(0, s*h/3))
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// TTestPower is the exact power of a two-sided level-alpha one-sample t-test on df degrees of freedom when the
// true mean is ncp standard errors from 0: P(|T| > t_{1−α/2, df}) with T noncentral t.
func TTestPower(ncp, df, alpha float64) float64 {
	c := TQuantile(1-alpha/2, df)
	return 1 - NoncentralTCDF(c, df, ncp) + NoncentralTCDF(-c, df, ncp)
}

// MDEMultiplier is the exact minimum detectable effect of a two-sided level-alpha one-sample t-test on n values,
// in standard errors: the noncentrality at which TTestPower reaches power. The textbook shortcut
// t_{1−α/2} + t_{power} (Bloom 1995) understates it at few degrees of freedom (at df = 2 and 80%: by 5% at
// α = 0.05, by more at the smaller α of a corrected family), because it ignores the spread of the estimated SD. NaN for n < 2.
func MDEMultiplier(n int, alpha, power float64) float64 {
	if n < 2 {
		return math.NaN()
	}
	if !(alpha > 0 && alpha < 1) || !(power > alpha/2 && power < 1) {
		panic(fmt.Sprintf("stats: MDEMultiplier(%d, %g, %g): want 0 < alpha < 1 and alpha/2 < power < 1", n, alpha, power))
	}
	key := mdeKey{n, alpha, power}
	if m, ok := mdeMemo.Load(key); ok {
		return m.(float64)
	}
	m := mdeMultiplier(float64(n-1), alpha, power)
	mdeMemo.Store(key, m)
	return m
}

// mdeMemo remembers MDEMultiplier's values: a pure function of its key that costs about a millisecond, called
// by every Mean (simulations call Mean with the same n and α many thousands of times). A memo of a pure function
// changes no result.
var mdeMemo sync.Map

type mdeKey struct {
	n            int
	alpha, power float64
}

func mdeMultiplier(df, alpha, power float64) float64 {
	// The power rises with the noncentrality: bracket the root from the shortcut up, then Illinois
	// (a regula falsi that halves the stale end's weight) to 1e-10.
	f := func(m float64) float64 { return TTestPower(m, df, alpha) - power }
	lo := TQuantile(1-alpha/2, df) + TQuantile(power, df)
	hi := 1.25 * lo
	flo, fhi := f(lo), f(hi)
	for fhi < 0 {
		lo, flo = hi, fhi
		hi *= 1.5
		fhi = f(hi)
	}
	side := 0
	for range 100 {
		m := (lo*fhi - hi*flo) / (fhi - flo)
		fm := f(m)
		if math.Abs(fm) < 1e-12 || hi-lo < 1e-10 {
			return m
		}
		if fm < 0 {
			lo, flo = m, fm
			if side == -1 {
				fhi /= 2
			}
			side = -1
		} else {
			hi, fhi = m, fm
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	return (lo + hi) / 2
}

// PredictedMDE is the minimum detectable effect of a paired comparison on n seeds whose paired values have
// standard deviation sd (a prior: a previous run's or a pilot's): MDEMultiplier(n)·sd/√n.
func PredictedMDE(n int, sd, alpha, power float64) float64 {
	return MDEMultiplier(n, alpha, power) * sd / math.Sqrt(float64(n))
}

// SeedsFor is the fewest seeds n in [2, max] whose predicted MDE is at most delta, or 0 when even max seeds
// cannot reach it.
func SeedsFor(delta, sd, alpha, power float64, max int) int {
	if !(delta > 0) || !(sd >= 0) {
		return 0
	}
	for n := 2; n <= max; n++ {
		if PredictedMDE(n, sd, alpha, power) <= delta {
			return n
		}
	}
	return 0
}

// SignFlipP is the two-sided sign-flip permutation p-value of "the mean of values is 0" (values are paired
// differences, symmetric about 0 under the null): the share of the 2^n sign assignments whose |mean| is at
// least the observed one (with a relative tolerance of 1e-12 for ties). It is exact for n ≤ 20; it needs no
// normality, so it stands beside the t-test as a check that a verdict does not rest on one heavy-tailed seed.
// Its smallest possible value is 2/2^n: with n ≤ 5 seeds it cannot reach 0.05. NaN for n = 0 or n > 20, or for
// a non-finite value.
func SignFlipP(values []float64) float64 {
	n := len(values)
	if n == 0 || n > 20 {
		return math.NaN()
	}
	var obs, scale float64
	for _, v := range values {
		if !finite(v) {
			return math.NaN()
		}
		obs += v
		scale += math.Abs(v)
	}
	obs = math.Abs(obs)
	tol := 1e-12 * scale
	count := 0
	for mask := 0; mask < 1<<n; mask++ {
		var s float64
		for i, v := range values {
			if mask&(1<<i) != 0 {
				s -= v
			} else {
				s += v
			}
		}
		if math.Abs(s) >= obs-tol {
			count++
		}
	}
	return float64(count) / float64(int(1)<<n)
}

// TOST is the two one-sided tests of equivalence (Schuirmann 1987) for the mean of n values against the margin
// ±delta: p is the larger of the one-sided p-values of "mean ≤ −delta" and "mean ≥ +delta", so p ≤ alpha exactly
// when the (1 − 2·alpha) t-interval lies inside (−delta, +delta). A verdict of "no meaningful effect" reads it
// (docs/definitions.md §7). NaN with fewer than two values; with zero spread p is 0 when |mean| < delta
// and 1 otherwise.
func TOST(values []float64, delta float64) (p float64) {
	n := len(values)
	if n < 2 || !(delta > 0) {
		return math.NaN()
	}
	e := Mean(values, nil, 0.05)
	if !finite(e.Mean) {
		return math.NaN()
	}
	if e.SE == 0 {
		if math.Abs(e.Mean) < delta {
			return 0
		}
		return 1
	}
	df := float64(n - 1)
	pLow := 1 - TCDF((e.Mean+delta)/e.SE, df) // H0: mean ≤ −delta
	pHigh := TCDF((e.Mean-delta)/e.SE, df)    // H0: mean ≥ +delta
	return math.Max(pLow, pHigh)
}

// Spike is the largest rise of a loss curve over its running minimum, max_i (loss_i − min_{j ≤ i} loss_j): 0 for
// a curve that never rises, the height of the worst spike otherwise (docs/definitions.md §7, "Learning rates"). A
// non-finite loss makes it +Inf (a diverged run spiked without bound).
func Spike(losses []float64) float64 {
	best, worst := math.Inf(1), 0.0
	for _, l := range losses {
		if !finite(l) {
			return math.Inf(1)
		}
		best = math.Min(best, l)
		worst = math.Max(worst, l-best)
	}
	return worst
}

// TailSpread is the relative spread of the last k values, (max − min)/max of them: how far a trajectory still
// moves at its end (γ = 1's mean stable rank has plateaued when its last 3 lie within 5%, docs/definitions.md,
// "Horizon"). NaN with fewer than k values or a non-positive maximum.
func TailSpread(xs []float64, k int) float64 {
	if k < 1 || len(xs) < k {
		return math.NaN()
	}
	mn, mx := math.Inf(1), math.Inf(-1)
	for _, v := range xs[len(xs)-k:] {
		mn, mx = math.Min(mn, v), math.Max(mx, v)
	}
	if !(mx > 0) {
		return math.NaN()
	}
	return (mx - mn) / mx
}
