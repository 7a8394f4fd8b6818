package diag

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/smallinit/smallinit/arch"
)

// orthonormalColumns returns k orthonormal vectors of length n (Gram-Schmidt
// of Gaussian vectors, twice), as k slices.
func orthonormalColumns(rng *rand.Rand, n, k int) [][]float64 {
	q := make([][]float64, k)
	for t := range k {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		for range 2 {
			for _, b := range q[:t] {
				axpy64(-dot64(b, v), b, v)
			}
		}
		scaleTo(v, 1/math.Sqrt(dot64(v, v)))
		q[t] = v
	}
	return q
}

// plantedRank returns Σ_t s_t u_t v_tᵀ with orthonormal u_t, v_t.
func plantedRank(rng *rand.Rand, rows, cols int, s []float64) []float32 {
	u := orthonormalColumns(rng, rows, len(s))
	v := orthonormalColumns(rng, cols, len(s))
	w := make([]float32, rows*cols)
	for i := range rows {
		for j := range cols {
			var x float64
			for t, st := range s {
				x += st * u[t][i] * v[t][j]
			}
			w[i*cols+j] = float32(x)
		}
	}
	return w
}

func TestStableRankPlanted(t *testing.T) {
	for _, tc := range []struct {
		rows, cols, rank int
		tol              float64
	}{
		{100, 80, 1, 1e-6},  // exact path
		{400, 300, 1, 1e-6}, // power path, tall
		{300, 900, 1, 1e-6}, // power path, wide
		{4096, 64, 1, 1e-6}, // exact path, embedding-like
		{120, 200, 3, 1e-5},
		{600, 400, 3, 1e-5},
		{300, 300, 10, 1e-5},
		{64, 64, 64, 1e-5}, // full rank, all σ equal: srank = 64
	} {
		t.Run(fmt.Sprintf("%dx%d-rank%d", tc.rows, tc.cols, tc.rank), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.rows+tc.cols+tc.rank)))
			s := slices.Repeat([]float64{0.37}, tc.rank)
			w := plantedRank(rng, tc.rows, tc.cols, s)
			o := DefaultWeightOptions()
			got, exact := StableRank(w, tc.rows, tc.cols, o)
			if wantExact := min(tc.rows, tc.cols) <= o.ExactMaxDim; exact != wantExact {
				t.Errorf("exact = %v, want %v", exact, wantExact)
			}
			if relErr(got, float64(tc.rank)) > tc.tol {
				t.Errorf("srank = %.10g, want %d", got, tc.rank)
			}
			st := Weights(w, tc.rows, tc.cols, o)
			// Weights may take another route (the row Gram) than StableRank.
			if relErr(st.StableRank, got) > 1e-6 || st.StableRankExact != exact {
				t.Errorf("Weights srank %v/%v, StableRank %v/%v", st.StableRank, st.StableRankExact, got, exact)
			}
			if relErr(st.SigmaMax, 0.37) > 1e-6 {
				t.Errorf("σ_max = %.10g, want 0.37", st.SigmaMax)
			}
			if exact && relErr(st.EffectiveRank, float64(tc.rank)) > 1e-5 {
				t.Errorf("effective rank %.10g, want %d", st.EffectiveRank, tc.rank)
			}
		})
	}
}

