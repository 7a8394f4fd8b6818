package budget

import (
	"fmt"
	"time"
)

// Bounds of a budget and of the steps per run it may size. Each is far above any study this toolkit can train
// and far below an overflow; they are checked before anything is allocated, so a typo is an error naming the
// key or flag.
const (
	// MaxMinutes caps a budget (about two years), so the duration it becomes cannot overflow.
	MaxMinutes = 1e6
	// MaxSteps caps the steps per run a plan sizes or names (budget.min_steps, the primaries' horizon, a
	// sizing.json written or read back), so that what one call writes the next call reads.
	MaxSteps = 1_000_000_000
)

// Max is MaxMinutes as a duration.
const Max = time.Duration(MaxMinutes) * time.Minute

// CheckMinutes checks a budget in minutes: finite, positive and at most MaxMinutes; what names the key or flag.
func CheckMinutes(what string, m float64) error {
	if !(m > 0) || m > MaxMinutes {
		return fmt.Errorf("%s = %g: want minutes in (0, %g]", what, m, MaxMinutes)
	}
	return nil
}

// ofMinutes is m minutes as a duration.
func ofMinutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

// seconds is s seconds as a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
