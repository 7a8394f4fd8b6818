package diag

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/smallinit/smallinit/kernel"
)

// This file holds the dense linear algebra behind the weight diagnostics:
// Gram matrices (float32 SIMD dot products or exact float64 sums), a
// symmetric eigenvalue solver (Householder tridiagonalisation + implicit QL)
// and Lanczos-accelerated power iteration. Everything works on row-major slices.

// SingularValues returns all min(rows, cols) singular values of the row-major
// [rows, cols] matrix w, in descending order, computed in float64.
//
// Method: the Gram matrix of the smaller side, G = W Wᵀ (rows ≤ cols) or
// G = Wᵀ W (otherwise), is formed exactly in float64 (a product of two
// float32 values is exact in float64; only the sums round), its eigenvalues λ
// are found by Householder tridiagonalisation and the implicit QL algorithm,
// and σ_i = sqrt(λ_i). Forming G squares the condition number: an eigenvalue
// is only resolved down to the rounding error of G, about max(rows, cols)·ε·λ_max
// with ε = 2⁻⁵², so eigenvalues at or below that floor (including slightly
// negative ones) are returned as σ = 0. In σ terms the floor is
// sqrt(max(rows, cols)·ε)·σ_max, about 1e-6·σ_max for max(rows, cols) = 4096:
// far below anything the diagnostics care about.
//
// Cost: min(m,n)²·max(m,n)/2 scalar float64 multiply-adds for G (spread over
// GOMAXPROCS goroutines) plus about (2/3)·min(m,n)³ for the eigenvalues, so it
// is meant for min(rows, cols) up to a few hundred (see
// WeightOptions.ExactMaxDim). If w holds a NaN or an infinity, every returned
// value is NaN. It panics if rows or cols is not positive or
// len(w) != rows·cols.
func SingularValues(w []float32, rows, cols int) []float64 {
	checkShape(w, rows, cols)
	k := min(rows, cols)
	if _, finite := sumSquares(w); !finite {
		sv := make([]float64, k)
		for i := range sv {
			sv[i] = math.NaN()
		}
		return sv
	}
	g := smallGram64(w, rows, cols, 0)
	return svFromGram(g, k, max(rows, cols))
}

// svFromGram turns the k×k Gram matrix g (destroyed) of a matrix whose other
// side has length long into descending singular values, zeroing those below
// the rounding floor described in SingularValues.
func svFromGram(g []float64, k, long int) []float64 {
	lam := symEigenvalues(g, k)
	slices.Sort(lam)
	slices.Reverse(lam)
	floor := 0.0
	if len(lam) > 0 {
		floor = float64(max(k, long)) * eps64 * lam[0]
	}
	sv := make([]float64, k)
	for i, l := range lam {
		if l > floor {
			sv[i] = math.Sqrt(l)
		}
	}
	return sv
}

const eps64 = 0x1p-52

// checkShape panics unless w is a [rows, cols] matrix with both sides positive.
func checkShape(w []float32, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		panic("diag: matrix sides must be positive")
	}
	if len(w) != rows*cols {
		panic("diag: len(w) != rows*cols")
	}
}

