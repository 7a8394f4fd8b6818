// Package diag computes the training and analysis diagnostics of docs/definitions.md §4: the
// weight-matrix ("condensation") measurements described below, and the
// activation-side and model-comparison measurements (norm saturation,
// attention sink, residual ratio, per-token gaps) documented with their own
// types and functions.
//
// # Weight matrices
//
// With small initialisation the weight matrices first condense (rows align
// into blocks, the stable rank drops) and then expand into richer, higher-rank
// structure; γ = 0.5 starts diffuse and high-rank. These functions track that
// during training. A weight matrix W is a row-major float32 slice of shape
// [m, n] = [d_out, d_in]; row i is the input-weight vector of output unit i.
//
//   - Stable rank srank(W) = ‖W‖_F² / ‖W‖₂² (StableRank, Weights). A random
//     Gaussian [m, n] matrix has srank ≈ m·n/(√m+√n)², about min(m, n)/4
//     when square.
//   - Effective rank exp(H(p)), p_i = σ_i / Σ_j σ_j (Roy & Vetterli 2007;
//     EffectiveRank, Weights).
//   - Row-wise cosine similarity C = Ŵ Ŵᵀ (Ŵ: rows L2-normalised),
//     summarised by the mean off-diagonal |cos|, its ratio to the random
//     baseline sqrt(2/(π·d_in)) and the fraction of pairs with |cos| > 0.9
//     (Weights), or returned in full with the rows reordered into aligned
//     blocks for a heatmap (CosineMatrix, average-linkage clustering on
//     1 − |cos|).
//   - SingularValues (all of them, float64) and SelectRows (restrict an
//     embedding or LM-head matrix to chosen tokens, e.g. the most frequent).
//
// # Exact versus power iteration
//
// The σ_i² are the eigenvalues of the Gram matrix G of the smaller side of W
// (W Wᵀ if m ≤ n, else Wᵀ W; k×k with k = min(m, n)). The rule, set by
// WeightOptions.ExactMaxDim (default 256):
//
//   - k ≤ ExactMaxDim: G is formed exactly in float64 and all its eigenvalues
//     are computed (Householder tridiagonalisation + implicit QL), so the
//     stable rank is exact and the effective rank is available
//     (diagrec.WeightStats.StableRankExact = true).
//   - k > ExactMaxDim: σ_max² = λ_max(G) comes from power iteration from a
//     seeded Gaussian start vector, accelerated by the Lanczos process: the
//     estimate after t steps is the largest Rayleigh quotient over the span
//     of the first t power iterates (λ_max of the Lanczos tridiagonal matrix,
//     full reorthogonalisation), never worse than the Rayleigh quotient of the
//     t-th iterate itself. It stops when the estimate changes by at most
//     PowerTol (1e-6) relative, after at least 30 and at most PowerIters (500)
//     steps; in practice 30-40 steps and a relative error below 1e-6. The
//     products with G run matrix-free as Wᵀ(W q) or W(Wᵀ q) (2·m·n float32
//     multiply-adds each), except when m ≤ n and every row enters the cosine
//     summaries: G = W Wᵀ is then formed once and serves both. The effective
//     rank is NaN on this path.
//
// Why not plain power iteration: random-like matrices (all of them at
// initialisation) have a crowded top of the spectrum, where power iteration
// converges so slowly that the relative-change test fires while the
// estimate is still far off: on Gaussian 512×512 matrices plain power
// iteration stopped by that rule underestimated σ_max² by up to 4e-3
// relative (30 seeds), whereas the Lanczos estimate was within 1e-6.
//
// # Cost
//
// Measured (go test -bench Weights ./diag/, and a timing run since removed) on the 2-core development
// machine while it was shared (load average 4-6): Weights took about 15 ms on
// a 512×512 matrix, 30-40 ms on a 1408×512 or 512×1408 FFN matrix, 60-120 ms
// on a 4096×512 embedding (memory-bound matrix-free products) and 100-130 ms
// on a 4096×256 one (exact path: scalar float64 Gram); a full set for a
// 25M-parameter model (d = 512, 6 layers, V = 4096) took 1.1-1.5 s. An idle
// machine should need about a third of that. The products use
// WeightOptions.Workers goroutines (default GOMAXPROCS). Non-finite weights
// give NaN diagnostics; encoding/json rejects NaN, so JSON writers must map
// it (e.g. to null).
package diag
