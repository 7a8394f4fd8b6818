package arch

import (
	"fmt"
	"math"
)

// DefaultNormEps is the norm ε of every preset (RMSNorm's usual 1e-5), and so the ε a width-emulated arm
// emulates at its target width: EmulatedEps's base (docs/definitions.md §7).
const DefaultNormEps = 1e-5

// DefaultTargetWidth is the width whose norm saturation a small model emulates by default (docs/definitions.md §7).
const DefaultTargetWidth = 2048

// EmulatedEps is docs/definitions.md §7's width-emulated RMSNorm ε: ε_eq = ε · (d_target/d)^(2γ). At init with the γ rule the
// embedding's mean square is σ² = d^(−2γ) (docs/definitions.md §2), so ε/(mean(x²)+ε), the first norm's saturation (docs/definitions.md §4),
// is the same for a width-d model at ε_eq as for a d_target-wide one at ε. Each arm passes its own γ: at
// γ = 1 and ε = 1e-5 that is 1e-5·(2048/d)² (docs/definitions.md §4), at γ = 0.5 1e-5·(2048/d). It returns an error for a
// non-positive width or ε, or a γ outside the recipe's [0, 4].
func EmulatedEps(eps float64, gamma float64, d, dTarget int) (float64, error) {
	if d <= 0 || dTarget <= 0 {
		return 0, fmt.Errorf("emulated ε: widths d = %d, d_target = %d: must be positive", d, dTarget)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("emulated ε: ε = %g: must be positive and finite", eps)
	}
	if math.IsNaN(gamma) || gamma < 0 || gamma > 4 {
		return 0, fmt.Errorf("emulated ε: γ = %g: must be in [0, 4]", gamma)
	}
	return eps * math.Pow(float64(dTarget)/float64(d), 2*gamma), nil
}
