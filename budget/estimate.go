package budget

import (
	"fmt"
	"io"
	"time"

	"github.com/smallinit/smallinit/data"
)

// Estimate is how a budget is spent: the throughput probe, the steps per run, the training cost in steps of the
// base model and the expected wall time.
type Estimate struct {
	TokensPerS float64 // the throughput probe's forward+backward tokens/s on the base model
	StepTokens int     // tokens per step (batch × sequence)
	Steps      int     // per main run
	Runs       int     // main runs
	// RunCost is the main runs' cost per step in base-model steps (a run of a wider model costs more);
	// TuneSteps the LR sweep's worst-case trial steps (tune.Options.WorstCaseSteps) and TuneCost their cost in
	// base-model steps.
	RunCost   float64
	TuneSteps int
	TuneCost  float64
	// ExtraCost is a study design's extra training on the plan's seeds in base-model steps, one entry per item,
	// taken from the budget.
	ExtraCost []float64
	// ScoreTokens are the forward-only tokens of scoring: every final model (a study design's, and the
	// summary's validation split where the plan has one: SummaryTokens) and every LR trial (the LR-selection
	// slice: SelectionTokens).
	ScoreTokens int64
	// ScoreTokensPerS is the scoring probe's forward tokens/s on the base model's final weights (OverheadProbe).
	ScoreTokensPerS float64
	// Overhead is one run's fixed cost besides its steps (initialisation, step-0 and final weights,
	// evaluations, diagnostics, checkpoints), measured by the overhead probe (OverheadProbe); Trials are the
	// LR sweep's worst-case trials, each a run that pays it too. Runs+Trials runs pay it.
	Overhead time.Duration
	Trials   int
	// Wall is expected: the sum of TrainTime, OverheadTime and ScoreTime (WallTime).
	Wall time.Duration
	// HorizonParams is the non-embedding parameter count the steps were sized by (the primaries' horizon in
	// tokens per parameter); 0 when the budget sized them.
	HorizonParams int64
}

// TrainSteps is the training the estimate charges, in base-model steps: the main runs, the LR sweep at its
// worst case and the study design's extra training.
func (e *Estimate) TrainSteps() float64 {
	s := float64(e.Steps)*e.RunCost + e.TuneCost
	for _, x := range e.ExtraCost {
		s += x
	}
	return s
}

// TrainTime is TrainSteps at the throughput probe's tokens/s times the plan's efficiency.
func (e *Estimate) TrainTime(efficiency float64) time.Duration {
	return seconds(e.TrainSteps() * float64(e.StepTokens) / (e.TokensPerS * efficiency))
}

// OverheadTime is the fixed cost of every main run and worst-case trial, Overhead each.
func (e *Estimate) OverheadTime() time.Duration { return time.Duration(e.Runs+e.Trials) * e.Overhead }

// ScoreTime is ScoreTokens at the scoring probe's measured tokens/s (not a multiple of the training speed).
func (e *Estimate) ScoreTime() time.Duration {
	if e.ScoreTokens == 0 {
		return 0
	}
	return seconds(float64(e.ScoreTokens) / e.ScoreTokensPerS)
}

// WallTime is the expected wall time at the plan's efficiency: TrainTime, OverheadTime and ScoreTime.
func (e *Estimate) WallTime(efficiency float64) time.Duration {
	return e.TrainTime(efficiency) + e.OverheadTime() + e.ScoreTime()
}

// extraSteps is the study design's extra training in base-model steps (ExtraCost summed in order).
func (e *Estimate) extraSteps() float64 {
	extra := 0.0
	for _, c := range e.ExtraCost {
		extra += c
	}
	return extra
}

// Sweep is an LR sweep's worst case at a steps per main run: its trial steps, their cost in base-model steps
// and its trials (each a run that pays the Overhead too).
type Sweep func(steps int) (trialSteps int, cost float64, trials int, err error)

