package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func vecLengths() []int {
	l := make([]int, 0, 72)
	for n := 0; n <= 70; n++ {
		l = append(l, n)
	}
	return append(l, 1000)
}

func closeTo(got, want, scale float64) bool {
	return math.Abs(got-want) <= 1e-6*scale+1e-30
}

func TestVectorKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, im := range available() {
		for _, n := range vecLengths() {
			x, y := randSlice(rng, n), randSlice(rng, n)
			alpha := float32(rng.NormFloat64())

			var dot, scale float64
			for i := range x {
				dot += float64(x[i]) * float64(y[i])
				scale += math.Abs(float64(x[i]) * float64(y[i]))
			}
			if got := im.dot(x, y); !closeTo(float64(got), dot, 2*scale) {
				t.Errorf("%s Dot n=%d: %v, want %v", im.name, n, got, dot)
			}

			z := append([]float32(nil), y...)
			im.axpy(alpha, x, z)
			for i := range z {
				want := float64(alpha)*float64(x[i]) + float64(y[i])
				if !closeTo(float64(z[i]), want, math.Abs(float64(alpha*x[i]))+math.Abs(float64(y[i]))) {
					t.Fatalf("%s Axpy n=%d i=%d: %v, want %v", im.name, n, i, z[i], want)
				}
			}

			z = append(z[:0], x...)
			im.scale(alpha, z)
			for i := range z {
				if z[i] != alpha*x[i] {
					t.Fatalf("%s Scale n=%d i=%d: %v, want %v", im.name, n, i, z[i], alpha*x[i])
				}
			}

			z = append(z[:0], y...)
			im.add(z, x)
			for i := range z {
				if z[i] != y[i]+x[i] {
					t.Fatalf("%s Add n=%d i=%d: %v, want %v", im.name, n, i, z[i], y[i]+x[i])
				}
			}

			want := float32(math.Inf(-1))
			for _, v := range x {
				want = max(want, v)
			}
			if got := im.max(x); got != want {
				t.Fatalf("%s MaxF n=%d: %v, want %v", im.name, n, got, want)
			}
			// The maximum in every position, including the masked tail.
			for i := range x {
				w := append([]float32(nil), x...)
				w[i] = 1000
				if got := im.max(w); got != 1000 {
					t.Fatalf("%s MaxF n=%d max at %d: %v", im.name, n, i, got)
				}
			}

			// Kernels must not touch elements past the slice.
			guard := make([]float32, n+20)
			for i := range guard {
				guard[i] = 7
			}
			im.scale(2, guard[:n])
			im.add(guard[:n], x)
			im.axpy(1, x, guard[:n])
			im.exp(guard[:n], x)
			for i := n; i < len(guard); i++ {
				if guard[i] != 7 {
					t.Fatalf("%s n=%d: element %d past the end written", im.name, n, i)
				}
			}
		}
	}
}

func TestExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	special := []float32{0, 1, -1, 0.5, 88, 88.72, 88.73, 89, 100, 1e10, -87, -87.3, -87.4, -90, -100, -103, -104, -105, -200, -1e10,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)), 1e-8, -1e-8}
	for _, im := range available() {
		for _, n := range vecLengths() {
			src := make([]float32, n)
			for i := range src {
				if i < len(special) && n > 20 {
					src[i] = special[i]
				} else {
					src[i] = float32(rng.Float64()*180 - 90)
				}
			}
			dst := make([]float32, n)
			im.exp(dst, src)
			for i, x := range src {
				checkExp(t, im.name, x, dst[i])
			}
			// In place.
			im.exp(src, src)
			for i := range src {
				if math.Float32bits(src[i]) != math.Float32bits(dst[i]) {
					t.Fatalf("%s: in-place Exp differs at %d", im.name, i)
				}
			}
		}
		// A dense sweep of the whole range.
		var src, dst [4096]float32
		for i := range src {
			src[i] = float32(-110 + 200*float64(i)/float64(len(src)))
		}
		im.exp(dst[:], src[:])
		for i, x := range src {
			checkExp(t, im.name, x, dst[i])
		}
	}
}

func checkExp(t *testing.T, name string, x, got float32) {
	t.Helper()
	want := math.Exp(float64(x))
	switch {
	case math.IsNaN(float64(x)):
		if !math.IsNaN(float64(got)) {
			t.Fatalf("%s: exp(NaN) = %v", name, got)
		}
	case want > math.MaxFloat32*(1+1e-7):
		if !math.IsInf(float64(got), 1) {
			t.Fatalf("%s: exp(%v) = %v, want +Inf", name, x, got)
		}
	case want < 0x1p-126:
		// Denormal results: absolute error within a few denormal steps, and
		// exp(-Inf) and large negative arguments exactly 0.
		if math.Abs(float64(got)-want) > 0x1p-149*4+want*1e-3 || got < 0 {
			t.Fatalf("%s: exp(%v) = %v, want %v", name, x, got, want)
		}
		if x < -104 && got != 0 {
			t.Fatalf("%s: exp(%v) = %v, want 0", name, x, got)
		}
	default:
		if rel := math.Abs(float64(got)-want) / want; rel > 1e-6 {
			t.Fatalf("%s: exp(%v) = %v, want %v (rel err %.2g)", name, x, got, want, rel)
		}
	}
}

// TestExported checks the exported wrappers (the active implementation) and
// their length checks.
func TestExported(t *testing.T) {
	x := []float32{1, 2, 3}
	y := []float32{4, 5, 6}
	if Dot(x, y) != 32 {
		t.Fatal("Dot")
	}
	Axpy(2, x, y)
	Add(y, x)
	Scale(0.5, y)
	if y[2] != 7.5 {
		t.Fatalf("Axpy/Add/Scale: %v", y)
	}
	if MaxF(y) != 7.5 || !math.IsInf(float64(MaxF(nil)), -1) {
		t.Fatal("MaxF")
	}
	e := make([]float32, 3)
	Exp(e, []float32{0, 1, 2})
	if e[0] != 1 {
		t.Fatalf("Exp: %v", e)
	}
	if Impl() == "" {
		t.Fatal("Impl")
	}
	t.Logf("implementation: %s", Impl())
	for name, f := range map[string]func(){
		"Dot":  func() { Dot(x, y[:2]) },
		"Axpy": func() { Axpy(1, x, y[:2]) },
		"Add":  func() { Add(x, y[:2]) },
		"Exp":  func() { Exp(x, y[:2]) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with mismatched lengths did not panic", name)
				}
			}()
			f()
		}()
	}
}
