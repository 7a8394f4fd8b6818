package stats

import (
	"fmt"
	"math"
)

// TCDF is the distribution function of Student's t with df > 0 degrees of freedom:
// P(T ≤ t) = 1 − ½·I_{df/(df+t²)}(df/2, ½) for t ≥ 0 and ½·I_{df/(df+t²)}(df/2, ½) for t < 0, with I the
// regularized incomplete beta function (Abramowitz & Stegun 26.7.1 with 26.5.27).
func TCDF(t, df float64) float64 {
	switch {
	case math.IsNaN(t) || !(df > 0):
		return math.NaN()
	case math.IsInf(t, 1):
		return 1
	case math.IsInf(t, -1):
		return 0
	}
	tail := 0.5 * betaInc(df/2, 0.5, df/(df+t*t))
	if t >= 0 {
		return 1 - tail
	}
	return tail
}

// TQuantile is the p-quantile of Student's t with df > 0 degrees of freedom, the t with TCDF(t, df) = p
// (t_{p,df}; t_{0.975,2} = 4.303). It panics for p outside (0, 1) or df ≤ 0: a quantile there is a caller's bug.
func TQuantile(p, df float64) float64 {
	if !(p > 0 && p < 1) || !(df > 0) {
		panic(fmt.Sprintf("stats: TQuantile(%g, %g): want 0 < p < 1 and df > 0", p, df))
	}
	if p == 0.5 {
		return 0
	}
	if p < 0.5 {
		return -TQuantile(1-p, df)
	}
	// Bracket [lo, hi] (hi doubled until TCDF(hi) ≥ p), then Newton steps on the CDF with its density, falling
	// back to bisection whenever a step leaves the bracket; the CDF is monotone, so this always converges.
	lo, hi := 0.0, 1.0
	for TCDF(hi, df) < p {
		lo, hi = hi, 2*hi
		if hi > 1e300 {
			return math.Inf(1)
		}
	}
	lg1, _ := math.Lgamma((df + 1) / 2)
	lg2, _ := math.Lgamma(df / 2)
	logNorm := lg1 - lg2 - 0.5*math.Log(df*math.Pi)
	x := (lo + hi) / 2
	for range 100 {
		f := TCDF(x, df) - p
		if f < 0 {
			lo = x
		} else {
			hi = x
		}
		pdf := math.Exp(logNorm - (df+1)/2*math.Log1p(x*x/df))
		next := x - f/pdf
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-x) <= 1e-15*math.Abs(x) || hi-lo <= 1e-15*hi {
			return next
		}
		x = next
	}
	return x
}

// betaInc is the regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 ≤ x ≤ 1, by its continued
// fraction (A&S 26.5.8) evaluated with the modified Lentz method, on the side of x where it converges fast
// (I_x(a, b) = 1 − I_{1−x}(b, a) beyond x = (a+1)/(a+b+2)).
func betaInc(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	case x > (a+1)/(a+b+2):
		return 1 - betaInc(b, a, 1-x)
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x)+b*math.Log1p(-x)-(la+lb-lab)) / a
	// 1/(1 + d1/(1 + d2/(1 + ...))) with d_{2m+1} = −(a+m)(a+b+m)x/((a+2m)(a+2m+1)) and
	// d_{2m} = m(b−m)x/((a+2m−1)(a+2m)).
	const tiny = 1e-300
	f, c, d := tiny, tiny, 0.0
	for j := 0; j < 10000; j++ {
		var num float64
		switch {
		case j == 0:
			num = 1
		case j%2 == 1:
			m := float64(j-1) / 2
			num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		default:
			m := float64(j) / 2
			num = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		}
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		d = 1 / d
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		delta := c * d
		f *= delta
		if j > 0 && math.Abs(delta-1) < 1e-16 {
			break
		}
	}
	return front * f
}
