package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAdamWMatchesGeneric checks every implementation's AdamW update against adamwGeneric bit for bit (p, m
// and v) on every tail length, with decay on and off, tiny and large gradients and zero second moments, and
// adamwGeneric against a float64 evaluation of the formula.
func TestAdamWMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, im := range available() {
		f := im.adamw
		if f == nil {
			continue // the generic itself
		}
		for _, n := range vecLengths() {
			for _, decay := range []float32{1, 1 - 3e-4*0.1} {
				p, g, m, v := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
				for i := range v {
					v[i] = v[i] * v[i] * 1e-4
					switch rng.IntN(6) {
					case 0:
						g[i] *= 1e-20
					case 1:
						g[i] *= 1e6
					case 2:
						m[i], v[i] = 0, 0
					}
				}
				k := [9]float32{0.7, 0.9, float32(1 - 0.9), 0.95, float32(1 - 0.95), decay, 3e-4 / 0.1, float32(math.Sqrt(0.05)), 1e-8}
				wp, wm, wv := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
				adamwGeneric(wp, g, wm, wv, k)
				for i := range p {
					gi := float64(g[i]) * float64(k[0])
					mi := float64(k[1])*float64(m[i]) + float64(k[2])*gi
					vi := float64(k[3])*float64(v[i]) + float64(k[4])*gi*gi
					pi := float64(p[i])*float64(k[5]) - float64(k[6])*mi/(math.Sqrt(vi)/float64(k[7])+float64(k[8]))
					if d := math.Abs(float64(wp[i]) - pi); d > 1e-5*(math.Abs(pi)+math.Abs(float64(k[6])*mi/(math.Sqrt(vi)/float64(k[7])+float64(k[8]))))+1e-30 {
						t.Fatalf("generic n=%d i=%d: p = %v, float64 %v", n, i, wp[i], pi)
					}
				}
				f(p, g, m, v, k)
				for i := range p {
					if math.Float32bits(p[i]) != math.Float32bits(wp[i]) || math.Float32bits(m[i]) != math.Float32bits(wm[i]) ||
						math.Float32bits(v[i]) != math.Float32bits(wv[i]) {
						t.Fatalf("%s n=%d decay=%v i=%d: p, m, v = %v %v %v, generic %v %v %v", im.name, n, decay, i, p[i], m[i], v[i], wp[i], wm[i], wv[i])
					}
				}
			}
		}
	}
}

// BenchmarkAdamW times the AdamW update of 1M parameters with the pure-Go loop and with this CPU's kernel,
// alternating, and reports each one's median milliseconds.
func BenchmarkAdamW(b *testing.B) {
	f := active.adamw
	if f == nil {
		b.Skip("no native AdamW kernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(63, 64))
	const n = 1 << 20
	p, g, m, v := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
	for i := range v {
		v[i] *= v[i]
	}
	k := [9]float32{1, 0.9, 0.1, 0.95, 0.05, 1, 1e-4, 0.2, 1e-8}
	var gen, nat []float64
	for range b.N {
		t0 := time.Now()
		adamwGeneric(p, g, m, v, k)
		gen = append(gen, time.Since(t0).Seconds()*1e3)
		t0 = time.Now()
		f(p, g, m, v, k)
		nat = append(nat, time.Since(t0).Seconds()*1e3)
	}
	b.ReportMetric(medianOf(gen), "generic-ms")
	b.ReportMetric(medianOf(nat), "native-ms")
}
