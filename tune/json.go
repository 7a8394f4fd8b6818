package tune

import (
	"encoding/json"

	"github.com/smallinit/smallinit/stats"
)

// MarshalJSON writes a diverged trial's +Inf loss as null, which encoding/json cannot write.
func (p Point) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		LR    float64  `json:"lr"`
		Steps int      `json:"steps"`
		Loss  *float64 `json:"loss"`
	}{p.LR, p.Steps, stats.Finite(p.Loss)})
}

// MarshalJSON writes a non-finite chosen loss (every trial diverged) as null.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		LR        float64  `json:"lr"`
		Loss      *float64 `json:"loss"`
		Bracketed bool     `json:"bracketed"`
		Curve     []Point  `json:"curve"`
		Steps     int      `json:"steps_spent"`
	}{r.LR, stats.Finite(r.Loss), r.Bracketed, r.Curve, r.Steps})
}
