package tune

import (
	"fmt"
	"math"
)

// Swept is one width's tuned learning rate.
type Swept struct {
	Width int
	LR    float64
}

// AtWidth returns the learning rate for a width that was not swept, from the two widths that were (the LR
// sweep tunes each γ at the smallest and a middle width of the ladder): log LR is linear in log width
// through the two points, and beyond them the result stays within a factor Factor (2) of the nearer swept
// value, so that a ladder rung far from both is never given an extrapolated LR the sweep did not support.
// A width equal to a swept one gets that LR exactly.
func AtWidth(a, b Swept, width int) (float64, error) {
	if a.Width <= 0 || b.Width <= 0 || width <= 0 || !(a.LR > 0) || !(b.LR > 0) || math.IsInf(a.LR, 0) || math.IsInf(b.LR, 0) {
		return 0, fmt.Errorf("tune: learning rate at width %d from %+v and %+v: widths and learning rates must be positive", width, a, b)
	}
	if a.Width > b.Width {
		a, b = b, a
	}
	switch {
	case width == a.Width:
		return a.LR, nil
	case width == b.Width:
		return b.LR, nil
	case a.Width == b.Width:
		return 0, fmt.Errorf("tune: learning rate at width %d: both sweeps are at width %d", width, a.Width)
	}
	slope := math.Log(b.LR/a.LR) / math.Log(float64(b.Width)/float64(a.Width))
	lr := a.LR * math.Pow(float64(width)/float64(a.Width), slope)
	near := a.LR
	if width > b.Width {
		near = b.LR
	}
	if width < a.Width || width > b.Width {
		lr = min(max(lr, near/DefaultFactor), near*DefaultFactor)
	}
	return lr, nil
}
