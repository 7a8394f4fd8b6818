package experiment

import (
	"fmt"
	"math"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/train"
)

// Horizon is how long and in what recipe a plan's primary runs train, read from the horizon keys of the plan's
// [primaries] table (its hypotheses, δ, priors and power are the study design's: package reproduce reads them
// through Plan.DecodeStudy). TokensPerParam sizes the runs (tokens per non-embedding parameter at Width, with
// Sets on top of the base recipe; docs/definitions.md §7, "Horizon before breadth"); Horizons, when it has more
// than one value, is the horizon series in tokens per non-embedding parameter (its largest is TokensPerParam):
// every run of a derived group and every full-horizon LR trial trains as a WSD trunk to the longest, and a
// cooldown branch (train.StartOrResumeBranch) of each shorter horizon decays over Cooldown of that horizon's
// steps (docs/definitions.md §3, "Horizon series"). SpikeThreshold is the largest rise of the training loss over
// its running minimum (nats) a learning-rate trial may show before its rate is vetoed (0: none).
//
// The JSON field names are those of the verdicts' record (claims.json), which embeds a Horizon.
type Horizon struct {
	Width          int // the primary width (the γ grid's)
	TokensPerParam float64
	SpikeThreshold float64
	Horizons       []float64
	Cooldown       float64
	Sets           []override.Set // the primary arms' recipe on top of the base (e.g. both fixes): sizes N
}

// horizonFile is the TOML layout of [primaries]'s horizon keys; the table's other keys are the study's.
type horizonFile struct {
	Width          int            `toml:"width"`
	TokensPerParam float64        `toml:"tokens_per_param"`
	SpikeThreshold float64        `toml:"spike_threshold"`
	Horizons       []float64      `toml:"horizons"`
	Cooldown       float64        `toml:"cooldown"`
	Set            map[string]any `toml:"set"`
}

// parseHorizon checks the horizon keys of [primaries].
func parseHorizon(f *horizonFile) (*Horizon, error) {
	h := &Horizon{Width: f.Width, TokensPerParam: f.TokensPerParam, SpikeThreshold: f.SpikeThreshold,
		Horizons: f.Horizons, Cooldown: f.Cooldown, Sets: override.Flatten(f.Set)}
	if err := checkHorizons(h.TokensPerParam, h.Horizons, h.Cooldown); err != nil {
		return nil, fmt.Errorf("primaries: %w", err)
	}
	for _, c := range []struct {
		key     string
		v       float64
		ok      bool
		between string
	}{
		{"width", float64(h.Width), h.Width > 0 && h.Width <= 1<<16, "in [1, 65536]"},
		{"tokens_per_param", h.TokensPerParam, h.TokensPerParam >= 0 && h.TokensPerParam <= 1e4, "in [0, 10000]"},
		{"spike_threshold", h.SpikeThreshold, h.SpikeThreshold >= 0 && h.SpikeThreshold < 100, "in [0, 100) nats"},
	} {
		if !c.ok || math.IsNaN(c.v) {
			return nil, fmt.Errorf("primaries.%s = %g: want a value %s", c.key, c.v, c.between)
		}
	}
	return h, nil
}

// horizonSteps is the steps per run that give the primaries' TokensPerParam tokens per non-embedding parameter
// at their width (docs/definitions.md §7, "Horizon before breadth"), ceil(TokensPerParam·N/(batch·T)), and that
// N (of the base recipe with the primaries' Sets at Width); 0 steps when the plan sizes its runs from the budget
// instead.
func (p *Plan) horizonSteps(out *Outcome) (int, int64, error) {
	pr := p.Horizon
	if pr == nil || !(pr.TokensPerParam > 0) {
		return 0, 0, nil
	}
	sets := append(append(out.baseSets(p, nil, 100), pr.Sets...), override.Set{Key: arch.KeyHiddenSize, Value: int64(pr.Width)})
	c, err := train.LoadSets("", sets)
	if err != nil {
		return 0, 0, fmt.Errorf("plan %s: primaries.width %d: %w", p.Name, pr.Width, err)
	}
	n := c.Model.NonEmbeddingParams()
	steps := math.Ceil(pr.TokensPerParam * float64(n) / float64(c.Train.BatchSize*c.Model.SeqLen))
	if steps > budget.MaxSteps {
		return 0, 0, fmt.Errorf("plan %s: primaries.tokens_per_param %g gives %g steps per run, more than %d", p.Name, pr.TokensPerParam, steps, budget.MaxSteps)
	}
	return int(steps), n, nil
}
