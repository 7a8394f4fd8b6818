package gammainit_test

import (
	"fmt"

	"github.com/smallinit/smallinit/recipe"
)

// σ of each rule for a 384×128 matrix (d_out × d_in), from the one place the rules are written; Table writes
// the per-tensor classes and these σ for the Python side (python/smallinit_torch/gammainit_table.json).
func ExampleSigma() {
	for _, rule := range []string{recipe.RuleGamma, recipe.RuleFixed, recipe.RuleXavier, recipe.RuleKaiming} {
		fmt.Printf("%-7s σ = %.6f\n", rule, recipe.Sigma(rule, 1, 0.02, 128, 384))
	}
	// Output:
	// gamma   σ = 0.007812
	// fixed   σ = 0.020000
	// xavier  σ = 0.062500
	// kaiming σ = 0.125000
}
