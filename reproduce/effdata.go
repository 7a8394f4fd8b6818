package reproduce

import (
	"fmt"
	"math"

	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/stats"
)

// EffData states H1 on the scale of training tokens (docs/definitions.md §7 "Effective data"): γ = 1's mean loss
// at the primary horizon read through γ = 0.5's mean losses at the two longest horizons of the series, joined by
// a line in ln(tokens per parameter). It is the reading a plan without a ladder at H1's horizon can give: two
// horizons fix a line and nothing more (a law L(D) = E + B·D^(−β) needs four, docs/definitions.md §4). Under any
// such law the loss is convex in ln D, so a reading at or past the shorter horizon lies between zero and the
// law's: it understates the effect in either direction. Below the shorter horizon the line overstates a deficit.
type EffData struct {
	From       float64       `json:"from_tokens_per_param"` // the shorter horizon of the line
	To         float64       `json:"to_tokens_per_param"`   // the primary horizon
	Loss05From float64       `json:"loss_gamma0.5_from"`    // γ = 0.5's mean over seeds
	Loss05To   float64       `json:"loss_gamma0.5_to"`
	Loss1      float64       `json:"loss_gamma1"` // γ = 1's mean at To
	Eff        *float64      `json:"tokens_per_param_eff"`
	Gain       *float64      `json:"gain"`    // Eff/To − 1
	CI         *fit.Interval `json:"gain_ci"` // 95% bootstrap percentile interval over seeds
	Reps       int           `json:"bootstrap_reps,omitempty"`
	Inside     bool          `json:"inside_series"` // Eff between From and To: read on the line, not past it
	Note       string        `json:"note,omitempty"`
}

// lineHorizon is the horizon, in tokens per parameter, at which the line through (ln from, lFrom) and (ln to, lTo)
// reaches the loss l. The loss must fall from from to to.
func lineHorizon(from, to, lFrom, lTo, l float64) (float64, error) {
	if !(from > 0 && to > from) {
		return math.NaN(), fmt.Errorf("horizons %g and %g: need 0 < from < to", from, to)
	}
	if !(lTo < lFrom) {
		return math.NaN(), fmt.Errorf("γ = 0.5's loss does not fall from %g to %g tokens per parameter (%.4f, %.4f)", from, to, lFrom, lTo)
	}
	u := math.Log(from) + (l-lFrom)/(lTo-lFrom)*(math.Log(to)-math.Log(from))
	return math.Exp(u), nil
}

// effectiveData reads γ = 1's arm g1 at the primary horizon through γ = 0.5's arm g05 there and its arm at the
// longest horizon of hs below the primary; nil when the series has no shorter horizon or an arm has no seed.
// bootstrap is the number of resamples of the seeds within each of the three arms (0: no interval).
func effectiveData(hs []HorizonArms, g05, g1 *ArmEvidence, primary float64, bootstrap int) *EffData {
	var from *HorizonArms
	for i := range hs {
		if hs[i].Horizon < primary && (from == nil || hs[i].Horizon > from.Horizon) {
			from = &hs[i]
		}
	}
	if from == nil || g05 == nil || g1 == nil {
		return nil
	}
	groups := [][]float64{values(from.G05.Overall()), values(g05.Overall()), values(g1.Overall())}
	for _, g := range groups {
		if len(g) == 0 {
			return nil
		}
	}
	mean := func(v []float64) float64 { return stats.Mean(v, nil, 0.05).Mean }
	ed := &EffData{From: from.Horizon, To: primary, Loss05From: mean(groups[0]), Loss05To: mean(groups[1]), Loss1: mean(groups[2])}
	h, err := lineHorizon(ed.From, ed.To, ed.Loss05From, ed.Loss05To, ed.Loss1)
	if err != nil {
		ed.Note = "undetermined: " + err.Error()
		return ed
	}
	g := h/primary - 1
	ed.Eff, ed.Gain = &h, &g
	ed.Inside = h >= ed.From && h <= ed.To
	if !ed.Inside {
		ed.Note = fmt.Sprintf("%.3g tokens per parameter lies outside %g-%g: the line extended", h, ed.From, ed.To)
	}
	if bootstrap <= 0 {
		return ed
	}
	bs, err := fit.Bootstrap(groups, bootstrap, 1, fit.Level95, func(m []float64) ([]float64, error) {
		h, err := lineHorizon(ed.From, ed.To, m[0], m[1], m[2])
		if err != nil {
			return nil, err
		}
		return []float64{h/primary - 1}, nil
	})
	if err != nil {
		ed.Note += "; bootstrap: " + err.Error()
		return ed
	}
	ed.Reps = bootstrap
	if len(bs.Intervals) == 1 {
		iv := bs.Intervals[0]
		ed.CI = &iv
	}
	return ed
}

// text is the effective data as a clause of H1's evidence.
func (ed *EffData) text() string {
	if ed.Gain == nil {
		return fmt.Sprintf(", effective data %s", ed.Note)
	}
	s := fmt.Sprintf(", effective data %+.0f%%", 100**ed.Gain)
	if ed.CI != nil {
		s += fmt.Sprintf(" [%+.0f%%, %+.0f%%]", 100*ed.CI.Lo, 100*ed.CI.Hi)
	}
	s += fmt.Sprintf(" of the γ = 0.5 run's tokens at %g tokens per parameter (the line in ln D through %g and %g", ed.To, ed.From, ed.To)
	if !ed.Inside {
		s += ", extended"
	}
	return s + "; post hoc)"
}
