package tune_test

import (
	"fmt"
	"math"

	"github.com/smallinit/smallinit/tune"
)

// A learning-rate search on a synthetic loss curve whose optimum, 1.6e-2, lies above the initial grid
// 1e-3 … 8e-3: the grid is extended until the best value has worse neighbours at the full budget.
func ExampleSelect() {
	curve := func(lr float64, steps int) (float64, error) {
		x := math.Log2(lr / 1.6e-2)
		return 3 + 0.05*x*x + 20/float64(steps), nil
	}
	o := tune.Options{Center: 4e-3, Values: 4, MinSteps: 50, MaxSteps: 200, Eta: 4}
	res, err := tune.Select(o, curve)
	if err != nil {
		panic(err)
	}
	fmt.Printf("lr %g bracketed %v, %d trials, %d steps (worst case %d)\n", res.LR, res.Bracketed, len(res.Curve), res.Steps, o.WorstCaseSteps())
	// Output: lr 0.016 bracketed true, 9 trials, 900 steps (worst case 1550)
}