func TestStableRankGaussian(t *testing.T) {
	// srank of an i.i.d. Gaussian [m, n] matrix ≈ m·n/(√m+√n)² (Marchenko-Pastur:
	// ‖W‖_F² ≈ m·n·σ², σ_max ≈ σ(√m+√n)).
	for _, tc := range []struct {
		rows, cols int
		exact      bool
	}{
		{256, 256, true},
		{512, 128, true},
		{128, 512, true},
		{512, 512, false},
		{1408, 512, false},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.rows, tc.cols), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, uint64(tc.rows*tc.cols)))
			w := randGauss(rng, tc.rows, tc.cols, 1/float64(tc.cols)) // γ = 1 scale
			st := Weights(w, tc.rows, tc.cols, DefaultWeightOptions())
			m, n := float64(tc.rows), float64(tc.cols)
			want := m * n / math.Pow(math.Sqrt(m)+math.Sqrt(n), 2)
			if st.StableRankExact != tc.exact {
				t.Errorf("exact = %v, want %v", st.StableRankExact, tc.exact)
			}
			if relErr(st.StableRank, want) > 0.10 {
				t.Errorf("srank %.2f, want ≈ %.2f", st.StableRank, want)
			}
			t.Logf("srank %.2f (formula %.2f), effective rank %.1f", st.StableRank, want, st.EffectiveRank)
		})
	}
}

func TestStableRankZeroAndOptions(t *testing.T) {
	w := make([]float32, 300*280)
	for _, exactMax := range []int{0, -1} {
		o := WeightOptions{ExactMaxDim: exactMax}
		st := Weights(w, 300, 280, o)
		if st.StableRank != 0 || st.SigmaMax != 0 || st.FrobSq != 0 {
			t.Errorf("ExactMaxDim %d: zero matrix gave %+v", exactMax, st)
		}
		if st.ZeroRows != 280 && st.ZeroRows != 300 {
			t.Errorf("ZeroRows = %d", st.ZeroRows)
		}
		if st.MeanAbsCos != 0 || st.FracAbove09 != 0 {
			t.Errorf("zero matrix cos summaries %v %v", st.MeanAbsCos, st.FracAbove09)
		}
	}
	// Zero options mean defaults; a forced exact path on a larger matrix agrees.
	rng := rand.New(rand.NewPCG(4, 4))
	a := randGauss(rng, 300, 280, 0.05)
	def := Weights(a, 300, 280, WeightOptions{})
	if def.StableRankExact || !math.IsNaN(def.EffectiveRank) || def.CosRowsUsed != 300 {
		t.Errorf("zero options: %+v", def)
	}
	ex := Weights(a, 300, 280, WeightOptions{ExactMaxDim: 300})
	if !ex.StableRankExact || math.IsNaN(ex.EffectiveRank) || relErr(def.StableRank, ex.StableRank) > 1e-5 {
		t.Errorf("power %v vs exact %v (%v)", def.StableRank, ex.StableRank, ex.StableRankExact)
	}
	// Same seed, same result; at most PowerIters iterations.
	if again := Weights(a, 300, 280, WeightOptions{}); fmt.Sprint(again) != fmt.Sprint(def) {
		t.Errorf("not deterministic:\n%+v\n%+v", again, def)
	}
	if st := Weights(a, 300, 280, WeightOptions{PowerIters: 5}); st.PowerIters != 5 {
		t.Errorf("PowerIters cap: ran %d", st.PowerIters)
	}
}

func TestWeightsWorkersAndTinyShapes(t *testing.T) {
	// Every product is computed the same way whatever the split, so the
	// results do not depend on Workers (bit-reproducible diagnostics).
	rng := rand.New(rand.NewPCG(15, 15))
	for _, sh := range [][2]int{{700, 300}, {300, 700}, {1000, 100}, {100, 1000}} {
		w := randGauss(rng, sh[0], sh[1], 0.03)
		var prev string
		for _, workers := range []int{1, 2, 5} {
			for _, exactMax := range []int{0, -1} {
				st := Weights(w, sh[0], sh[1], WeightOptions{Workers: workers, ExactMaxDim: exactMax})
				got := fmt.Sprintf("%v %+v", exactMax, st)
				if workers > 1 && got != prev && exactMax == -1 {
					t.Errorf("%v: workers %d changed the result:\n%s\n%s", sh, workers, got, prev)
				}
				if exactMax == -1 {
					prev = got
				}
			}
		}
	}
	// Rank ≤ 1 shapes on both paths: srank 1, and cos of 1-d rows is ±1.
	for _, sh := range [][2]int{{1, 1}, {1, 5}, {5, 1}, {2, 2}} {
		w := randGauss(rng, sh[0], sh[1], 1)
		if sh == [2]int{2, 2} {
			w = []float32{1, 2, 2, 4} // rank 1
		}
		for _, exactMax := range []int{0, -1} {
			st := Weights(w, sh[0], sh[1], WeightOptions{ExactMaxDim: exactMax})
			if relErr(st.StableRank, 1) > 1e-6 {
				t.Errorf("%v exact=%v: srank %v", sh, st.StableRankExact, st.StableRank)
			}
			if sh[0] > 1 && sh[1] == 1 && st.MeanAbsCos != 1 {
				t.Errorf("%v: MeanAbsCos %v", sh, st.MeanAbsCos)
			}
		}
	}
}