// Fit returns the largest steps per run whose main runs (Runs of RunCost base-model steps per step), LR sweep
// at its worst case (sweep) and the fixed cost of every run and trial (Overhead) fit the budget's training:
// budget × efficiency at TokensPerS, less ExtraCost. A binary search, since the sweep's cost grows with the
// steps; it sets none of e's fields (the caller prices the sweep at the steps it takes).
func (e *Estimate) Fit(budget time.Duration, efficiency float64, sweep Sweep) (int, error) {
	budgetSteps := budget.Seconds()*e.TokensPerS*efficiency/float64(e.StepTokens) - e.extraSteps()
	// A run's fixed cost in base-model steps: the budget pays it once per run and per trial.
	overheadSteps := e.Overhead.Seconds() * e.TokensPerS * efficiency / float64(e.StepTokens)
	lo, hi := 0, int(max(budgetSteps-float64(e.Runs)*overheadSteps, 0)/e.RunCost)+1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		_, tc, trials, err := sweep(mid)
		if err != nil {
			return 0, err
		}
		if float64(mid)*e.RunCost+tc+float64(e.Runs+trials)*overheadSteps <= budgetSteps {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// WriteTime prints the estimate's time arithmetic on one line: training at the throughput probe's rate ×
// efficiency, the fixed cost per run and trial, scoring at the scoring probe's rate (scoring: the study
// design's timed scoring as a suffix, "" without any) and the expected wall time against the budget.
func (e *Estimate) WriteTime(w io.Writer, efficiency float64, budget time.Duration, scoring string) {
	fmt.Fprintf(w, "time: throughput probe %.0f tokens/s (forward+backward, base model) × efficiency %.3g; training %.0f base-model steps (runs %.1f × %d steps + LR sweep at most %.0f + extra %.0f) × %d tokens = %.1f min; fixed cost per run %.1f s (overhead probe: a %d-step run of the base recipe, its initialisation, evaluations, diagnostics and checkpoints) × %d runs and %d trials = %.1f min; scoring %d forward tokens at %.0f tokens/s (scoring probe: the overhead probe's final model scoring %d windows) = %.1f min%s; expected wall time %s (budget %s)\n",
		e.TokensPerS, efficiency, e.TrainSteps(), e.RunCost, e.Steps, e.TuneCost, e.extraSteps(), e.StepTokens,
		e.TrainTime(efficiency).Minutes(),
		e.Overhead.Seconds(), OverheadProbeSteps, e.Runs, e.Trials, e.OverheadTime().Minutes(),
		e.ScoreTokens, e.ScoreTokensPerS, ScoreProbeWindows, e.ScoreTime().Minutes(), scoring, e.Wall.Round(time.Minute), budget)
}

// Token counts of the embedded corpus at the plans' vocabulary (4096; smallinit data prepare, 2026-12-07), for an
// estimate made before the corpus is prepared (print-plan).
const (
	embeddedTrainTokens = 1_839_518
	embeddedValTokens   = 107_964
)

// SummaryTokens are the forward tokens of scoring one run's final model on the validation split of the corpus
// st describes (the embedded corpus's before it is prepared), whole or its first windows windows of seq
// tokens per file (windows > 0).
func SummaryTokens(st *data.Stats, windows, seq int) int64 {
	val, files := st.Val.Tokens, int64(max(len(st.ValByLang), 1))
	if val == 0 {
		val, files = embeddedValTokens, 2
	}
	if windows > 0 {
		val = min(val, files*int64(windows*seq))
	}
	return val
}

// SelectionTokens are the forward tokens of scoring one LR trial on the LR-selection slice (eval.ScoreSelection):
// the slice as prepared in dataDir, else its share of the training tokens of the corpus st describes (the
// embedded corpus's before it is prepared).
func SelectionTokens(dataDir string, st *data.Stats) int64 {
	if s, err := data.ReadSelectionStats(dataDir); err == nil {
		return s.Select.Tokens
	}
	train := st.Train.Tokens
	if train == 0 {
		train = embeddedTrainTokens
	}
	return int64(data.DefaultSelectShare * float64(train))
}
