package reproduce

import (
	"math"

	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/train"
)

// PlateauDiagnostics is how many of a run's last diagnostics the plateau check reads (docs/definitions.md,
// "Horizon").
const PlateauDiagnostics = 3

// Health is what a run's files say about whether its comparison is fair: the training loss's worst spike over
// its running minimum (over metrics.jsonl's logged means, so a spike shorter than the logging interval is
// averaged down) and the relative spread of its mean stable rank over its last PlateauDiagnostics diagnostics.
// NaN (null in claims.json) where the run has no such record.
type Health struct {
	Spike   float64 `json:"spike"`
	Plateau float64 `json:"stable_rank_tail_spread"`
}

// healthOf reads a run directory's metrics and diagnostics.
func healthOf(dir string) (Health, error) {
	h := Health{Spike: math.NaN(), Plateau: math.NaN()}
	run, err := train.OpenRun(dir)
	if err != nil {
		return h, err
	}
	ms, err := run.Metrics()
	if err != nil {
		return h, err
	}
	var losses []float64
	for _, m := range ms {
		if m.Loss != 0 {
			losses = append(losses, m.Loss)
		}
	}
	if len(losses) > 0 {
		h.Spike = stats.Spike(losses)
	}
	if traj, err := stableRankTrajectory(dir); err == nil {
		h.Plateau = stats.TailSpread(traj, PlateauDiagnostics)
	}
	return h, nil
}

// MarshalJSON writes a missing record (NaN) as null.
func (h Health) MarshalJSON() ([]byte, error) { return finitejson.Marshal(h) }