func TestCosSubsampleMatchesFull(t *testing.T) {
	// The default 512-row subsample estimates the all-rows summaries closely.
	rng := rand.New(rand.NewPCG(16, 16))
	for _, tc := range []struct {
		name       string
		rows, cols int
		w          []float32
	}{
		{"random", 2000, 128, randGauss(rng, 2000, 128, 1)},
		{"clustered", 2000, 128, clustered(rng, 2000, 128, 6, 0.4)},
	} {
		sub := Weights(tc.w, tc.rows, tc.cols, DefaultWeightOptions())
		all := Weights(tc.w, tc.rows, tc.cols, WeightOptions{MaxCosRows: -1})
		if sub.CosRowsUsed != DefaultMaxCosRows || all.CosRowsUsed != tc.rows {
			t.Fatalf("rows used %d / %d", sub.CosRowsUsed, all.CosRowsUsed)
		}
		if relErr(sub.MeanAbsCos, all.MeanAbsCos) > 0.02 || math.Abs(sub.FracAbove09-all.FracAbove09) > 0.02 {
			t.Errorf("%s: subsample %.4f/%.4f, all rows %.4f/%.4f", tc.name,
				sub.MeanAbsCos, sub.FracAbove09, all.MeanAbsCos, all.FracAbove09)
		}
		t.Logf("%s: mean|cos| subsample %.4f, all %.4f (rel %.1e)", tc.name, sub.MeanAbsCos, all.MeanAbsCos,
			relErr(sub.MeanAbsCos, all.MeanAbsCos))
	}
}

func TestEffectiveRank(t *testing.T) {
	for _, tc := range []struct {
		s    []float64
		want float64
	}{
		{[]float64{1, 1, 1, 1}, 4},
		{[]float64{3, 0, 0}, 1},
		{[]float64{2, 2, 0, 0}, 2},
		{[]float64{0, 0}, 0},
		{[]float64{}, 0},
		{[]float64{1, -1}, math.NaN()},
		{[]float64{1, math.Inf(1)}, math.NaN()},
		// p = (1/2, 1/4, 1/4): H = 1.5 ln 2, exp(H) = 2^1.5.
		{[]float64{2, 1, 1}, math.Pow(2, 1.5)},
	} {
		got := EffectiveRank(tc.s)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("EffectiveRank(%v) = %v, want %v", tc.s, got, tc.want)
		}
	}
	// Identity n×n: n; rank 1: 1.
	for _, n := range []int{1, 7, 100, 256} {
		id := make([]float32, n*n)
		for i := range n {
			id[i*n+i] = 1
		}
		if st := Weights(id, n, n, DefaultWeightOptions()); math.Abs(st.EffectiveRank-float64(n)) > 1e-9*float64(n) {
			t.Errorf("identity %d: effective rank %.12g", n, st.EffectiveRank)
		}
		rng := rand.New(rand.NewPCG(5, uint64(n)))
		u, v := randGauss(rng, n, 1, 1), randGauss(rng, 1, n+3, 1)
		r1 := make([]float32, n*(n+3))
		for i := range n {
			for j := range n + 3 {
				r1[i*(n+3)+j] = u[i] * v[j]
			}
		}
		if er := EffectiveRank(SingularValues(r1, n, n+3)); math.Abs(er-1) > 1e-6 {
			t.Errorf("rank-1 %dx%d: effective rank %.12g", n, n+3, er)
		}
	}
}

