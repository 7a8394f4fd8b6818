package recipe

import (
	"fmt"
	"math"
)

// AdamW are AdamW's hyper-parameters (docs/definitions.md §3 defaults: β = (0.9, 0.95), ε = 1e-8, weight decay 0.1).
// With γ = 1 the early gradients are tiny, so ε is logged: it is a third hidden "ε" of the study.
type AdamW struct {
	Beta1       float64 `toml:"beta1" json:"beta1"`
	Beta2       float64 `toml:"beta2" json:"beta2"`
	Eps         float64 `toml:"eps" json:"eps"`
	WeightDecay float64 `toml:"weight_decay" json:"weight_decay"`
}

// DefaultAdamW returns docs/definitions.md §3's defaults.
func DefaultAdamW() AdamW {
	return AdamW{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
}

// Validate names the first out-of-range field.
func (c AdamW) Validate() error {
	switch {
	case !(c.Beta1 >= 0 && c.Beta1 < 1):
		return fmt.Errorf("optimizer.beta1 = %g: must be in [0, 1)", c.Beta1)
	case !(c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("optimizer.beta2 = %g: must be in [0, 1)", c.Beta2)
	case !(c.Eps > 0 && c.Eps < 1):
		return fmt.Errorf("optimizer.eps = %g: must be in (0, 1)", c.Eps)
	case !(c.WeightDecay >= 0 && c.WeightDecay < 10):
		return fmt.Errorf("optimizer.weight_decay = %g: must be in [0, 10)", c.WeightDecay)
	}
	return nil
}

// Schedule kinds (config key schedule.kind).
const (
	ScheduleCosine   = "cosine"   // linear warmup, then cosine decay to MinRatio·peak
	ScheduleWSD      = "wsd"      // linear warmup, stable at peak, then linear decay to MinRatio·peak over DecaySteps
	ScheduleConstant = "constant" // linear warmup, then constant
)

// Schedule gives the learning rate at each step (docs/definitions.md §3: linear warmup and cosine decay to 10%, also WSD).
type Schedule struct {
	Kind       string  `toml:"kind" json:"kind"`
	PeakLR     float64 `toml:"lr" json:"lr"`
	Warmup     int     `toml:"warmup_steps" json:"warmup_steps"`
	MinRatio   float64 `toml:"min_lr_ratio" json:"min_lr_ratio"`
	DecaySteps int     `toml:"decay_steps" json:"decay_steps"` // WSD only: length of the final decay
	Total      int     `toml:"-" json:"total_steps"`
}

// Validate names the first bad field.
func (s Schedule) Validate() error {
	switch s.Kind {
	case ScheduleCosine, ScheduleWSD, ScheduleConstant:
	default:
		return fmt.Errorf("schedule.kind = %q: want %s, %s or %s", s.Kind, ScheduleCosine, ScheduleWSD, ScheduleConstant)
	}
	switch {
	case !(s.PeakLR > 0 && s.PeakLR < 10):
		return fmt.Errorf("schedule.lr = %g: must be in (0, 10)", s.PeakLR)
	case s.Warmup < 0:
		return fmt.Errorf("schedule.warmup_steps = %d: must be ≥ 0", s.Warmup)
	case !(s.MinRatio >= 0 && s.MinRatio <= 1):
		return fmt.Errorf("schedule.min_lr_ratio = %g: must be in [0, 1]", s.MinRatio)
	case s.DecaySteps < 0:
		return fmt.Errorf("schedule.decay_steps = %d: must be ≥ 0", s.DecaySteps)
	}
	return nil
}

// LR returns the learning rate for step (0-based) of Total steps.
func (s Schedule) LR(step int) float64 {
	if step < s.Warmup {
		return s.PeakLR * float64(step+1) / float64(s.Warmup)
	}
	floor := s.MinRatio * s.PeakLR
	switch s.Kind {
	case ScheduleCosine:
		span := s.Total - s.Warmup
		if span <= 1 {
			return s.PeakLR
		}
		frac := math.Min(1, float64(step-s.Warmup)/float64(span-1))
		return floor + (s.PeakLR-floor)*0.5*(1+math.Cos(math.Pi*frac))
	case ScheduleWSD:
		start := s.Total - s.DecaySteps
		if step < start || s.DecaySteps == 0 {
			return s.PeakLR
		}
		frac := math.Min(1, float64(step-start+1)/float64(s.DecaySteps))
		return s.PeakLR + (floor-s.PeakLR)*frac
	}
	return s.PeakLR
}
