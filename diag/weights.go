package diag

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/smallinit/smallinit/diag/diagrec"
)

// WeightOptions tune Weights and StableRank. Zero fields take the value of
// DefaultWeightOptions.
type WeightOptions struct {
	// MaxCosRows caps the number of rows used by the cosine summaries, whose
	// cost is CosRowsUsed²·Cols/2 multiply-adds; larger matrices are
	// subsampled (rows drawn without replacement, seeded by Seed). Negative:
	// always use every row. Default 512: 130,816 pairs, so the subsampling
	// error of MeanAbsCos is well under 1%, at a quarter of the cost of 1024
	// rows (on tall matrices such as a 1408×512 FFN or a 4096×512 embedding
	// the 1024-row product was the largest cost of Weights).
	MaxCosRows int
	// ExactMaxDim: when min(rows, cols) ≤ ExactMaxDim the stable rank and
	// the effective rank come from the exact singular values (SingularValues),
	// otherwise σ_max comes from power iteration and the effective rank is
	// not computed. Negative: never exact. Default 256.
	ExactMaxDim int
	// PowerIters is the maximum number of iterations (matrix-vector
	// products with the k×k Gram matrix) of the Lanczos-accelerated power
	// iteration; at least min(30, PowerIters) are always run, and never more
	// than k. Default 500.
	PowerIters int
	// PowerTol stops the iteration once the estimate of σ_max² changes by at
	// most PowerTol relative between two iterations. Default 1e-6.
	PowerTol float64
	// Seed makes the power-iteration start vector and the row subsample
	// deterministic. The zero seed is a valid seed.
	Seed uint64
	// Workers is the number of goroutines for the Gram products; ≤ 0 means
	// runtime.GOMAXPROCS(0).
	Workers int
}

// Defaults of WeightOptions.
const (
	DefaultMaxCosRows  = 512
	DefaultExactMaxDim = 256
	DefaultPowerIters  = 500
	DefaultPowerTol    = 1e-6
	minPowerIters      = 30
)

// DefaultWeightOptions returns MaxCosRows 512, ExactMaxDim 256, PowerIters
// 500, PowerTol 1e-6, Seed 0 and GOMAXPROCS workers.
func DefaultWeightOptions() WeightOptions {
	return WeightOptions{
		MaxCosRows:  DefaultMaxCosRows,
		ExactMaxDim: DefaultExactMaxDim,
		PowerIters:  DefaultPowerIters,
		PowerTol:    DefaultPowerTol,
	}
}

func (o WeightOptions) withDefaults() WeightOptions {
	if o.MaxCosRows == 0 {
		o.MaxCosRows = DefaultMaxCosRows
	}
	if o.ExactMaxDim == 0 {
		o.ExactMaxDim = DefaultExactMaxDim
	}
	if o.PowerIters <= 0 {
		o.PowerIters = DefaultPowerIters
	}
	if o.PowerTol <= 0 {
		o.PowerTol = DefaultPowerTol
	}
	return o
}

// Weights computes the stable rank, effective rank and row-cosine summaries
// of the row-major [rows, cols] = [d_out, d_in] matrix w. See diagrec.WeightStats for
// the definitions and WeightOptions for exact-versus-power-iteration and row
// subsampling.
//
// Cost with k = min(rows, cols), K = max(rows, cols), r = CosRowsUsed:
//   - exact path (k ≤ ExactMaxDim): the float64 Gram matrix of the smaller
//     side, k²K/2 scalar multiply-adds, plus about (2/3)k³ for its
//     eigenvalues;
//   - power path: 30-40 Lanczos steps of 2·rows·cols float32 SIMD
//     multiply-adds each (matrix-free), or k² each on the row Gram when that
//     is formed anyway for the cosines (rows ≤ cols, all rows used);
//   - cosines: r²·cols/2 float32 SIMD multiply-adds for the Gram of the
//     normalised rows, free when rows ≤ cols and every row is used, because
//     the row Gram W Wᵀ of the spectral part then serves both.
//
// The products use Workers goroutines.
//
// If w holds a NaN or an infinity, every float field except RandomBaseline is
// NaN (a diverged run yields NaN diagnostics rather than garbage; note that
// encoding/json rejects NaN). It panics if rows or cols is not positive or
// len(w) != rows·cols.
func Weights(w []float32, rows, cols int, o WeightOptions) diagrec.WeightStats {
	checkShape(w, rows, cols)
	o = o.withDefaults()
	st := diagrec.WeightStats{
		Rows:           rows,
		Cols:           cols,
		RandomBaseline: math.Sqrt(2 / (math.Pi * float64(cols))),
		EffectiveRank:  math.NaN(),
	}
	frob, finite := sumSquares(w)
	useAll := o.MaxCosRows < 0 || rows <= o.MaxCosRows
	st.CosRowsUsed = rows
	if !useAll {
		st.CosRowsUsed = o.MaxCosRows
	}
	if !finite {
		nan := math.NaN()
		st.FrobSq, st.SigmaMax, st.StableRank = nan, nan, nan
		st.MeanAbsCos, st.CosRatio, st.FracAbove09 = nan, nan, nan
		return st
	}
	st.FrobSq = frob

	sp := spectral(w, rows, cols, frob, o, useAll && rows <= cols)
	st.SigmaMax = math.Sqrt(sp.lambdaMax)
	st.StableRankExact = sp.exact
	st.PowerIters = sp.iters
	if sp.lambdaMax > 0 {
		st.StableRank = frob / sp.lambdaMax
	}
	if sp.exact {
		st.EffectiveRank = EffectiveRank(sp.sv)
	}

	var cs cosSummary
	if sp.rowGram != nil {
		cs = summarizeGram(sp.rowGram, rows)
	} else {
		var ids []int
		if !useAll {
			ids = sampleRows(rows, o.MaxCosRows, o.Seed)
		}
		a, r := normalizedRows(w, rows, cols, ids)
		cs = summarizeGram(gram32(a, r, cols, o.Workers), r)
	}
	st.MeanAbsCos = cs.meanAbs
	st.FracAbove09 = cs.fracAbove
	st.ZeroRows = cs.zeroRows
	st.CosRatio = st.MeanAbsCos / st.RandomBaseline
	return st
}