// directCos summarises |cos| over the pairs of rows ids (all when nil) of w by
// a float64 double loop.
func directCos(w []float32, rows, cols int, ids []int) (mean, frac float64, zero int) {
	if ids == nil {
		for i := range rows {
			ids = append(ids, i)
		}
	}
	norm := make([]float64, len(ids))
	for t, i := range ids {
		for _, x := range w[i*cols : (i+1)*cols] {
			norm[t] += float64(x) * float64(x)
		}
		norm[t] = math.Sqrt(norm[t])
		if norm[t] == 0 {
			zero++
		}
	}
	var sum float64
	var above, pairs int
	for a := range ids {
		for b := a + 1; b < len(ids); b++ {
			pairs++
			if norm[a] == 0 || norm[b] == 0 {
				continue
			}
			var d float64
			ra, rb := w[ids[a]*cols:(ids[a]+1)*cols], w[ids[b]*cols:(ids[b]+1)*cols]
			for j := range cols {
				d += float64(ra[j]) * float64(rb[j])
			}
			c := math.Abs(d) / (norm[a] * norm[b])
			sum += c
			if c > 0.9 {
				above++
			}
		}
	}
	return sum / float64(pairs), float64(above) / float64(pairs), zero
}

// clustered returns rows×cols rows drawn around nc random centre directions
// (row i belongs to cluster i % nc, with a random sign), plus relative noise.
func clustered(rng *rand.Rand, rows, cols, nc int, noise float64) []float32 {
	centres := randGauss(rng, nc, cols, 1)
	w := make([]float32, rows*cols)
	for i := range rows {
		c := centres[(i%nc)*cols : (i%nc+1)*cols]
		sign := float32(1)
		if rng.IntN(2) == 0 {
			sign = -1
		}
		for j := range cols {
			w[i*cols+j] = sign*c[j] + float32(rng.NormFloat64()*noise)
		}
	}
	return w
}

func TestCosineSummariesMatchDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for _, tc := range []struct {
		name       string
		rows, cols int
		w          []float32
		o          WeightOptions
		zeroRows   []int
	}{
		{"tall", 300, 64, randGauss(rng, 300, 64, 0.1), WeightOptions{}, nil},
		{"wide-exact-gram", 64, 300, randGauss(rng, 64, 300, 0.1), WeightOptions{}, nil},
		{"wide-power-gram", 300, 600, randGauss(rng, 300, 600, 0.1), WeightOptions{}, nil},
		{"wide-no-reuse", 300, 600, randGauss(rng, 300, 600, 0.1), WeightOptions{MaxCosRows: 299}, nil},
		{"clustered", 200, 48, clustered(rng, 200, 48, 4, 0.2), WeightOptions{}, nil},
		{"clustered-wide", 100, 400, clustered(rng, 100, 400, 3, 0.3), WeightOptions{ExactMaxDim: -1}, nil},
		{"zero-rows", 150, 40, clustered(rng, 150, 40, 2, 0.1), WeightOptions{}, []int{0, 7, 149}},
		{"zero-rows-wide", 30, 90, randGauss(rng, 30, 90, 1), WeightOptions{}, []int{3, 4}},
		{"subsampled", 2000, 40, clustered(rng, 2000, 40, 5, 0.5), WeightOptions{MaxCosRows: 500, Seed: 9}, nil},
		{"all-rows", 1500, 20, randGauss(rng, 1500, 20, 1), WeightOptions{MaxCosRows: -1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, i := range tc.zeroRows {
				clear(tc.w[i*tc.cols : (i+1)*tc.cols])
			}
			st := Weights(tc.w, tc.rows, tc.cols, tc.o)
			o := tc.o.withDefaults()
			var ids []int
			if o.MaxCosRows >= 0 && tc.rows > o.MaxCosRows {
				ids = sampleRows(tc.rows, o.MaxCosRows, o.Seed)
				if st.CosRowsUsed != o.MaxCosRows {
					t.Errorf("CosRowsUsed %d, want %d", st.CosRowsUsed, o.MaxCosRows)
				}
			} else if st.CosRowsUsed != tc.rows {
				t.Errorf("CosRowsUsed %d, want %d", st.CosRowsUsed, tc.rows)
			}
			mean, frac, zero := directCos(tc.w, tc.rows, tc.cols, ids)
			if math.Abs(st.MeanAbsCos-mean) > 1e-6 {
				t.Errorf("MeanAbsCos %.9f, direct %.9f", st.MeanAbsCos, mean)
			}
			pairs := float64(st.CosRowsUsed) * float64(st.CosRowsUsed-1) / 2
			if math.Abs(st.FracAbove09-frac)*pairs > 1.5 { // allow one pair at the threshold
				t.Errorf("FracAbove09 %.9f, direct %.9f", st.FracAbove09, frac)
			}
			if st.ZeroRows != zero {
				t.Errorf("ZeroRows %d, direct %d", st.ZeroRows, zero)
			}
			if math.Abs(st.CosRatio-st.MeanAbsCos/math.Sqrt(2/(math.Pi*float64(tc.cols)))) > 1e-12 {
				t.Errorf("CosRatio %v inconsistent", st.CosRatio)
			}
			t.Logf("mean|cos| %.4f (ratio %.2f), frac>0.9 %.4f, rows %d", st.MeanAbsCos, st.CosRatio, st.FracAbove09, st.CosRowsUsed)
		})
	}
}

func TestCosRandomBaseline(t *testing.T) {
	// Independent Gaussian rows are uniformly random directions: mean |cos|
	// ≈ sqrt(2/(π d_in)), so CosRatio ≈ 1 (exactly 1 + 1/(4d) + O(d⁻²)).
	for _, tc := range []struct{ rows, cols int }{{512, 256}, {512, 64}, {2048, 512}} {
		rng := rand.New(rand.NewPCG(8, uint64(tc.cols)))
		w := randGauss(rng, tc.rows, tc.cols, math.Pow(float64(tc.cols), -0.5))
		st := Weights(w, tc.rows, tc.cols, DefaultWeightOptions())
		if math.Abs(st.CosRatio-1) > 0.05 {
			t.Errorf("%dx%d: CosRatio %.4f, want 1 ± 0.05", tc.rows, tc.cols, st.CosRatio)
		}
		if st.FracAbove09 != 0 {
			t.Errorf("%dx%d: FracAbove09 %v for random rows", tc.rows, tc.cols, st.FracAbove09)
		}
		t.Logf("%dx%d: CosRatio %.4f using %d rows", tc.rows, tc.cols, st.CosRatio, st.CosRowsUsed)
	}
}

func TestCosAllRowsEqual(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, sh := range [][2]int{{50, 30}, {30, 50}, {400, 300}} {
		rows, cols := sh[0], sh[1]
		v := randGauss(rng, 1, cols, 1)
		w := make([]float32, rows*cols)
		for i := range rows {
			s := float32(1 + i%3) // positive multiples and
			if i%2 == 1 {         // negated copies are all aligned
				s = -s
			}
			for j := range cols {
				w[i*cols+j] = s * v[j]
			}
		}
		st := Weights(w, rows, cols, DefaultWeightOptions())
		if math.Abs(st.MeanAbsCos-1) > 1e-6 || st.FracAbove09 != 1 {
			t.Errorf("%v: MeanAbsCos %v, FracAbove09 %v", sh, st.MeanAbsCos, st.FracAbove09)
		}
		if relErr(st.StableRank, 1) > 1e-6 {
			t.Errorf("%v: srank %v", sh, st.StableRank)
		}
	}
	// One row: no pairs.
	st := Weights([]float32{1, 2, 3}, 1, 3, DefaultWeightOptions())
	if !math.IsNaN(st.MeanAbsCos) || !math.IsNaN(st.FracAbove09) || relErr(st.StableRank, 1) > 1e-12 {
		t.Errorf("one row: %+v", st)
	}
}

