package gammainit

import (
	"hash/fnv"
	"math"
	"math/bits"
)

// Normal is the random stream of one tensor: the PCG-DXSM generator seeded with hi = seed, lo = FNV-1a(name),
// and Marsaglia & Tsang's ziggurat for standard normal draws. Both are math/rand/v2's, reproduced bit for bit
// (rand.New(rand.NewPCG(seed, fnv(name))).NormFloat64, the stream every recorded run drew from; the ziggurat
// tables are copied in ziggurat_tables.go) on one concrete type, so that Fill can write the common case into
// its loop instead of going through rand.Rand's interface call: about 5 ns of thread CPU time per draw against
// 6 to 7.5 through math/rand/v2 (1.26 to 1.40 times faster, measured on the shared 2-core development machine;
// BenchmarkFill and BenchmarkFillStdlib time the same loops in wall-clock time), which matters when the draws
// are most of the CPU cost of writing a billion-parameter checkpoint (scale.Init of the 1.5b preset: 9.4 s of
// user time for 1.55 billion draws and their bfloat16 encoding, the rest of its 40 s being the disk). Owning the algorithm also keeps every seed's weights fixed whatever a future Go release does to
// math/rand/v2 (TestNormalGolden pins the draws; TestNormalMatchesStdlib checks they are still the stdlib's).
//
// Every caller that draws weights (Apply, and scale.Init streaming a checkpoint) draws through Normal, so a
// tensor's values depend only on the seed, its name, its σ and its size.
type Normal struct{ hi, lo uint64 }

// Stream returns the random stream of tensor name under seed. Each tensor has its own, so adding a tensor or a
// layer leaves the draws of all the others unchanged.
func Stream(seed uint64, name string) *Normal {
	h := fnv.New64a()
	h.Write([]byte(name))
	return &Normal{hi: seed, lo: h.Sum64()}
}

// Uint64 is math/rand/v2's (*PCG).Uint64: a 128-bit LCG step and the DXSM output function.
func (p *Normal) Uint64() uint64 {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	hi, lo := bits.Mul64(p.lo, mulLo)
	hi += p.hi*mulLo + p.lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi, _ = bits.Add64(hi, incHi, c)
	p.lo, p.hi = lo, hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	hi *= lo | 1
	return hi
}

// float64 is math/rand/v2's (*Rand).Float64: a uniform draw in [0, 1).
func (p *Normal) float64() float64 { return float64(p.Uint64()<<11>>11) / (1 << 53) }

// NormFloat64 returns the next standard normal draw: math/rand/v2's (*Rand).NormFloat64.
func (p *Normal) NormFloat64() float64 {
	for {
		u := p.Uint64()
		j := int32(u)
		i := u >> 32 & 0x7F
		x := float64(j) * float64(wn[i])
		if absInt32(j) < kn[i] {
			return x
		}
		if x, ok := p.slow(j, i, x); ok {
			return x
		}
	}
}

// Fill sets dst[i] = float32(z·std) for the next len(dst) standard normal draws z, in order, and adds
// Σ float64(dst[i])² to *sumSq one element at a time, so that filling a tensor in chunks gives the same sum,
// bit for bit, as filling it at once.
func (p *Normal) Fill(dst []float32, std float64, sumSq *float64) {
	ss := *sumSq
	for i := range dst {
		// NormFloat64 with its common case (about 99% of draws) written into the loop: the compiler does not
		// inline NormFloat64.
		var z float64
		for {
			u := p.Uint64()
			j := int32(u)
			k := u >> 32 & 0x7F
			z = float64(j) * float64(wn[k])
			if absInt32(j) < kn[k] {
				break
			}
			var ok bool
			if z, ok = p.slow(j, k, z); ok {
				break
			}
		}
		x := float32(z * std)
		dst[i] = x
		ss += float64(x) * float64(x)
	}
	*sumSq = ss
}

func absInt32(i int32) uint32 {
	if i < 0 {
		return uint32(-i)
	}
	return uint32(i)
}

// slow finishes a draw whose first candidate x fell outside the ziggurat's rectangles: the tail beyond rn
// (i = 0) or a wedge, where it may be rejected (ok false: draw again).
func (p *Normal) slow(j int32, i uint64, x float64) (float64, bool) {
	const rn = 3.442619855899
	if i == 0 {
		for {
			x = -math.Log(p.float64()) * (1.0 / rn)
			y := -math.Log(p.float64())
			if y+y >= x*x {
				break
			}
		}
		if j > 0 {
			return rn + x, true
		}
		return -rn - x, true
	}
	if fn[i]+float32(p.float64())*(fn[i-1]-fn[i]) < float32(math.Exp(-.5*x*x)) {
		return x, true
	}
	return 0, false
}
