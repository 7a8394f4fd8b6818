package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// rowTol is the relative tolerance of the row kernels against their float64 definitions: a few float32 ulps
// (the exponential is good to ~1.5 ulp, the rest is rounding of a handful of operations).
const rowTol = 2e-6

func relClose(got float32, want, scale float64) bool {
	return math.Abs(float64(got)-want) <= rowTol*(math.Abs(want)+scale)+1e-30
}

// TestRowKernels checks every implementation's fused row kernels against float64 evaluations of their
// formulas, on lengths that exercise the 16-lane loop and every tail length.
func TestRowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, im := range available() {
		for _, n := range vecLengths() {
			x, y, g, u := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
			for i := range x {
				x[i] *= 4 // exponents over a range of magnitudes
			}

			// ExpShiftSum, out of place and in place.
			shift, scale := float32(rng.NormFloat64()), float32(0.25+rng.Float64())
			var want64 float64
			wantE := make([]float64, n)
			for i, v := range x {
				wantE[i] = math.Exp(float64(v-shift) * float64(scale))
				want64 += wantE[i]
			}
			dst := make([]float32, n)
			sum := im.expShiftSum(dst, x, shift, scale)
			for i := range dst {
				if !relClose(dst[i], wantE[i], 0) {
					t.Fatalf("%s ExpShiftSum n=%d i=%d: %v, want %v", im.name, n, i, dst[i], wantE[i])
				}
			}
			if !relClose(sum, want64, 0) {
				t.Errorf("%s ExpShiftSum n=%d: sum %v, want %v", im.name, n, sum, want64)
			}
			inPlace := append([]float32(nil), x...)
			if s2 := im.expShiftSum(inPlace, inPlace, shift, scale); s2 != sum || !slices.Equal(inPlace, dst) {
				t.Errorf("%s ExpShiftSum n=%d: in place differs from out of place", im.name, n)
			}

			// SwiGLU forward.
			act, sig := make([]float32, n), make([]float32, n)
			im.swiglu(act, sig, x, u)
			for i, a := range x {
				s := 1 / (1 + math.Exp(-float64(a)))
				if !relClose(sig[i], s, 0) {
					t.Fatalf("%s SwiGLU n=%d i=%d: σ %v, want %v", im.name, n, i, sig[i], s)
				}
				w := float64(a) * s * float64(u[i])
				if !relClose(act[i], w, 0) {
					t.Fatalf("%s SwiGLU n=%d i=%d: act %v, want %v", im.name, n, i, act[i], w)
				}
			}

			// SwiGLU backward from the saved σ.
			dg, du := make([]float32, n), make([]float32, n)
			im.swigluBack(dg, du, y, x, u, sig)
			for i, a := range x {
				s, d := float64(sig[i]), float64(y[i])
				wu := d * float64(a) * s
				wg := d * float64(u[i]) * (s + float64(a)*s*(1-s))
				if !relClose(du[i], wu, 0) || !relClose(dg[i], wg, math.Abs(d*float64(u[i]))*s) {
					t.Fatalf("%s SwiGLUBackward n=%d i=%d: du %v dg %v, want %v %v", im.name, n, i, du[i], dg[i], wu, wg)
				}
			}

			// RMSNorm backward, accumulating into non-zero dx and dg.
			if n == 0 {
				continue
			}
			var ms float64
			for _, v := range x {
				ms += float64(v) * float64(v) / float64(n)
			}
			rstd := 1 / math.Sqrt(ms+1e-5)
			dx0, dg0 := randSlice(rng, n), randSlice(rng, n)
			dx, dgn := append([]float32(nil), dx0...), append([]float32(nil), dg0...)
			im.rmsNormBack(dx, y, x, g, dgn, float32(rstd), 1/float32(n))
			var m, mag float64
			for i, v := range x {
				xh := float64(v) * float64(float32(rstd))
				m += float64(g[i]) * float64(y[i]) * xh / float64(n)
				mag += math.Abs(float64(g[i])*float64(y[i])*xh) / float64(n)
			}
			r := float64(float32(rstd))
			for i, v := range x {
				xh := float64(v) * r
				wg := float64(dg0[i]) + float64(y[i])*xh
				wx := float64(dx0[i]) + r*(float64(g[i])*float64(y[i])-xh*m)
				sx := r * (math.Abs(float64(g[i]*y[i])) + math.Abs(xh)*mag)
				if !relClose(dgn[i], wg, math.Abs(float64(y[i])*xh)) || !relClose(dx[i], wx, sx+math.Abs(float64(dx0[i]))) {
					t.Fatalf("%s RMSNormBackward n=%d i=%d: dx %v dg %v, want %v %v", im.name, n, i, dx[i], dgn[i], wx, wg)
				}
			}
		}
	}
}

// BenchmarkRowKernels times the fused row kernels of every implementation on a softmax row of T = 256 and an
// FFN row of d_ff = 1408 (medium).
func BenchmarkRowKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{256, 1408} {
		x, y, g, u := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
		d1, d2, sig := make([]float32, n), make([]float32, n), make([]float32, n)
		for _, im := range available() {
			im.swiglu(d1, sig, g, u)
			b.Run(fmt.Sprintf("ExpShiftSum/%s/%d", im.name, n), func(b *testing.B) {
				for b.Loop() {
					im.expShiftSum(d1, x, 0.5, 0.125)
				}
			})
			b.Run(fmt.Sprintf("SwiGLU/%s/%d", im.name, n), func(b *testing.B) {
				for b.Loop() {
					im.swiglu(d1, d2, g, u)
				}
			})
			b.Run(fmt.Sprintf("SwiGLUBackward/%s/%d", im.name, n), func(b *testing.B) {
				for b.Loop() {
					im.swigluBack(d1, d2, y, g, u, sig)
				}
			})
			b.Run(fmt.Sprintf("RMSNormBackward/%s/%d", im.name, n), func(b *testing.B) {
				for b.Loop() {
					im.rmsNormBack(d1, y, x, g, d2, 0.9, 1/float32(n))
				}
			})
		}
	}
}