func TestWeightsNonFinite(t *testing.T) {
	w := make([]float32, 20*10)
	w[17] = float32(math.NaN())
	st := Weights(w, 20, 10, DefaultWeightOptions())
	for _, x := range []float64{st.FrobSq, st.SigmaMax, st.StableRank, st.EffectiveRank, st.MeanAbsCos, st.CosRatio, st.FracAbove09} {
		if !math.IsNaN(x) {
			t.Fatalf("NaN input gave %+v", st)
		}
	}
	if s, _ := StableRank(w, 20, 10, DefaultWeightOptions()); !math.IsNaN(s) {
		t.Errorf("StableRank = %v", s)
	}
	c, order := CosineMatrix(w, 20, 10)
	if !math.IsNaN(float64(c[0])) || len(order) != 20 {
		t.Errorf("CosineMatrix on NaN input")
	}
}

func TestCosineMatrixBlocks(t *testing.T) {
	// Rows 0,3,6,… ≈ ±u, rows 1,4,7,… ≈ ±v, rows 2,5,8,… random; plus a
	// zero row. Each planted block must be contiguous in the order.
	const rows, cols = 90, 64
	rng := rand.New(rand.NewPCG(10, 10))
	u, v := randGauss(rng, 1, cols, 1), randGauss(rng, 1, cols, 1)
	w := randGauss(rng, rows, cols, 1)
	var blockU, blockV []int
	for i := range rows {
		var c []float32
		switch i % 3 {
		case 0:
			c, blockU = u, append(blockU, i)
		case 1:
			c, blockV = v, append(blockV, i)
		default:
			continue
		}
		s := float32(1)
		if rng.IntN(2) == 0 {
			s = -1
		}
		for j := range cols {
			w[i*cols+j] = s*c[j] + 0.15*w[i*cols+j]
		}
	}
	clear(w[2*cols : 3*cols]) // a zero row among the random ones

	c, order := CosineMatrix(w, rows, cols)
	if !isPermutation(order, rows) {
		t.Fatalf("order is not a permutation: %v", order)
	}
	pos := make([]int, rows)
	for a, i := range order {
		pos[i] = a
	}
	for name, block := range map[string][]int{"u": blockU, "v": blockV} {
		p := make([]int, len(block))
		for t, i := range block {
			p[t] = pos[i]
		}
		if slices.Max(p)-slices.Min(p) != len(block)-1 {
			t.Errorf("block %s not contiguous: positions %v", name, p)
		}
	}
	// Entries are the cosines of the permuted rows.
	for a, i := range order {
		for b, j := range order {
			want := directPairCos(w, cols, i, j)
			if i == j && i != 2 {
				want = 1
			}
			if math.Abs(float64(c[a*rows+b])-want) > 2e-6 {
				t.Fatalf("c[%d,%d] (rows %d,%d) = %v, want %v", a, b, i, j, c[a*rows+b], want)
			}
		}
	}
	t.Logf("order: %v", order)
}

func directPairCos(w []float32, cols, i, j int) float64 {
	var d, ni, nj float64
	for t := range cols {
		x, y := float64(w[i*cols+t]), float64(w[j*cols+t])
		d += x * y
		ni += x * x
		nj += y * y
	}
	if ni == 0 || nj == 0 {
		return 0
	}
	return d / math.Sqrt(ni*nj)
}

func isPermutation(p []int, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, x := range p {
		if x < 0 || x >= n || seen[x] {
			return false
		}
		seen[x] = true
	}
	return true
}

