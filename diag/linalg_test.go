package diag

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randGauss returns a row-major [rows, cols] matrix of N(0, std²) entries.
func randGauss(rng *rand.Rand, rows, cols int, std float64) []float32 {
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * std)
	}
	return w
}

// randOrthogonal returns an n×n orthogonal matrix (row-major float64) as a
// product of n random Householder reflections I - 2vvᵀ.
func randOrthogonal(rng *rand.Rand, n int) []float64 {
	q := make([]float64, n*n)
	for i := range n {
		q[i*n+i] = 1
	}
	v := make([]float64, n)
	for range n {
		var s float64
		for i := range v {
			v[i] = rng.NormFloat64()
			s += v[i] * v[i]
		}
		s = math.Sqrt(s)
		for i := range v {
			v[i] /= s
		}
		// q ← q (I - 2vvᵀ): row_i -= 2 (row_i·v) vᵀ.
		for i := range n {
			row := q[i*n : (i+1)*n]
			d := 2 * dot64(row, v)
			for j := range n {
				row[j] -= d * v[j]
			}
		}
	}
	return q
}

// usv returns U[:, :k]·diag(s)·V[:, :k]ᵀ for orthogonal U (m×m), V (n×n),
// k = len(s), as float32.
func usv(u []float64, m int, s []float64, v []float64, n int) []float32 {
	w := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var x float64
			for t, st := range s {
				x += u[i*m+t] * st * v[j*n+t]
			}
			w[i*n+j] = float32(x)
		}
	}
	return w
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestSingularValuesDiagonal(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows, cols int
		diag       []float64 // placed at (i, k-1-i) with alternating signs
	}{
		{"square", 5, 5, []float64{3, 1, 4, 1, 5}},
		{"wide", 3, 7, []float64{0.5, 2, 0.25}},
		{"tall", 6, 4, []float64{1e-3, 10, 7, 0}},
		{"zero", 4, 4, []float64{0, 0, 0, 0}},
		{"one", 1, 1, []float64{-2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := make([]float32, tc.rows*tc.cols)
			k := len(tc.diag)
			for i, d := range tc.diag {
				// A permuted, signed diagonal has the same singular values.
				j := k - 1 - i
				if i%2 == 1 {
					d = -d
				}
				w[i*tc.cols+j] = float32(d)
			}
			want := make([]float64, k)
			for i, d := range tc.diag {
				want[i] = math.Abs(float64(float32(d)))
			}
			slices.Sort(want)
			slices.Reverse(want)
			got := SingularValues(w, tc.rows, tc.cols)
			if len(got) != k {
				t.Fatalf("len %d, want %d", len(got), k)
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-12*want[0] {
					t.Errorf("σ[%d] = %.17g, want %.17g", i, got[i], want[i])
				}
			}
		})
	}
}

func TestSingularValuesHouseholder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows, cols int
		s          []float64
	}{
		{"square-spread", 40, 40, geom(40, 1, 1e-3)},
		{"tall", 120, 30, geom(30, 5, 0.01)},
		{"wide", 25, 90, geom(25, 2, 0.5)},
		{"rank-deficient", 50, 60, append(geom(10, 1, 0.1), make([]float64, 40)...)},
		{"repeated", 32, 48, slices.Repeat([]float64{2, 1}, 16)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.rows)))
			u := randOrthogonal(rng, tc.rows)
			v := randOrthogonal(rng, tc.cols)
			w := usv(u, tc.rows, tc.s, v, tc.cols)
			want := slices.Clone(tc.s)
			slices.Sort(want)
			slices.Reverse(want)
			got := SingularValues(w, tc.rows, tc.cols)
			// w is rounded to float32: each σ moves by at most ‖E‖₂ ≲ 1e-6·σ_max.
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-6*want[0] {
					t.Errorf("σ[%d] = %.10g, want %.10g", i, got[i], want[i])
				}
			}
		})
	}
}

// geom returns n values from hi down to lo in geometric progression.
func geom(n int, hi, lo float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = hi * math.Pow(lo/hi, float64(i)/float64(max(n-1, 1)))
	}
	return s
}