// sumSquares returns Σ w_i² accumulated in float64 (each square is exact) and
// whether every element is finite.
func sumSquares(w []float32) (float64, bool) {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(w); i += 4 {
		a, b, c, d := float64(w[i]), float64(w[i+1]), float64(w[i+2]), float64(w[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(w); i++ {
		a := float64(w[i])
		s0 += a * a
	}
	s := (s0 + s1) + (s2 + s3)
	// Squares of finite float32 values cannot overflow float64, so the sum
	// is finite exactly when every element is.
	return s, !math.IsNaN(s) && !math.IsInf(s, 0)
}

// pow2Scale returns the power of two s that brings the root mean square of
// the count entries with sum of squares frobSq to [0.5, 1), or 1 for a zero
// matrix. Scaling by s is exact and keeps float32 products and Gram entries
// (at most s²·frobSq ≈ count) far from overflow and from the subnormal range.
// s is clamped to [2⁻¹⁰⁰, 2¹⁰⁰] so that it stays a finite float32 even for
// a matrix of subnormals.
func pow2Scale(frobSq float64, count int) float64 {
	if frobSq == 0 {
		return 1
	}
	_, e := math.Frexp(math.Sqrt(frobSq / float64(count)))
	return math.Ldexp(1, max(-100, min(100, -e)))
}

// scaledCopy returns s·w as a new slice.
func scaledCopy(w []float32, s float32) []float32 {
	a := make([]float32, len(w))
	for i, x := range w {
		a[i] = x * s
	}
	return a
}

// transposeScaled returns s·Wᵀ, [cols, rows] row-major, for the row-major
// [rows, cols] matrix w. It works on panels of 16 rows (which stay in L1), so
// every write fills a whole cache line of the result.
func transposeScaled(w []float32, rows, cols int, s float32) []float32 {
	a := make([]float32, len(w))
	const panel = 16
	for i0 := 0; i0 < rows; i0 += panel {
		src := w[i0*cols : min(i0+panel, rows)*cols]
		h := len(src) / cols
		for j := range cols {
			dst := a[j*rows+i0 : j*rows+i0+h]
			for r := range dst {
				dst[r] = src[r*cols+j] * s
			}
		}
	}
	return a
}

// smallGram64 returns the exact-float64 Gram matrix of the smaller side of w:
// W Wᵀ when rows ≤ cols, Wᵀ W otherwise (k×k, k = min(rows, cols)).
func smallGram64(w []float32, rows, cols, workers int) []float64 {
	k, long := rows, cols
	a := make([]float64, len(w))
	if rows <= cols {
		for i, x := range w {
			a[i] = float64(x)
		}
	} else {
		k, long = cols, rows
		for i := range rows {
			row := w[i*cols : (i+1)*cols]
			for j, x := range row {
				a[j*rows+i] = float64(x)
			}
		}
	}
	return gram64(a, k, long, workers)
}

// gramTile is the side of the square blocks of G handed to one worker task.
const gramTile = 32

// forTiles calls f(i0, i1, j0, j1) for every upper-triangle block (j0 ≥ i0)
// of a k×k matrix cut into gramTile×gramTile blocks, on up to workers
// goroutines (workers <= 0: GOMAXPROCS). Blocks write disjoint entries.
func forTiles(k, workers int, f func(i0, i1, j0, j1 int)) {
	nt := (k + gramTile - 1) / gramTile
	type tile struct{ i, j int }
	tiles := make([]tile, 0, nt*(nt+1)/2)
	for i := range nt {
		for j := i; j < nt; j++ {
			tiles = append(tiles, tile{i, j})
		}
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(tiles))
	var next atomic.Int64
	run := func() {
		for {
			t := int(next.Add(1)) - 1
			if t >= len(tiles) {
				return
			}
			i0, j0 := tiles[t].i*gramTile, tiles[t].j*gramTile
			f(i0, min(i0+gramTile, k), j0, min(j0+gramTile, k))
		}
	}
	if workers <= 1 {
		run()
		return
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(run)
	}
	run()
	wg.Wait()
}

// mirrorUpper copies the upper triangle of the k×k matrix g into the lower.
func mirrorUpper(g []float64, k int) {
	for i := range k {
		for j := i + 1; j < k; j++ {
			g[j*k+i] = g[i*k+j]
		}
	}
}

// gram64 returns G = A Aᵀ (full k×k) for the row-major float64 matrix A
// [k, n], with float64 products and sums.
func gram64(a []float64, k, n, workers int) []float64 {
	g := make([]float64, k*k)
	forTiles(k, workers, func(i0, i1, j0, j1 int) {
		for i := i0; i < i1; i += 2 {
			if i+1 == i1 {
				ai := a[i*n : (i+1)*n]
				for j := max(j0, i); j < j1; j++ {
					g[i*k+j] = dot64(ai, a[j*n:(j+1)*n])
				}
				continue
			}
			ai0, ai1 := a[i*n:(i+1)*n], a[(i+1)*n:(i+2)*n]
			j := max(j0, i)
			for ; j+2 <= j1; j += 2 {
				s00, s01, s10, s11 := dot64x2x2(ai0, ai1, a[j*n:(j+1)*n], a[(j+1)*n:(j+2)*n])
				g[i*k+j], g[i*k+j+1] = s00, s01
				g[(i+1)*k+j], g[(i+1)*k+j+1] = s10, s11
			}
			for ; j < j1; j++ {
				aj := a[j*n : (j+1)*n]
				g[i*k+j] = dot64(ai0, aj)
				g[(i+1)*k+j] = dot64(ai1, aj)
			}
		}
	})
	mirrorUpper(g, k)
	return g
}

// dot64 returns Σ x_i·y_i in float64.
func dot64(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot64x2x2 returns the four dot products of (x0, x1) with (y0, y1), reading
// each operand once.
func dot64x2x2(x0, x1, y0, y1 []float64) (s00, s01, s10, s11 float64) {
	n := len(x0)
	x1, y0, y1 = x1[:n], y0[:n], y1[:n]
	for p := range n {
		a, b, c, d := x0[p], x1[p], y0[p], y1[p]
		s00 += a * c
		s01 += a * d
		s10 += b * c
		s11 += b * d
	}
	return
}

// gramChunk is the length of the column chunks of gram32: the float32 dot
// product of one chunk is added to a float64 accumulator, which bounds the
// float32 rounding error and keeps a tile's chunks in cache.
const gramChunk = 2048

// gram32 returns G = A Aᵀ (full k×k, float64) for the row-major float32
// matrix A [k, n]: SIMD float32 dot products (kernel.Dot) over column chunks of
// gramChunk, summed in float64. Relative accuracy per entry is about 1e-7 of
// ‖a_i‖·‖a_j‖.
func gram32(a []float32, k, n, workers int) []float64 {
	g := make([]float64, k*k)
	forTiles(k, workers, func(i0, i1, j0, j1 int) {
		for c0 := 0; c0 < n; c0 += gramChunk {
			c1 := min(c0+gramChunk, n)
			for i := i0; i < i1; i++ {
				ai := a[i*n+c0 : i*n+c1]
				gi := g[i*k : (i+1)*k]
				for j := max(j0, i); j < j1; j++ {
					gi[j] += float64(kernel.Dot(ai, a[j*n+c0:j*n+c1]))
				}
			}
		}
	})
	mirrorUpper(g, k)
	return g
}

// symEigenvalues returns the eigenvalues (unordered) of the symmetric n×n
// row-major matrix a, which it overwrites. Householder reduction to
// tridiagonal form followed by the implicit QL algorithm with Wilkinson-type
// shifts (eigenvalues only), in float64.
func symEigenvalues(a []float64, n int) []float64 {
	d, e := tridiagonalize(a, n)
	tql(d, e)
	return d
}

// tridiagonalize reduces the symmetric n×n matrix a (overwritten; only its
// lower triangle is used) to tridiagonal form Qᵀ A Q by n-2 Householder
// reflections and returns its diagonal d and off-diagonal e (e[i] couples i
// and i+1; e[n-1] = 0). Cost about (2/3)·n³ multiply-adds.
func tridiagonalize(a []float64, n int) (d, e []float64) {
	d = make([]float64, n)
	e = make([]float64, n)
	v := make([]float64, n)
	p := make([]float64, n)
	for k := 0; k+2 < n; k++ {
		// x = A[k+1:, k]; reflect it onto alpha·e1.
		m := n - k - 1
		x := v[:m]
		var scale float64
		for i := range m {
			x[i] = a[(k+1+i)*n+k]
			scale = max(scale, math.Abs(x[i]))
		}
		if scale == 0 {
			e[k] = 0
			continue
		}
		var nrm2 float64
		for i := range m {
			x[i] /= scale
			nrm2 += x[i] * x[i]
		}
		nrm := math.Sqrt(nrm2)
		alpha := -math.Copysign(nrm, x[0])
		// v = x - alpha·e1, normalised to unit length.
		x[0] -= alpha
		vnorm := math.Sqrt(sqNorm(x))
		if vnorm == 0 {
			e[k] = alpha * scale
			continue
		}
		for i := range m {
			x[i] /= vnorm
		}
		e[k] = alpha * scale
		// Trailing block S = A[k+1:, k+1:]: S ← H S H with H = I - 2vvᵀ,
		// i.e. S -= 2(v wᵀ + w vᵀ) with p = S v, K = vᵀp, w = p - K v.
		// Only the lower triangle of S is read and kept up to date.
		off := k + 1
		pp := p[:m]
		clear(pp)
		for i := range m {
			row := a[(off+i)*n+off : (off+i)*n+off+i+1] // S[i, 0..i]
			xi := x[i]
			var s float64
			for j, sij := range row[:i] {
				s += sij * x[j]
				pp[j] += sij * xi
			}
			pp[i] += s + row[i]*xi
		}
		K := dot64(x, pp)
		for i := range m {
			pp[i] -= K * x[i]
		}
		for i := range m {
			row := a[(off+i)*n+off : (off+i)*n+off+i+1]
			vi, wi := 2*x[i], 2*pp[i]
			xs, ps := x[:i+1], pp[:i+1]
			for j := range row {
				row[j] -= vi*ps[j] + wi*xs[j]
			}
		}
	}
	for i := range n {
		d[i] = a[i*n+i]
	}
	if n >= 2 {
		e[n-2] = a[(n-1)*n+n-2]
	}
	e[n-1] = 0
	return d, e
}

func sqNorm(x []float64) float64 { return dot64(x, x) }

// tql computes in place the eigenvalues of the symmetric tridiagonal matrix
// with diagonal d and off-diagonal e (e[i] couples i and i+1, e[n-1] unused),
// by the implicit QL algorithm with shifts (Numerical Recipes' tqli without
// eigenvectors). e is destroyed. An eigenvalue that has not converged after
// 100 iterations (never seen in practice) is left at its current estimate.
// Hypotenuses are taken as sqrt(f² + g²) without rescaling: the entries here
// derive from float32 data, far inside the float64 range where that
// overflows or underflows.
func tql(d, e []float64) {
	n := len(d)
	if n == 0 {
		return
	}
	e[n-1] = 0
	for l := 0; l < n; l++ {
		for iter := 0; ; iter++ {
			m := l
			for ; m < n-1; m++ {
				dd := math.Abs(d[m]) + math.Abs(d[m+1])
				if math.Abs(e[m]) <= eps64*dd {
					break
				}
			}
			if m == l || iter == 100 {
				break
			}
			g := (d[l+1] - d[l]) / (2 * e[l])
			r := math.Sqrt(g*g + 1)
			g = d[m] - d[l] + e[l]/(g+math.Copysign(r, g))
			s, c, p := 1.0, 1.0, 0.0
			i := m - 1
			underflow := false
			for ; i >= l; i-- {
				f := s * e[i]
				b := c * e[i]
				r = math.Sqrt(f*f + g*g)
				e[i+1] = r
				if r == 0 {
					d[i+1] -= p
					e[m] = 0
					underflow = true
					break
				}
				s = f / r
				c = g / r
				g = d[i+1] - p
				r = (d[i]-g)*s + 2*c*b
				p = s * r
				d[i+1] = g + p
				g = c*r - b
			}
			if underflow {
				continue
			}
			d[l] -= p
			e[l] = g
			e[m] = 0
		}
	}
}

// lanczosMax estimates the largest eigenvalue of a symmetric positive
// semi-definite k×k operator (op sets y = A·q): power iteration accelerated
// by the Lanczos process. The iterates A^t·v₀ of power iteration from the
// seeded Gaussian start vector v₀ span the Krylov space K_t; the Lanczos
// process builds an orthonormal basis of K_t (with full reorthogonalisation in
// float64) and the tridiagonal projection T_t of A onto it, and the estimate
// θ_t = λ_max(T_t) is the largest Rayleigh quotient of any vector in K_t. It
// is therefore never worse than the Rayleigh quotient of the t-th power
// iterate, and converges far faster when the top of the spectrum is crowded
// (random matrices), where plain power iteration stalls and the relative-change
// test stops it early with errors up to 1e-3.
//
// op receives q rounded to float32 (the products run on float32 data with
// kernel.Dot, relative error about 1e-7). The loop stops after at least
// minIter and at most maxIter products once θ changes by at most tol·θ
// between consecutive steps, or when the Krylov space is exhausted (t = k, or
// an exactly invariant subspace). iters is the number of products.
func lanczosMax(k int, op func(y []float64, q []float32), minIter, maxIter int, tol float64, seed uint64) (theta float64, iters int) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	q := make([]float64, k) // current basis vector
	for i := range q {
		q[i] = rng.NormFloat64()
	}
	scaleTo(q, 1/math.Sqrt(dot64(q, q)))
	q32 := make([]float32, k)
	y := make([]float64, k)
	var basis [][]float64 // q_1 .. q_t
	var alpha, beta []float64
	td, te := make([]float64, 0, 64), make([]float64, 0, 64)
	prev := math.Inf(1)
	for iters < min(maxIter, k) {
		iters++
		basis = append(basis, slices.Clone(q))
		for i, x := range q {
			q32[i] = float32(x)
		}
		op(y, q32)
		a := dot64(q, y)
		alpha = append(alpha, a)
		// Full reorthogonalisation against every basis vector, twice
		// ("twice is enough"); it also removes the α q_t and β q_{t-1} terms
		// of the three-term recurrence.
		for range 2 {
			for _, b := range basis {
				axpy64(-dot64(b, y), b, y)
			}
		}
		bn := math.Sqrt(dot64(y, y))
		// θ = largest eigenvalue of T_t = tridiag(beta, alpha, beta).
		td = append(td[:0], alpha...)
		te = append(append(te[:0], beta...), 0)
		tql(td, te)
		theta = slices.Max(td)
		if bn <= 1e-300 {
			break // invariant subspace: θ is exact
		}
		if iters >= minIter && math.Abs(theta-prev) <= tol*math.Abs(theta) {
			break
		}
		prev = theta
		beta = append(beta, bn)
		copy(q, y)
		scaleTo(q, 1/bn)
	}
	return max(theta, 0), iters
}

// gramOp returns the operator y = g·q of the k×k matrix g (float64,
// row-major), applied through a float32 copy with kernel.Dot.
func gramOp(g []float64, k int) func(y []float64, q []float32) {
	g32 := make([]float32, k*k)
	for i, x := range g {
		g32[i] = float32(x)
	}
	return func(y []float64, q []float32) {
		for i := range k {
			y[i] = float64(kernel.Dot(g32[i*k:(i+1)*k], q))
		}
	}
}

// normalOp returns the matrix-free operator of the Gram matrix of the smaller
// side of the row-major [rows, cols] matrix w, times s² for the power of two
// s from pow2Scale: y = s²·Wᵀ(W q) on R^cols when cols ≤ rows, y = s²·W(Wᵀ q) on
// R^rows otherwise. Each product costs 2·rows·cols multiply-adds, all as
// kernel.Dot over contiguous rows of w or of a transposed, scaled copy, split
// over workers goroutines. It returns the operator and its dimension.
func normalOp(w []float32, rows, cols int, s float64, workers int) (op func(y []float64, q []float32), k int) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// wt = s·Wᵀ, [cols, rows].
	wt := transposeScaled(w, rows, cols, float32(s))
	fs := float32(s)
	if cols <= rows {
		t := make([]float32, rows)
		return func(y []float64, q []float32) {
			parallelRange(rows, workers, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					t[i] = fs * kernel.Dot(w[i*cols:(i+1)*cols], q) // s·W q
				}
			})
			parallelRange(cols, workers, func(lo, hi int) {
				for j := lo; j < hi; j++ {
					y[j] = float64(kernel.Dot(wt[j*rows:(j+1)*rows], t))
				}
			})
		}, cols
	}
	t := make([]float32, cols)
	return func(y []float64, q []float32) {
		parallelRange(cols, workers, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				t[j] = kernel.Dot(wt[j*rows:(j+1)*rows], q) // s·Wᵀ q
			}
		})
		parallelRange(rows, workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				y[i] = float64(fs * kernel.Dot(w[i*cols:(i+1)*cols], t))
			}
		})
	}, rows
}

// parallelRange splits [0, n) into up to workers contiguous ranges and runs f
// on them concurrently (inline when one range suffices).
func parallelRange(n, workers int, f func(lo, hi int)) {
	const minPer = 64 // rows per goroutine below which splitting does not pay
	p := min(workers, max(1, n/minPer))
	if p <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for t := 1; t < p; t++ {
		wg.Go(func() { f(t*n/p, (t+1)*n/p) })
	}
	f(0, n/p)
	wg.Wait()
}

// scaleTo computes x *= s.
func scaleTo(x []float64, s float64) {
	for i := range x {
		x[i] *= s
	}
}

// axpy64 computes y += a·x.
func axpy64(a float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += a * v
	}
}
