package experiment

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestEstimateChargesScoringAtTheMeasuredRate: the expected wall time is training at the throughput probe's
// rate × efficiency, the fixed cost per run and trial, and scoring at the scoring probe's own rate, not at a
// multiple of the training rate. Numbers worked by hand.
func TestEstimateChargesScoringAtTheMeasuredRate(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		e                         Estimate
		efficiency                float64
		train, overhead, score, w time.Duration
	}{
		{
			// (100 × 2 + 40 + 10) steps × 1000 tokens / (5000 × 0.5) tokens/s = 100 s; 4 × 3 s = 12 s;
			// 60 000 tokens / 2000 tokens/s = 30 s (a forward pass here only 0.4× the forward+backward rate).
			name: "slow forward", e: Estimate{TokensPerS: 5000, StepTokens: 1000, Steps: 100, Runs: 3, RunCost: 2, TuneCost: 40,
				ExtraCost: []float64{10}, Trials: 1, Overhead: 3 * time.Second, ScoreTokens: 60_000, ScoreTokensPerS: 2000},
			efficiency: 0.5, train: 100 * time.Second, overhead: 12 * time.Second, score: 30 * time.Second, w: 142 * time.Second,
		},
		{
			name: "nothing to score", e: Estimate{TokensPerS: 1000, StepTokens: 100, Steps: 10, Runs: 2, RunCost: 2,
				Overhead: time.Second},
			// 10 × 2 steps × 100 tokens / 1000 tokens/s = 2 s; 2 runs × 1 s.
			efficiency: 1, train: 2 * time.Second, overhead: 2 * time.Second, score: 0, w: 4 * time.Second,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, oh, sc := tc.e.TrainTime(tc.efficiency), tc.e.OverheadTime(), tc.e.ScoreTime()
			if tr != tc.train || oh != tc.overhead || sc != tc.score || tr+oh+sc != tc.w {
				t.Errorf("train %s, overhead %s, scoring %s (sum %s); want %s, %s, %s (%s)", tr, oh, sc, tr+oh+sc, tc.train, tc.overhead, tc.score, tc.w)
			}
		})
	}
}

// TestSizingKeepsTheScoringProbe: the scoring probe's rate is recorded in the sizing file and read back, so a
// resumed plan charges scoring as measured without probing again.
func TestSizingKeepsTheScoringProbe(t *testing.T) {
	b, err := json.Marshal(Sizing{Budget: "30m0s", Seeds: 2, Steps: 50, ProbeTokensPerS: 9000, ProbeOverheadS: 4, ProbeScoreTokensPerS: 12345})
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/" + SizingFile
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSizing(path)
	if err != nil || s.ProbeScoreTokensPerS != 12345 {
		t.Errorf("read back %+v, %v; want the scoring probe's 12345 tokens/s", s, err)
	}
}
