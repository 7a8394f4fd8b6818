package experiment

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// resolvePrecision is the one place a plan's train.precision is resolved (train's precision table parses it,
// in train.LoadSets). A plan whose base recipe says "auto" has its eligible precisions timed once on the base
// model (train.PrecisionFor, recorded in OUT/precision.json and reused on resume), and the plan returned sets
// the faster for every run, so that its arms share one precision and their config.toml files name it; the
// measurement is printed with the plan. A named precision this CPU does not run in hardware is refused here,
// before anything is sized or trained, rather than at its first run. Any other plan is returned as it is.
// Without record (a plan printed before it runs) nothing is written.
func resolvePrecision(p *Plan, out *Outcome, o *Options, record bool) (*Plan, error) {
	base, err := train.LoadSets("", out.baseSets(p, nil, 100))
	if err != nil {
		return nil, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	if base.Train.Precision != train.PrecisionAuto {
		prec, err := train.ParsePrecision(base.Train.Precision)
		if err != nil {
			return nil, fmt.Errorf("plan %s: %w", p.Name, err)
		}
		if !prec.Native() {
			// The plan pins its precision so that every run a comparison reads has it (docs/definitions.md §7):
			// another precision is another experiment, not a fallback.
			return nil, fmt.Errorf("plan %s: %s = %s: this CPU (kernel path %s) runs it only through the pure-Go twin, "+
				"tens of times slower: run the plan on a CPU with AVX2 or AVX512_BF16, or, for another experiment, "+
				"set %s = \"f32\" or \"auto\" in every arm and use a new --out", p.Name, recipe.KeyPrecision, prec, kernel.KernelPath(), recipe.KeyPrecision)
		}
		return p, nil
	}
	measure := train.PrecisionFor
	if !record {
		measure = train.PeekPrecision
	}
	pc, err := measure(filepath.Join(o.Out, train.PrecisionFile), base, o.Log)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", p.Name, err)
	}
	q := *p
	q.Base = append(slices.Clip(p.Base), override.Set{Key: recipe.KeyPrecision, Value: pc.Precision})
	o.precisionNote = "auto: the eligible precisions timed on the base model, the faster taken; " + pc.String()
	out.Plan = &q
	return &q, nil
}
