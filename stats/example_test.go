package stats_test

import (
	"fmt"

	"github.com/smallinit/smallinit/stats"
)

// Two arms on the same three seeds: the baseline's loss minus the treated arm's, seed by seed, with its 95%
// t-interval on 2 degrees of freedom (differences 0.041, 0.036, 0.046: SE 0.0029, t_{0.975,2} = 4.303) and the
// smallest effect three seeds of this noise could detect with 80% power, from the noncentral t: 5.65·SE (the
// shortcut (t_{0.975,2} + t_{0.8,2})·SE = 5.36·SE would understate it).
func Example() {
	baseline := stats.BySeed{0: 3.412, 1: 3.398, 2: 3.431}
	treated := stats.BySeed{0: 3.371, 1: 3.362, 2: 3.385}
	d := stats.Paired(baseline, treated)
	e := stats.Mean(d.Values, d.Seeds, 0.05)
	fmt.Printf("gain %.4f, 95%% CI [%.4f, %.4f] on %d df, MDE %.4f\n", e.Mean, e.Lo, e.Hi, e.DF, e.MDE)
	// Output: gain 0.0410, 95% CI [0.0286, 0.0534] on 2 df, MDE 0.0163
}
