package diagrec

// WeightStats are the condensation diagnostics of one weight matrix W stored
// row-major as [Rows, Cols] = [d_out, d_in] (docs/definitions.md §4). A row of W is the
// input-weight vector of one output unit. The json tags are the keys of the
// weight report in diagnostics.jsonl and in analyze's JSON (see TensorWeights).
type WeightStats struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`

	// FrobSq is ‖W‖_F² = Σ_ij W_ij², accumulated in float64.
	FrobSq float64 `json:"frobenius_sq"`
	// SigmaMax is the spectral norm ‖W‖₂ = σ_max.
	SigmaMax float64 `json:"sigma_max"`
	// StableRank is srank(W) = ‖W‖_F² / ‖W‖₂² = Σσ_i² / σ_max², a smooth
	// lower bound on the rank (1 for a rank-1 matrix, k for k equal singular
	// values). A random Gaussian [m, n] matrix has srank ≈ m·n/(√m+√n)², about
	// min(m, n)/4 when square. It is 0 for a zero matrix.
	StableRank float64 `json:"stable_rank"`
	// StableRankExact is true when σ_max came from the exact singular values
	// (min(Rows, Cols) ≤ WeightOptions.ExactMaxDim), false when it came from
	// the Lanczos-accelerated power iteration (relative error ≲ 1e-6).
	StableRankExact bool `json:"stable_rank_exact"`
	// PowerIters is the number of matrix-vector products of the power
	// iteration (0 on the exact path). Not written to JSON.
	PowerIters int `json:"-"`
	// EffectiveRank is exp(H(p)) with p_i = σ_i / Σ_j σ_j and H the Shannon
	// entropy in nats (Roy & Vetterli 2007): n for n equal singular values, 1
	// for rank 1, 0 for a zero matrix. It needs all singular values, so it is
	// computed only on the exact path and is NaN otherwise.
	EffectiveRank float64 `json:"effective_rank"`

	// MeanAbsCos is the mean of |cos(w_i, w_j)| over the off-diagonal pairs
	// i < j of the rows used (see CosRowsUsed): the mean |entry| of the
	// off-diagonal part of C = Ŵ Ŵᵀ, Ŵ = W with L2-normalised rows. A pair
	// with a zero row has cos = 0. NaN when fewer than 2 rows are used.
	MeanAbsCos float64 `json:"mean_abs_cos"`
	// RandomBaseline is sqrt(2/(π·d_in)) with d_in = Cols: the mean |cos| of
	// two independent uniformly random directions in d_in dimensions, to
	// leading order (the exact value Γ(d/2)/(√π·Γ((d+1)/2)) is larger by a
	// factor 1 + 1/(4d) + O(d⁻²), under 0.4% for d ≥ 64).
	RandomBaseline float64 `json:"random_baseline"`
	// CosRatio is MeanAbsCos / RandomBaseline: ≈ 1 for random (diffuse)
	// rows, growing as the rows condense into aligned blocks (at most
	// 1/RandomBaseline when all rows are parallel).
	CosRatio float64 `json:"cos_ratio"`
	// FracAbove09 is the fraction of off-diagonal pairs with |cos| > 0.9.
	// NaN when fewer than 2 rows are used.
	FracAbove09 float64 `json:"frac_abs_cos_above_0_9"`
	// CosRowsUsed is the number of rows the cosine summaries use: all Rows,
	// or WeightOptions.MaxCosRows rows drawn without replacement (seeded by
	// WeightOptions.Seed) when Rows is larger.
	CosRowsUsed int `json:"cos_rows_used"`
	// ZeroRows counts the rows among the CosRowsUsed that are exactly zero
	// (on the power path with rows ≤ cols, where the cosines come from the
	// float32 row Gram, also rows ~1e-19 times smaller than the matrix RMS,
	// whose squared norm underflows).
	ZeroRows int `json:"zero_rows"`
}

// TokenGap is one predicted token of a comparison between models A and B (docs/definitions.md §4 "per-token gap").
type TokenGap struct {
	Pos        int     `json:"pos"`        // index of the target token in the token file
	Token      int32   `json:"token"`      // the true next token
	PA         float64 `json:"p_a"`        // probability A gives it
	PB         float64 `json:"p_b"`        // probability B gives it
	DeltaSym   float64 `json:"delta_sym"`  // (p_A − p_B) / (p_A + p_B) ∈ [−1, 1]
	LogGap     float64 `json:"log_gap"`    // log p_A − log p_B
	Difficulty float64 `json:"difficulty"` // mean loss of the two models on this token (nats)
}

// GapBin summarises the tokens of one difficulty quantile.
type GapBin struct {
	Lo            float64 `json:"difficulty_lo"` // difficulty range [Lo, Hi] (bins only)
	Hi            float64 `json:"difficulty_hi"`
	Count         int     `json:"count"`
	MeanDeltaSym  float64 `json:"mean_delta_sym"`
	MeanLogGap    float64 `json:"mean_log_gap"`
	MeanLossA     float64 `json:"mean_loss_a"`
	MeanLossB     float64 `json:"mean_loss_b"`
	LossReduction float64 `json:"mean_loss_reduction"` // mean of loss_B − loss_A (positive: A is better)
	WinShareA     float64 `json:"win_share_a"`         // fraction of tokens with p_A > p_B
}

// Comparison is the token-level comparison of two models on the same tokens.
type Comparison struct {
	Windows int      `json:"windows"`
	All     GapBin   `json:"all"`
	Bins    []GapBin `json:"bins"` // equal-count quantiles of difficulty, easiest first
}

// CompareRecord is the file of one comparison, as `smallinit compare --json` writes it and the report reads it:
// the two model directories, the token file, and the Comparison.
type CompareRecord struct {
	A          string      `json:"a"`
	B          string      `json:"b"`
	Tokens     string      `json:"tokens"`
	Comparison *Comparison `json:"comparison"`
}

// NormStat is docs/definitions.md §4's norm saturation of one norm, averaged over probe tokens: s = ε/(m + ε) (0: ε
// negligible, 1: ε dominates) and the output RMS r = sqrt(m/(m + ε)), where m is the statistic under the square
// root (mean(x²) for RMSNorm, the variance for LayerNorm).
type NormStat struct {
	Saturation float64 `json:"saturation"`
	OutputRMS  float64 `json:"output_rms"`
}

// LayerActivations are one block's activation metrics on the probe set.
type LayerActivations struct {
	Layer             int       `json:"layer"`
	HiddenRMS         float64   `json:"hidden_rms"`          // RMS of the residual stream entering the block
	AttnNorm          NormStat  `json:"attn_norm"`           // input_layernorm
	FFNNorm           NormStat  `json:"ffn_norm"`            // post_attention_layernorm
	AttnResidualRatio float64   `json:"attn_residual_ratio"` // RMS(Attn(Norm(x))) / RMS(x)
	FFNResidualRatio  float64   `json:"ffn_residual_ratio"`  // RMS(FFN(Norm(h))) / RMS(h)
	FirstTokenMass    []float64 `json:"first_token_mass"`    // per head: mean over queries i ≥ 1 of A[i, 0]
	SinkAlpha         []float64 `json:"sink_alpha"`          // per head: mean over all queries (all see key 0) of A[i, 0]
	GateMean          []float64 `json:"gate_mean,omitempty"` // per head: mean attention-gate value
	ExpertLoad        []float64 `json:"expert_load,omitempty"`
	RouterEntropy     float64   `json:"router_entropy,omitempty"` // mean over tokens of −Σ p log p (nats)
	Dropped           int       `json:"dropped_assignments,omitempty"`
}

// ActivationStats are docs/definitions.md §4's activation metrics of a model on a fixed probe set of validation windows.
type ActivationStats struct {
	ProbeWindows   int                `json:"probe_windows"`
	ProbeLen       int                `json:"probe_len"`
	ProbeLoss      float64            `json:"probe_loss"`
	Layers         []LayerActivations `json:"layers"`
	FinalHiddenRMS float64            `json:"final_hidden_rms"`
	FinalNorm      NormStat           `json:"final_norm"`
	FirstTokenMass float64            `json:"first_token_mass"` // mean over layers and heads
	SinkRate       float64            `json:"sink_rate"`        // % of (layer, head) pairs with α > SinkThreshold
}

// SinkThreshold is the α above which a head counts as a sink (Gu et al. 2024).
const SinkThreshold = 0.3
