package experiment

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/train"
)

// resolvePrecision fixes a plan whose base recipe says train.precision = "auto": the eligible precisions are
// timed once on the base model (train.PrecisionFor, recorded in OUT/precision.json and reused on resume), and
// the plan returned sets the faster for every run, so that its arms share one precision and their config.toml
// files name it. The measurement joins Options.PrecisionNote, printed with the plan. Any other plan is
// returned as it is. Without record (a plan printed before it runs) nothing is written.
func resolvePrecision(p *Plan, out *Outcome, o *Options, record bool) (*Plan, error) {
	base, err := train.LoadSets("", out.baseSets(p, nil, 100))
	if err != nil {
		return nil, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	if base.Train.Precision != train.PrecisionAuto {
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
	q.Base = append(slices.Clip(p.Base), override.Set{Key: "train.precision", Value: pc.Precision})
	if o.PrecisionNote != "" {
		o.PrecisionNote += "; "
	}
	o.PrecisionNote += pc.String()
	out.Plan = &q
	return &q, nil
}
