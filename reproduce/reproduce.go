// Package reproduce runs the study's experiments scaled to one machine — a γ sweep, the 2×2 of fixes, a
// model-size ladder — as the built-in plan "reproduce" of package experiment (experiment/plans/reproduce.toml),
// then fits, compares and checks each claim of SPEC's introduction against the results, reporting honestly
// when a claim does not reproduce at this scale.
package reproduce

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/model"
)

// Experiment names: the groups of the reproduce plan, each a sweep directory. No configuration is trained
// twice: the fully fixed corner of the 2×2 and the width-128 point of the size ladder are the γ sweep's runs.
const (
	ExpGamma   = "gamma"    // γ ∈ {0.5, 0.75, 1, 1.25, 1.5} at width 128 with both fixes (ε = 1e-12, elementwise gate)
	ExpDefault = "eps1e-5"  // γ ∈ {0.5, 1} × gate ∈ {none, elementwise} at ε = 1e-5
	ExpEpsOnly = "eps1e-12" // γ ∈ {0.5, 1} at ε = 1e-12 without gate
	ExpSizes   = "sizes"    // widths 64, 96, 160 × γ ∈ {0.5, 1} with both fixes (with width 128: 4 sizes)
	ExpProbes  = "probes"   // γ ∈ {0.5, 1} with both fixes, width 128, on the corpus with probes mixed in (probes.go)
)

// Experiments lists them in run order (the plan's group order; TestPlanGroups checks).
var Experiments = []string{ExpGamma, ExpDefault, ExpEpsOnly, ExpSizes, ExpProbes}

// gammas are the γ sweep's values (the plan's gamma group; TestPlanGroups checks).
var gammas = []float64{0.5, 0.75, 1, 1.25, 1.5}

// Options control a reproduction.
type Options struct {
	Out    string
	Budget time.Duration
	Seeds  int // 0: the plan's (2 for budgets under 4 h, else 3)
	Steps  int // > 0: steps per run instead of sizing from the budget (tests)
	Jobs   int // runs of a sweep trained at once (≤ 1: one at a time)
	// CompareWindows limits the validation windows of the token-level comparison (0: all).
	CompareWindows int
	// ProbeTest is the held-out (and recalled) probes per kind the probe arm is scored on (0: 100).
	ProbeTest int
	Log       io.Writer
}

// Plan is the built-in reproduce plan.
func Plan() (*experiment.Plan, error) { return experiment.Builtin("reproduce") }

// Run runs the reproduce plan (data once, sizing from a throughput probe or OUT/sizing.json, the sweeps,
// resuming finished and interrupted runs), evaluates the claims, writes them to OUT/claims.json and writes
// OUT/report.html with claim 4's comparison.
func Run(ctx context.Context, o Options) (*Result, error) {
	p, err := Plan()
	if err != nil {
		return nil, err
	}
	var seeds []uint64
	if o.Seeds > 0 {
		seeds = experiment.SeedRange(o.Seeds)
	}
	var res *Result
	eval := func(out *experiment.Outcome) error {
		res = &Result{Steps: out.Steps, Seeds: len(out.Seeds), Runs: out.Runs, Tokens: out.Tokens, Out: o.Out}
		if err := res.evaluate(o.Out, out.DataDir, out.ProbeDir, o.CompareWindows); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := model.WriteFileAtomic(filepath.Join(o.Out, "claims.json"), append(b, '\n')); err != nil {
			return err
		}
		out.CompareA, out.CompareB = res.CompareA, res.CompareB
		return nil
	}
	if _, err := experiment.Run(ctx, p, experiment.Options{Out: o.Out, Budget: o.Budget, Steps: o.Steps, Seeds: seeds,
		ProbeTest: o.ProbeTest, Jobs: o.Jobs, Log: o.Log, Evaluate: eval}); err != nil {
		return nil, err
	}
	return res, nil
}

// meanSE is the mean and its standard error over the values. Fewer than two values give a NaN standard error
// (one seed says nothing of the noise between seeds), no value a NaN mean; verdict reads either as inconclusive.
func meanSE(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	if len(xs) < 2 {
		return mean, math.NaN()
	}
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(v / float64(len(xs)-1) / float64(len(xs)))
}
