package experiment

import (
	"fmt"
	"slices"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// resolvePrecision is the one place a plan's train.precision is resolved (train's precision table parses it,
// in train.LoadSets; budget.Precision times "auto" or checks a named precision). A plan whose base recipe says
// "auto" is returned with the faster precision set for every run, so that its arms share one precision and
// their config.toml files name it; the measurement is printed with the plan. A named precision this CPU does
// not run in hardware is refused. Any other plan is returned as it is. Without record (a plan printed before
// it runs) nothing is written.
func resolvePrecision(p *Plan, out *Outcome, o *Options, record bool) (*Plan, error) {
	base, err := train.LoadSets("", out.baseSets(p, nil, 100))
	if err != nil {
		return nil, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	prec, note, err := budget.Precision(o.Out, base, record, o.Log)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", p.Name, err)
	}
	if prec == "" {
		return p, nil
	}
	q := *p
	q.Base = append(slices.Clip(p.Base), override.Set{Key: recipe.KeyPrecision, Value: prec})
	o.precisionNote = note
	out.Plan = &q
	return &q, nil
}