// StableRank returns srank(W) = ‖W‖_F² / ‖W‖₂² of the row-major [rows, cols]
// matrix w and whether σ_max = ‖W‖₂ came from the exact singular values
// (min(rows, cols) ≤ o.ExactMaxDim) rather than from the Lanczos-accelerated
// power iteration on the Gram matrix of the smaller side (see the package
// documentation). It is the StableRank field of Weights
// without the cosine work: 0 for a zero matrix, NaN if w is not finite.
func StableRank(w []float32, rows, cols int, o WeightOptions) (srank float64, exact bool) {
	checkShape(w, rows, cols)
	o = o.withDefaults()
	frob, finite := sumSquares(w)
	if !finite {
		return math.NaN(), false
	}
	sp := spectral(w, rows, cols, frob, o, false)
	if sp.lambdaMax > 0 {
		srank = frob / sp.lambdaMax
	}
	return srank, sp.exact
}

// EffectiveRank returns exp(H(p)) with p_i = s_i / Σ_j s_j and
// H(p) = −Σ p_i ln p_i (terms with p_i = 0 omitted) for the singular values s
// (Roy & Vetterli 2007, "The effective rank: a measure of effective
// dimensionality"). It lies in [1, len(s)] for a non-zero matrix: len(s) when
// all values are equal, 1 for rank 1. It returns 0 when every s_i is 0, and
// NaN if some s_i is negative or not finite.
func EffectiveRank(s []float64) float64 {
	var sum float64
	for _, x := range s {
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return math.NaN()
		}
		sum += x
	}
	if sum == 0 {
		return 0
	}
	var h float64
	for _, x := range s {
		if x > 0 {
			p := x / sum
			h -= p * math.Log(p)
		}
	}
	return math.Exp(h)
}

// spectralResult is what the spectral part of Weights found.
type spectralResult struct {
	lambdaMax float64   // σ_max², unscaled
	exact     bool      // from the exact singular values
	sv        []float64 // all singular values (exact path only)
	iters     int       // power iterations (power path only)
	rowGram   []float64 // W Wᵀ up to a positive factor, when requested and rows ≤ cols
}

// spectral finds σ_max² of w (exactly or by lanczosMax, per o) from the
// Gram matrix of its smaller side. With wantRowGram (only valid when
// rows ≤ cols) it also returns that Gram matrix, which is then W Wᵀ up to a
// positive factor, for the cosine summaries. w must be finite and frobSq its
// squared Frobenius norm.
func spectral(w []float32, rows, cols int, frobSq float64, o WeightOptions, wantRowGram bool) spectralResult {
	k := min(rows, cols)
	var res spectralResult
	if o.ExactMaxDim >= 0 && k <= o.ExactMaxDim {
		g := smallGram64(w, rows, cols, o.Workers)
		if wantRowGram {
			res.rowGram = slices.Clone(g)
		}
		res.sv = svFromGram(g, k, max(rows, cols))
		res.lambdaMax = res.sv[0] * res.sv[0]
		res.exact = true
		return res
	}
	s := pow2Scale(frobSq, rows*cols)
	minIt := min(minPowerIters, o.PowerIters)
	if wantRowGram {
		// rows ≤ cols: the row Gram (s²·W Wᵀ) is needed for the cosines
		// anyway, so iterate on it.
		g := gram32(scaledCopy(w, float32(s)), rows, cols, o.Workers)
		res.rowGram = g
		res.lambdaMax, res.iters = lanczosMax(rows, gramOp(g, rows), minIt, o.PowerIters, o.PowerTol, o.Seed)
	} else {
		// Matrix-free: ~35 products at 2·rows·cols each beat forming the
		// k×k Gram (k²·max(rows, cols)/2) for every k above ~140.
		op, k := normalOp(w, rows, cols, s, o.Workers)
		res.lambdaMax, res.iters = lanczosMax(k, op, minIt, o.PowerIters, o.PowerTol, o.Seed)
	}
	res.lambdaMax /= s * s
	return res
}

