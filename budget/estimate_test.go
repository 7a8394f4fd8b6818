package budget

import (
	"errors"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
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

// TestFitIsTheLargestStepsThatFit: Fit's steps fit the budget's training (main runs, the worst-case sweep at
// those steps, every run's and trial's fixed cost, less the extra work) and one step more does not, for a
// sweep whose cost and trials grow with the steps. Numbers worked by hand for the first rows.
func TestFitIsTheLargestStepsThatFit(t *testing.T) {
	none := func(int) (int, float64, int, error) { return 0, 0, 0, nil }
	growing := func(steps int) (int, float64, int, error) { return 3 * steps, 1.5 * float64(steps), 2 + steps/50, nil }
	for _, tc := range []struct {
		name   string
		e      Estimate
		budget time.Duration
		eff    float64
		sweep  Sweep
		want   int // -1: check only the fit and the step past it
	}{
		// 100 s × 1000 tokens/s × 0.5 / 10 tokens = 5000 base-model steps, at 4 a step (RunCost): 1250 steps.
		{"runs only", Estimate{TokensPerS: 1000, StepTokens: 10, Runs: 2, RunCost: 4}, 100 * time.Second, 0.5, none, 1250},
		// 5000 − 1000 extra = 4000; 2 runs × (1 s × 1000 × 0.5 / 10 = 50 steps) = 100: (4000 − 100) / 4 = 975.
		{"overhead and extra", Estimate{TokensPerS: 1000, StepTokens: 10, Runs: 2, RunCost: 4, ExtraCost: []float64{600, 400},
			Overhead: time.Second}, 100 * time.Second, 0.5, none, 975},
		{"a growing sweep", Estimate{TokensPerS: 1000, StepTokens: 10, Runs: 3, RunCost: 3, Overhead: 2 * time.Second},
			time.Hour, 0.9, growing, -1},
		{"nothing fits", Estimate{TokensPerS: 1000, StepTokens: 10, Runs: 2, RunCost: 4, Overhead: time.Hour}, time.Minute, 1, none, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.e.Fit(tc.budget, tc.eff, tc.sweep)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want >= 0 && got != tc.want {
				t.Errorf("Fit = %d steps, want %d", got, tc.want)
			}
			fits := func(steps int) bool {
				_, cost, trials, _ := tc.sweep(steps)
				e := tc.e
				e.Steps, e.TuneCost, e.Trials = steps, cost, trials
				return e.TrainTime(tc.eff)+e.OverheadTime() <= tc.budget
			}
			if got > 0 && !fits(got) || fits(got+1) {
				t.Errorf("Fit = %d steps: fits %v, one more fits %v; want the largest that fits", got, fits(got), fits(got+1))
			}
		})
	}
	if _, err := (&Estimate{TokensPerS: 1, StepTokens: 1, Runs: 1, RunCost: 1}).Fit(time.Hour, 1, func(int) (int, float64, int, error) {
		return 0, 0, 0, errors.New("no recipe")
	}); err == nil || err.Error() != "no recipe" {
		t.Errorf("a failing sweep: %v, want its error", err)
	}
}

// TestScoringTokens: the summary scores the whole validation split, or its first windows windows per file;
// before the corpus is prepared the embedded corpus's counts stand in; an LR trial scores the prepared
// selection slice, else its share of the training tokens.
func TestScoringTokens(t *testing.T) {
	st := &data.Stats{}
	st.Val.Tokens, st.Train.Tokens = 50_000, 1_000_000
	st.ValByLang = map[string]data.SplitStats{"en": {}, "zh": {}}
	share := func(train int64) int64 { return int64(data.DefaultSelectShare * float64(train)) }
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"whole split", SummaryTokens(st, 0, 64), 50_000},
		{"windows per file", SummaryTokens(st, 10, 64), 2 * 10 * 64},
		{"embedded corpus", SummaryTokens(&data.Stats{}, 0, 64), embeddedValTokens},
		{"selection share", SelectionTokens(t.TempDir(), st), share(1_000_000)},
		{"embedded selection share", SelectionTokens(t.TempDir(), &data.Stats{}), share(embeddedTrainTokens)},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d tokens, want %d", tc.name, tc.got, tc.want)
		}
	}
}
