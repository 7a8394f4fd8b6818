// Package budget is the time model of a study: how a wall-time budget becomes steps per run and an expected
// wall time. Three probes measure what a run costs on the engine and device that will train it (the
// throughput probe's forward+backward tokens/s, the overhead probe's fixed cost of one run besides its steps,
// the scoring probe's forward tokens/s); an Estimate holds what a plan trains and scores in units of the base
// model's steps and tokens, charges it at the measured rates and fits the largest steps per run into the
// budget (Estimate.Fit); and sizing.json (Sizing) records the result under the key its probes were measured
// under, so that a plan run again resumes the runs it named instead of sizing new ones.
//
// The package knows no plan: package experiment prices a plan's runs, LR sweep and a study design's extra
// work into an Estimate and calls the probes and Fit; budget never imports it.
//
//	e := &budget.Estimate{Runs: 4, StepTokens: 4096, RunCost: 4, TokensPerS: tps}
//	e.Overhead, e.ScoreTokensPerS, err = budget.OverheadProbe{...}.Run(ctx)
//	steps, err := e.Fit(30*time.Minute, 0.9, func(int) (int, float64, int, error) { return 0, 0, 0, nil })
package budget
