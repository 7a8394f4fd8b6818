package diagrec

// Coordcheck is the record of a μP-style coordinate check (the JSON that `smallinit coordcheck --json` prints and
// the report's coordinate-check figure reads): the residual ratios of docs/definitions.md §4 at several widths and steps, and
// their fitted exponents against width. Its writer and its readers use this one type. The fields are in the
// order of their JSON keys (sorted, as the map the first writer encoded), so a file written before the type
// existed and one written now are byte-identical.
type Coordcheck struct {
	Fits  []CoordFit `json:"fits"`
	Gamma float64    `json:"gamma"` // γ of the initialisation σ = d_in^(−γ)
	// Points are the measurements: widths ascending, then steps, then layers.
	Points []CoordPoint `json:"points"`
	// Predicted is the exponent 1 − γ (docs/definitions.md §4) of the attention residual ratio at init; nil in a file without it.
	Predicted *float64 `json:"predicted_attn_exponent"`
}

// CoordPoint is one (width, step, layer) measurement of a coordinate check (the LayerActivations fields of that
// name).
type CoordPoint struct {
	Width     int     `json:"width"`
	Step      int     `json:"step"`
	Layer     int     `json:"layer"`
	HiddenRMS float64 `json:"hidden_rms"`
	AttnRatio float64 `json:"attn_residual_ratio"`
	FFNRatio  float64 `json:"ffn_residual_ratio"`
}

// CoordFit is the least-squares slope (Slope) of log(value) against log(width) at one step and layer: the
// measured exponent. Layer 0 sees the embedding alone, so its exponent is the clean test of the d^(1−γ) of docs/definitions.md §4;
// deeper layers' inputs already hold the earlier layers' updates, which at γ < 1 outgrow the embedding and pull
// the exponent toward 0.
type CoordFit struct {
	Step     int     `json:"step"`
	Layer    int     `json:"layer"`
	AttnExp  float64 `json:"attn_exponent"`
	FFNExp   float64 `json:"ffn_exponent"`
	HiddenEx float64 `json:"hidden_rms_exponent"`
}