// cosSummary holds the off-diagonal |cos| summaries of a set of rows.
type cosSummary struct {
	meanAbs, fracAbove float64
	zeroRows           int
}

// summarizeGram summarises cos_ij = g_ij / sqrt(g_ii·g_jj) over the pairs
// i < j of the r×r Gram matrix g of r rows; a row with g_ii = 0 is a zero row
// and has cos = 0 with every other row. |cos| is clamped to 1 against rounding.
func summarizeGram(g []float64, r int) cosSummary {
	inv := make([]float64, r)
	var cs cosSummary
	for i := range r {
		if d := g[i*r+i]; d > 0 {
			inv[i] = 1 / math.Sqrt(d)
		} else {
			cs.zeroRows++
		}
	}
	if r < 2 {
		cs.meanAbs, cs.fracAbove = math.NaN(), math.NaN()
		return cs
	}
	var sum float64
	var above int
	for i := range r {
		row := g[i*r : (i+1)*r]
		si := inv[i]
		for j := i + 1; j < r; j++ {
			c := math.Min(math.Abs(row[j])*si*inv[j], 1)
			sum += c
			if c > 0.9 {
				above++
			}
		}
	}
	pairs := float64(r) * float64(r-1) / 2
	cs.meanAbs = sum / pairs
	cs.fracAbove = float64(above) / pairs
	return cs
}

