package audit

import (
	"math"

	"github.com/smallinit/smallinit/safetensors"
)

// Moments are the float64 sums of one tensor's values, from which its mean and std follow.
type Moments struct {
	N     int64   `json:"n"`
	Sum   float64 `json:"sum"`
	SumSq float64 `json:"sum_sq"`
	// MaxDev is max |x − 1| for norm gains and max |x| for everything else.
	MaxDev float64 `json:"max_dev"`
}

// Measure returns the moments of w; gain says whether MaxDev is measured from 1 (norm gains) or from 0.
func Measure(w []float32, gain bool) Moments {
	m := Moments{N: int64(len(w))}
	ref := 0.0
	if gain {
		ref = 1
	}
	// Four partial sums keep the float64 dependency chains short.
	var s, q [4]float64
	var dev float64
	i := 0
	for ; i+4 <= len(w); i += 4 {
		for k := range 4 {
			x := float64(w[i+k])
			s[k] += x
			q[k] += x * x
			dev = max(dev, math.Abs(x-ref))
		}
	}
	for ; i < len(w); i++ {
		x := float64(w[i])
		s[0] += x
		q[0] += x * x
		dev = max(dev, math.Abs(x-ref))
	}
	m.Sum, m.SumSq, m.MaxDev = s[0]+s[1]+s[2]+s[3], q[0]+q[1]+q[2]+q[3], dev
	return m
}

// add pools two moments.
func (m Moments) add(o Moments) Moments {
	return Moments{N: m.N + o.N, Sum: m.Sum + o.Sum, SumSq: m.SumSq + o.SumSq, MaxDev: max(m.MaxDev, o.MaxDev)}
}

// Mean is the sample mean.
func (m Moments) Mean() float64 { return m.Sum / float64(m.N) }

// Std is the sample standard deviation (n − 1 in the denominator; 0 for fewer than 2 values).
func (m Moments) Std() float64 {
	if m.N < 2 {
		return 0
	}
	v := (m.SumSq - m.Sum*m.Sum/float64(m.N)) / float64(m.N-1)
	return math.Sqrt(max(v, 0))
}

// tolerance is the relative tolerance of the std of n draws stored as dtype: z standard errors
// (1/sqrt(2(n−1))) plus the upward bias of rounding to the dtype (half the relative variance of the rounding
// error: 2^−2(p+1)/3 for p mantissa bits, plus the absolute step of the subnormals, which matters only for
// tiny stds in float16 and 8-bit floats), plus 1e-6 for the float32 arithmetic.
func tolerance(n int64, z float64, dtype safetensors.DType, std float64) float64 {
	t := z/math.Sqrt(2*float64(max(n-1, 1))) + 1e-6
	var p, sub float64
	switch dtype {
	case safetensors.BF16:
		p, sub = 7, 0
	case safetensors.F16:
		p, sub = 10, math.Ldexp(1, -24)
	case safetensors.F8E4M3:
		p, sub = 3, math.Ldexp(1, -9)
	case safetensors.F8E5M2:
		p, sub = 2, math.Ldexp(1, -16)
	default:
		return t
	}
	eps := math.Ldexp(1, -int(p)-1)
	rel := eps * eps / 3
	if std > 0 {
		rel += sub * sub / (12 * std * std)
	}
	return t + rel/2
}
