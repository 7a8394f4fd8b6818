package arch

import (
	"fmt"
	"math"
)

// RoPE scaling kinds (config key rope_scaling, Hugging Face rope_scaling.rope_type).
const (
	RopeLinear = "linear" // position interpolation (Chen et al. 2023): every θ_i divided by rope_factor
	RopeLlama3 = "llama3" // Llama 3.1's wavelength-dependent interpolation (model.ropeInvFreq)
)

// validateRopeScaling checks the rope_scaling fields: the factor of any scaling is ≥ 1 (it stretches
// wavelengths) and llama3 needs 0 < low_freq_factor < high_freq_factor and its original context length.
func (c Config) validateRopeScaling() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch c.RopeScaling {
	case "":
		return nil
	case RopeLinear, RopeLlama3:
	default:
		return fmt.Errorf("rope_scaling = %q is not supported (supported: %q, %q, or none)", c.RopeScaling, RopeLinear, RopeLlama3)
	}
	if !(c.RopeFactor >= 1) || !finite(c.RopeFactor) {
		return fmt.Errorf("rope_scaling %s: factor = %g, must be ≥ 1", c.RopeScaling, c.RopeFactor)
	}
	if c.RopeScaling == RopeLlama3 {
		if !(c.RopeLowFreqFactor > 0) || !(c.RopeHighFreqFactor > c.RopeLowFreqFactor) || !finite(c.RopeHighFreqFactor) {
			return fmt.Errorf("rope_scaling llama3: low_freq_factor = %g and high_freq_factor = %g, want 0 < low < high",
				c.RopeLowFreqFactor, c.RopeHighFreqFactor)
		}
		if c.RopeOriginalSeqLen < 1 {
			return fmt.Errorf("rope_scaling llama3: original_max_position_embeddings = %d, must be positive", c.RopeOriginalSeqLen)
		}
	}
	return nil
}