// sampleRows returns n distinct row indices out of m, ascending, drawn by a
// partial Fisher-Yates shuffle seeded by seed (deterministic for a given
// m, n and seed).
func sampleRows(m, n int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x636f73726f7773)) // "cosrows"
	perm := make([]int, m)
	for i := range perm {
		perm[i] = i
	}
	for i := range n {
		j := i + rng.IntN(m-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	ids := perm[:n]
	slices.Sort(ids)
	return ids
}

// normalizedRows returns the rows ids of the [rows, cols] matrix w (all rows
// when ids is nil) scaled to unit L2 norm (norm computed in float64), as a new
// [r, cols] float32 matrix; zero rows stay zero.
func normalizedRows(w []float32, rows, cols int, ids []int) (a []float32, r int) {
	r = rows
	if ids != nil {
		r = len(ids)
	}
	a = make([]float32, r*cols)
	for t := range r {
		i := t
		if ids != nil {
			i = ids[t]
		}
		src := w[i*cols : (i+1)*cols]
		dst := a[t*cols : (t+1)*cols]
		// Squares of float32 values neither overflow nor underflow in
		// float64, so a row is zero exactly when ss is.
		ss, _ := sumSquares(src)
		if ss == 0 {
			continue
		}
		f := 1 / math.Sqrt(ss)
		for j, x := range src {
			dst[j] = float32(float64(x) * f)
		}
	}
	return a, r
}

// SelectRows returns a new row-major [len(ids), cols] matrix made of the rows
// ids of the row-major matrix w with cols columns, in the order given. Use it
// to restrict the diagnostics of an embedding or LM-head matrix [V, d] to the
// rows of chosen tokens (e.g. the most frequent ones):
// Weights(SelectRows(E, d, ids), len(ids), d, o). It panics if cols is not
// positive, len(w) is not a multiple of cols or an id is out of range.
func SelectRows(w []float32, cols int, ids []int) []float32 {
	if cols <= 0 || len(w)%cols != 0 {
		panic("diag.SelectRows: len(w) is not a positive multiple of cols")
	}
	rows := len(w) / cols
	out := make([]float32, len(ids)*cols)
	for t, i := range ids {
		if i < 0 || i >= rows {
			panic("diag.SelectRows: row id out of range")
		}
		copy(out[t*cols:(t+1)*cols], w[i*cols:(i+1)*cols])
	}
	return out
}

// CosineMatrix returns the full row-cosine matrix C = Ŵ Ŵᵀ of the row-major
// [rows, cols] matrix w (Ŵ: rows scaled to unit L2 norm; a zero row has
// cos = 0 with every row, itself included, while other diagonal entries are
// exactly 1), with rows and columns permuted so that mutually aligned rows
// sit in contiguous blocks, ready for a heatmap:
//
//	c[a*rows+b] = cos(w_order[a], w_order[b]).
//
// The order is the leaf order of an average-linkage (UPGMA) hierarchical
// clustering with distance 1 − |cos| (so anti-parallel rows count as
// aligned), built by the nearest-neighbour-chain algorithm in O(rows²) time.
// Every cluster of the dendrogram occupies a contiguous range of the order,
// so any group of rows that are closer to each other than to the rest forms
// one block. At each merge the child holding the smaller original row index
// is placed first, which makes the order deterministic.
//
// Memory is O(rows²) (about 20·rows² bytes at the peak), so restrict large
// matrices first, e.g. with SelectRows. The Gram product uses GOMAXPROCS
// goroutines. A non-finite w gives a NaN matrix and the identity order. It
// panics if rows or cols is not positive or len(w) != rows·cols.
func CosineMatrix(w []float32, rows, cols int) (c []float32, order []int) {
	checkShape(w, rows, cols)
	m := rows
	c = make([]float32, m*m)
	order = make([]int, m)
	for i := range order {
		order[i] = i
	}
	if _, finite := sumSquares(w); !finite {
		for i := range c {
			c[i] = float32(math.NaN())
		}
		return c, order
	}
	a, _ := normalizedRows(w, rows, cols, nil)
	g := gram32(a, m, cols, 0)
	zero := make([]bool, m)
	for i := range m {
		zero[i] = g[i*m+i] == 0
	}
	// g becomes the cosine matrix (zero rows have g_ij = 0 already).
	for i := range m {
		for j := range m {
			switch {
			case i == j:
				if !zero[i] {
					g[i*m+j] = 1
				}
			default:
				g[i*m+j] = math.Max(-1, math.Min(1, g[i*m+j]))
			}
		}
	}
	order = clusterOrder(g, m)
	for a, i := range order {
		for b, j := range order {
			c[a*m+b] = float32(g[i*m+j])
		}
	}
	return c, order
}

// clusterOrder returns the dendrogram leaf order of average-linkage
// clustering of m items with distance 1 − |cos| from the m×m cosine matrix
// cos (not modified), using the nearest-neighbour chain algorithm (valid for
// average linkage, which satisfies the reducibility property). Ties go to the
// previous chain element, then to the lower index, which rules out cycles.
func clusterOrder(cos []float64, m int) []int {
	if m == 1 {
		return []int{0}
	}
	d := make([]float64, m*m)
	for i, x := range cos {
		d[i] = 1 - math.Abs(x)
	}
	size := make([]int, m)
	node := make([]int, m)    // dendrogram node held by an active slot
	minLeaf := make([]int, m) // smallest original index in the slot's cluster
	active := make([]int, m)  // active slots, ascending
	for i := range m {
		size[i], node[i], minLeaf[i], active[i] = 1, i, i, i
	}
	// Internal node m+t has children left[t], right[t].
	left := make([]int, 0, m-1)
	right := make([]int, 0, m-1)
	chain := make([]int, 0, m)
	for len(active) > 1 {
		if len(chain) == 0 {
			chain = append(chain, active[0])
		}
		var a, b int
		for {
			a = chain[len(chain)-1]
			best, bestD := -1, math.Inf(1)
			if len(chain) >= 2 {
				best = chain[len(chain)-2]
				bestD = d[a*m+best]
			}
			for _, x := range active {
				if x != a && d[a*m+x] < bestD {
					best, bestD = x, d[a*m+x]
				}
			}
			if best == -1 { // only NaN distances: cannot happen for finite input
				best = active[0]
				if best == a {
					best = active[1]
				}
			}
			if len(chain) >= 2 && best == chain[len(chain)-2] {
				b = best
				break
			}
			chain = append(chain, best)
		}
		chain = chain[:len(chain)-2]
		// Merge b into a's slot... keep the lower slot index for stability.
		if b < a {
			a, b = b, a
		}
		na, nb := float64(size[a]), float64(size[b])
		for _, x := range active {
			if x == a || x == b {
				continue
			}
			v := (na*d[a*m+x] + nb*d[b*m+x]) / (na + nb)
			d[a*m+x], d[x*m+a] = v, v
		}
		l, r := node[a], node[b]
		if minLeaf[b] < minLeaf[a] {
			l, r = r, l
		}
		left = append(left, l)
		right = append(right, r)
		node[a] = m + len(left) - 1
		size[a] += size[b]
		minLeaf[a] = min(minLeaf[a], minLeaf[b])
		active = slices.DeleteFunc(active, func(x int) bool { return x == b })
	}
	// Leaf order by an explicit-stack depth-first walk from the root.
	order := make([]int, 0, m)
	stack := []int{node[active[0]]}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n < m {
			order = append(order, n)
			continue
		}
		stack = append(stack, right[n-m], left[n-m])
	}
	return order
}