func TestCosineMatrixSmall(t *testing.T) {
	c, order := CosineMatrix([]float32{3, 4}, 1, 2)
	if len(c) != 1 || c[0] != 1 || !slices.Equal(order, []int{0}) {
		t.Errorf("1 row: %v %v", c, order)
	}
	// Four clusters of nested sizes, shuffled: all contiguous.
	rng := rand.New(rand.NewPCG(12, 12))
	w := clustered(rng, 200, 100, 4, 0.3)
	_, order = CosineMatrix(w, 200, 100)
	pos := make([]int, 200)
	for a, i := range order {
		pos[i] = a
	}
	for k := range 4 {
		var p []int
		for i := k; i < 200; i += 4 {
			p = append(p, pos[i])
		}
		if slices.Max(p)-slices.Min(p) != len(p)-1 {
			t.Errorf("cluster %d not contiguous", k)
		}
	}
}

func TestSelectRows(t *testing.T) {
	w := []float32{0, 1, 10, 11, 20, 21, 30, 31}
	got := SelectRows(w, 2, []int{3, 0, 3})
	if !slices.Equal(got, []float32{30, 31, 0, 1, 30, 31}) {
		t.Errorf("SelectRows = %v", got)
	}
	if got := SelectRows(w, 2, nil); len(got) != 0 {
		t.Errorf("no ids: %v", got)
	}
	for _, ids := range [][]int{{4}, {-1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ids %v: no panic", ids)
				}
			}()
			SelectRows(w, 2, ids)
		}()
	}
}

func TestShapePanics(t *testing.T) {
	for _, f := range []func(){
		func() { Weights(make([]float32, 6), 2, 4, WeightOptions{}) },
		func() { Weights(nil, 0, 4, WeightOptions{}) },
		func() { SingularValues(make([]float32, 6), 3, 3) },
		func() { CosineMatrix(make([]float32, 6), -2, -3) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

func BenchmarkWeights(b *testing.B) {
	for _, sh := range [][2]int{{1408, 512}, {4096, 256}, {4096, 512}, {512, 512}} {
		rng := rand.New(rand.NewPCG(14, 14))
		w := randGauss(rng, sh[0], sh[1], 0.01)
		b.Run(fmt.Sprintf("%dx%d", sh[0], sh[1]), func(b *testing.B) {
			for b.Loop() {
				Weights(w, sh[0], sh[1], DefaultWeightOptions())
			}
		})
	}
}

// TestTrainingDiagnosticsOfMoEEncode: a MoE model with a shared expert has a one-row matrix (the shared-expert
// gate, [1, d]) whose row cosines are undefined; its class summary writes them as null and the training
// diagnostics still encode as JSON, with every other class's metrics finite.
func TestTrainingDiagnosticsOfMoEEncode(t *testing.T) {
	c := widthConfig(32, arch.GateNone)
	c.FFNKind, c.Experts, c.TopK, c.ExpertFFN, c.SharedFFN, c.SparseStep, c.NormTopK = arch.FFNMoE, 2, 1, 32, 32, 1, true
	m := initModel(t, c, 1, 2)
	v, err := Training(0, m, randomToks(4*64+1, c.Vocab))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"step": 0, "diagnostics": v})
	if err != nil {
		t.Fatalf("a healthy model's diagnostics do not encode: %v", err)
	}
	var rec struct {
		Diagnostics struct {
			Classes []map[string]any `json:"classes"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	gates := 0
	for _, cl := range rec.Diagnostics.Classes {
		if cl["stable_rank"] == nil {
			t.Errorf("class %v has no stable rank", cl["class"])
		}
		if cl["mean_abs_cos"] == nil {
			gates++
		}
	}
	if gates != 1 {
		t.Errorf("%d classes without row cosines, want 1 (the shared-expert gate): %v", gates, rec.Diagnostics.Classes)
	}
}
