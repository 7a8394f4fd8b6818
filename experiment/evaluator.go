package experiment

import (
	"context"
	"io"
)

// Evaluator is a study design run on a plan (package reproduce's claims): experiment sizes, trains, summarises
// and reports the plan's runs, and calls the evaluator at the four places a design adds to them. Its methods
// take the plan as the budget's tier runs it (Plan.Tiered), so a design reads its own tables of the plan file
// (Plan.DecodeStudy) and the tier without experiment knowing them. Options.Evaluator nil: the plan alone.
type Evaluator interface {
	// Statement prints what the design registers before anything trains (its hypotheses and their predicted
	// power, from the description's arms and seeds): the first lines of the printed plan (Description.Write).
	Statement(w io.Writer, d *Description) error
	// Extra is the training the design does besides the plan's groups on the seeds the plan runs under tier t
	// (nil: none): its cost is taken from the budget before the runs are sized, and it is listed with the plan.
	Extra(p *Plan, t *Tier, seeds []uint64) ([]ExtraWork, error)
	// ScoreTokens are the forward-only tokens the design scores each final model on (the validation split and
	// whatever else its verdicts read) under tier t (nil: none): the wall-time estimate charges them.
	ScoreTokens(p *Plan, t *Tier) int64
	// Evaluate judges the finished runs, after the summary and before the report; it may set the outcome's
	// comparison (Outcome.CompareA, CompareB).
	Evaluate(ctx context.Context, out *Outcome) error
}
