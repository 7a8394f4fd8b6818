// Package tune selects a learning rate per arm (docs/definitions.md §7): a log-spaced grid of factor 2,
// extended where the best value sits at an edge so that the grid brackets the optimum, searched by successive
// halving so that a sweep costs a known number of training steps.
//
// The trainer is a callback, so the search is tested on synthetic loss curves with a known optimum and the plan
// decides what a trial is (a short training run scored on the LR-selection slice, never on the verdict set):
//
//	res, err := tune.Select(tune.Options{Center: 4e-3, Values: 4, MinSteps: 50, MaxSteps: 200}, func(lr float64, steps int) (float64, error) {
//		return trainAndScoreOnSelectionSlice(lr, steps)
//	})
//	// res.LR is the chosen learning rate, res.Curve every (lr, steps, loss) evaluated: the report's LR-curve figure.
//
// Each γ is swept at two widths of the size ladder; AtWidth gives the other widths their learning rate
// (log-log between the two, within a factor 2 of the nearer one beyond them).
package tune