func TestSingularValuesFrobenius(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, sh := range [][2]int{{1, 9}, {9, 1}, {17, 17}, {64, 200}, {300, 100}} {
		w := randGauss(rng, sh[0], sh[1], 0.02)
		sv := SingularValues(w, sh[0], sh[1])
		var sum float64
		for _, s := range sv {
			sum += s * s
		}
		frob, _ := sumSquares(w)
		if relErr(sum, frob) > 1e-12 {
			t.Errorf("%v: Σσ² = %.17g, ‖W‖_F² = %.17g", sh, sum, frob)
		}
		if !slices.IsSortedFunc(sv, func(a, b float64) int { return -cmpF(a, b) }) {
			t.Errorf("%v: not descending", sh)
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSingularValuesNonFinite(t *testing.T) {
	w := []float32{1, 2, float32(math.Inf(1)), 4}
	for _, s := range SingularValues(w, 2, 2) {
		if !math.IsNaN(s) {
			t.Fatalf("got %v, want NaN", s)
		}
	}
}

func TestSymEigenvaluesTridiagonal(t *testing.T) {
	// The second-difference matrix tridiag(-1, 2, -1) of size n has
	// eigenvalues 2 - 2cos(jπ/(n+1)), j = 1..n; permuting it by a random
	// orthogonal similarity must not change them.
	for _, n := range []int{1, 2, 3, 10, 101} {
		rng := rand.New(rand.NewPCG(11, uint64(n)))
		q := randOrthogonal(rng, n)
		a := make([]float64, n*n)
		for i := range n {
			for j := range n {
				var x float64
				for t := range n {
					// (Q T Qᵀ)_ij with T tridiagonal.
					var tq float64
					tq = 2 * q[j*n+t]
					if t > 0 {
						tq -= q[j*n+t-1]
					}
					if t < n-1 {
						tq -= q[j*n+t+1]
					}
					x += q[i*n+t] * tq
				}
				a[i*n+j] = x
			}
		}
		got := symEigenvalues(a, n)
		slices.Sort(got)
		for j := 1; j <= n; j++ {
			want := 2 - 2*math.Cos(float64(j)*math.Pi/float64(n+1))
			if n == 1 {
				want = 2
			}
			if math.Abs(got[j-1]-want) > 1e-12 {
				t.Errorf("n=%d: λ[%d] = %.17g, want %.17g", n, j-1, got[j-1], want)
			}
		}
	}
}

func TestGram32MatchesGram64(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, sh := range [][2]int{{1, 1}, {3, 1000}, {33, 517}, {70, 1500}} {
		k, n := sh[0], sh[1]
		a := randGauss(rng, k, n, 1)
		a64 := make([]float64, len(a))
		for i, x := range a {
			a64[i] = float64(x)
		}
		for _, workers := range []int{1, 3} {
			g32 := gram32(a, k, n, workers)
			g64 := gram64(a64, k, n, workers)
			for i := range k {
				for j := range k {
					want := dot64(a64[i*n:(i+1)*n], a64[j*n:(j+1)*n])
					if math.Abs(g64[i*k+j]-want) > 1e-12*float64(n) {
						t.Fatalf("%v gram64[%d,%d] = %g, want %g", sh, i, j, g64[i*k+j], want)
					}
					if math.Abs(g32[i*k+j]-want) > 1e-5*float64(n) {
						t.Fatalf("%v gram32[%d,%d] = %g, want %g", sh, i, j, g32[i*k+j], want)
					}
				}
			}
		}
	}
}

func TestPowerIterationMatchesExact(t *testing.T) {
	// Power iteration on the Gram of the smaller side against the exact σ_max²,
	// including matrices with a clear spectral gap and plain Gaussian ones
	// (small gap at the top of the Marchenko-Pastur edge).
	for _, tc := range []struct {
		name       string
		rows, cols int
		spike      float64 // added rank-1 component strength (0: none)
	}{
		{"gauss-300x200", 300, 200, 0},
		{"gauss-200x300", 200, 300, 0},
		{"gauss-512x128", 512, 128, 0},
		{"gauss-257x600", 257, 600, 0},
		{"gauss-256x256", 256, 256, 0},
		{"spiked-400x300", 400, 300, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(tc.rows*tc.cols)))
			w := randGauss(rng, tc.rows, tc.cols, 1/float64(tc.cols))
			if tc.spike > 0 {
				u := randGauss(rng, tc.rows, 1, 1)
				v := randGauss(rng, 1, tc.cols, 1)
				sc := tc.spike / float64(tc.cols) / math.Sqrt(float64(tc.rows))
				for i := range tc.rows {
					for j := range tc.cols {
						w[i*tc.cols+j] += float32(float64(u[i]*v[j]) * sc)
					}
				}
			}
			o := DefaultWeightOptions()
			o.ExactMaxDim = -1
			got, exact := StableRank(w, tc.rows, tc.cols, o)
			if exact {
				t.Fatal("exact path taken with ExactMaxDim < 0")
			}
			sv := SingularValues(w, tc.rows, tc.cols)
			frob, _ := sumSquares(w)
			want := frob / (sv[0] * sv[0])
			if relErr(got, want) > 1e-4 {
				t.Errorf("power srank %.8g, exact %.8g (rel %.2g)", got, want, relErr(got, want))
			}
			st := Weights(w, tc.rows, tc.cols, o)
			t.Logf("srank %.4f (exact %.4f, rel err %.1e) after %d iterations", got, want, relErr(got, want), st.PowerIters)
		})
	}
}
