package gammainit_test

import (
	"fmt"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/model"
)

// The class table for one shape and two recipes: the σ of every drawn class, from the one place the rules are
// written. Table.WriteJSON writes the same as JSON for other implementations.
func ExampleNewTable() {
	tab, err := gammainit.NewTable([]gammainit.Dims{{DIn: 128, DOut: 384, Layers: 8}},
		[]gammainit.Recipe{gammainit.Default(), {Rule: gammainit.RuleKaiming, DepthScale: true}})
	if err != nil {
		panic(err)
	}
	for _, s := range tab.Sigmas {
		if s.Class == model.ClassQ || s.Class == model.ClassO {
			fmt.Printf("%-2s %-7s depth %-5v σ = %.6f\n", s.Class, s.Recipe.Rule, s.Recipe.DepthScale, s.Sigma)
		}
	}
	// Output:
	// q  gamma   depth false σ = 0.007812
	// q  kaiming depth true  σ = 0.125000
	// o  gamma   depth false σ = 0.007812
	// o  kaiming depth true  σ = 0.031250
}
