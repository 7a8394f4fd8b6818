package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/train"
)

// SizingFile (in the output directory) records how a budget was sized, so that a plan run again (after an
// interrupt, or to add the demo's --probes) resumes the runs it named instead of sizing new ones from a fresh
// throughput probe, whose runs would have other step counts and so other directories.
const SizingFile = "sizing.json"

// Sizing is how a budget was sized: the steps per run its throughput probe gave. Files of builds before the
// plans (the demo's {"minutes", "steps"}) are read too.
type Sizing struct {
	Budget          string  `json:"budget,omitempty"`
	Minutes         float64 `json:"minutes,omitempty"`
	Seeds           int     `json:"seeds,omitempty"`
	Steps           int     `json:"steps"`
	ProbeTokensPerS float64 `json:"probe_tokens_per_s,omitempty"`
}

// ReadSizing reads a sizing file, refusing one that cannot have been written by Run.
func ReadSizing(path string) (Sizing, error) {
	var s Sizing
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w (delete it to size the budget again)", path, err)
	}
	if s.Steps < 1 || s.Seeds < 0 || s.Seeds == 0 && s.Budget != "" || s.Steps > 1e9 {
		return s, fmt.Errorf("%s: steps %d, seeds %d are not a sizing (delete it to size the budget again)", path, s.Steps, s.Seeds)
	}
	return s, nil
}

// matches reports whether the sizing was made for this budget and seed count.
func (s Sizing) matches(o *Options) bool {
	budget := s.Budget
	if budget == "" && s.Minutes > 0 {
		budget = durationOfMinutes(s.Minutes).String()
	}
	return budget == o.Budget.String() && (s.Seeds == 0 || s.Seeds == len(o.Seeds))
}

// size returns the steps per run: Options.Steps, the sizing file's for the same budget, or a throughput
// probe's on the base model, recorded in the sizing file.
func size(p *Plan, out *Outcome, o *Options) (int, error) {
	if o.Steps > 0 {
		return o.Steps, nil
	}
	path := filepath.Join(o.Out, SizingFile)
	if s, err := ReadSizing(path); err == nil && s.matches(o) {
		o.logf("reusing the sizing in %s: %d steps per run for %s\n", path, s.Steps, o.Budget)
		return s.Steps, nil
	} else if err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	// The cost of each run relative to one of the base recipe: FLOPs per step.
	const probeSteps = 100
	base, err := train.LoadSets("", out.baseSets(p, nil, probeSteps))
	if err != nil {
		return 0, fmt.Errorf("plan %s: base recipe: %w", p.Name, err)
	}
	runs, err := expand(p, out, probeSteps, o)
	if err != nil {
		return 0, err
	}
	perStep := func(c train.Config) float64 {
		return c.Model.FLOPsPerToken() * float64(c.Train.BatchSize*c.Model.SeqLen)
	}
	var cost float64
	for _, r := range runs {
		cost += perStep(r.cfg) / perStep(base)
	}
	res, err := train.Benchmark(base.Model.Config, train.BenchOptions{Batch: base.Train.BatchSize, Steps: 3, Warmup: 1})
	if err != nil {
		return 0, fmt.Errorf("throughput probe: %w", err)
	}
	tps := res.FwdBwdTokensPerS()
	stepTokens := base.Train.BatchSize * base.Model.SeqLen
	steps := int(o.Budget.Seconds() * tps * p.Budget.Efficiency / cost / float64(stepTokens))
	o.logf("throughput probe: %.0f tokens/s on the base model, so %d runs of %d steps of %d×%d tokens fit %s\n",
		tps, len(runs), steps, base.Train.BatchSize, base.Model.SeqLen, o.Budget)
	if steps < p.Budget.MinSteps {
		if p.Budget.RefuseBelowMin {
			return 0, fmt.Errorf("a budget of %s gives only %d steps per run for %d runs (fewer than %d): give a larger budget", o.Budget, steps, len(runs), p.Budget.MinSteps)
		}
		steps = p.Budget.MinSteps
	}
	b, _ := json.MarshalIndent(Sizing{Budget: o.Budget.String(), Seeds: len(o.Seeds), Steps: steps, ProbeTokensPerS: tps}, "", "  ")
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return 0, err
	}
	if err := model.WriteFileAtomic(path, append(b, '\n')); err != nil {
		return 0, err
	}
	return steps, nil
}

func durationOfMinutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }
