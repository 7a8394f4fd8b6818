// Package reproduce runs the study's experiments scaled to one machine — a γ sweep, the 2×2 of fixes, a
// model-size ladder — as the built-in plan "reproduce" of package experiment (experiment/plans/reproduce.toml),
// then fits, compares and checks each claim of docs/definitions.md (Claims) against the results, reporting honestly
// when a claim does not reproduce at this scale.
package reproduce

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/smallinit/smallinit/anchor"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/train"
)

// Role is what a plan group's runs are evidence of: a plan declares it per group (`role = "gamma-grid"`), and
// the verdicts find their evidence by role and by each run's typed recipe values (γ, width, gate), never by a
// group's name. No configuration is trained twice: the fully fixed corner of the 2×2 and the width-128 rung of
// the size ladder are the γ grid's runs.
type Role string

// The roles the verdicts read (Roles describes each).
const (
	RoleGamma    Role = "gamma-grid"   // γ grid at the primary width with both fixes, each γ at its tuned LR (H1, claims 3, 4, 5)
	RoleSharedLR Role = "shared-lr"    // γ ∈ {0.5, 1}, both fixes, at the shared LR (H1 at matched LR)
	RoleEmulated Role = "emulated-eps" // γ ∈ {0.5, 1} × gate at the width-emulated ε of a 2048-wide model (claim 2's no-fix arms)
	RoleEpsOnly  Role = "eps-only"     // γ ∈ {0.5, 1} at ε = 1e-12 without gate (reported)
	RoleLadder   Role = "ladder"       // the tier's widths × γ ∈ {0.5, 1} with both fixes (H2, with the γ grid's width)
	RolePilot    Role = "probe-pilot"  // the probes' pilot on the probe mix (probes.go)
	RoleProbes   Role = "probes"       // γ ∈ {0.5, 1} on the probe mix (probes.go)
)

// Roles is the table of roles a reproduce plan's groups may declare, with what each feeds.
var Roles = map[Role]string{
	RoleGamma:    "the γ grid: H1, claims 3, 4 and 5, the ladder's rung at its width",
	RoleSharedLR: "H1 at the matched (shared) learning rate, reported",
	RoleEmulated: "claim 2: the gain without the fixes (gate none)",
	RoleEpsOnly:  "the ε fix alone, reported in the arms table",
	RoleLadder:   "H2 and the effective size: the other widths of the ladder",
	RolePilot:    "the probe pilot, which gates claim 1's probe half",
	RoleProbes:   "claim 1's probe half",
}

// checkRoles refuses a plan group whose role is not in Roles (a misspelt role would silently feed no verdict).
func checkRoles(p *experiment.Plan) error {
	for _, g := range p.Groups {
		if _, ok := Roles[Role(g.Role)]; g.Role != "" && !ok {
			known := make([]string, 0, len(Roles))
			for r := range Roles {
				known = append(known, string(r))
			}
			slices.Sort(known)
			return fmt.Errorf("plan %s: group %s: role %q: want one of %s", p.Name, g.Name, g.Role, strings.Join(known, ", "))
		}
	}
	return nil
}

// sameGamma compares two γ values as the recipes write them (a plan's 1 and a config's 1.0 are one γ).
func sameGamma(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

// gammas are the γ grid's values (the plan's gamma group; TestPlanGroups checks).
var gammas = []float64{0.5, 0.75, 1, 1.25, 1.5}

// Options control a reproduction.
type Options struct {
	Out    string
	Budget time.Duration
	Seeds  int // 0: the plan's tier's (from 2 h: the most of its seeds that fit the budget at the horizon)
	Steps  int // > 0: steps per run instead of sizing from the budget (tests)
	Jobs   int // runs of a sweep trained at once (≤ 1: one at a time)
	// Engine trains the plan's runs (nil: the Go engine; train.TorchEngine: the PyTorch trainer). The anchor grid
	// trains with the Go engine either way.
	Engine train.Engine
	// CompareWindows limits the validation windows of the token-level comparison (0: all).
	CompareWindows int
	// ProbeTest is the held-out (and recalled) probes per kind the probe arm is scored on (0: 100).
	ProbeTest int
	// OODWindows bounds the windows scored per out-of-distribution text (0: DefaultOODWindows; < 0: whole).
	OODWindows int
	// AnchorSteps > 0 replaces the tier's steps per cell of the anchor grid (tests).
	AnchorSteps int
	// Plan replaces the built-in plan (tests run a tiny one).
	Plan *experiment.Plan
	// Precision is train.precision of every run of the plan, the LR sweep's trials and the sizing probe included:
	// PrecisionF32, PrecisionBF16, or PrecisionAuto (also ""): the eligible precisions (train.PrecisionKinds:
	// native on this CPU, parity passed) timed on the base model and the faster taken for every run
	// (train.PrecisionFor; recorded in OUT/precision.json). The anchor grid trains in float32 either way.
	Precision string
	// Data is a corpus directory prepared by `smallinit data prepare` to train on instead of the embedded one
	// (experiment.Options.Data).
	Data string
	Log  io.Writer
}

// Precision settings of Options.Precision.
const (
	PrecisionAuto = "auto"
	PrecisionF32  = "f32"
	PrecisionBF16 = "bf16"
)

// precision resolves Options.Precision on this CPU and says why.
func (o *Options) precision() (prec, why string, err error) {
	switch o.Precision {
	case "", PrecisionAuto:
		// Resolved by experiment.Run: timed on the base model (train.PrecisionFor), recorded in OUT/precision.json.
		return train.PrecisionAuto, "auto: the eligible precisions timed on the base model, the faster taken", nil
	case PrecisionF32:
		return PrecisionF32, "as asked", nil
	case PrecisionBF16:
		if !kernel.HasBF16() {
			return "", "", fmt.Errorf("precision bf16 needs AVX512_BF16, which this CPU lacks: use f32 or auto")
		}
		return PrecisionBF16, "as asked", nil
	}
	return "", "", fmt.Errorf("precision %q: want auto, f32 or bf16", o.Precision)
}

// Plan is the built-in reproduce plan.
func Plan() (*experiment.Plan, error) { return experiment.Builtin("reproduce") }

// plan is the plan to run (Options.Plan or the built-in one) with every run's train.precision set to
// Options.Precision as resolved on this CPU.
func (o *Options) plan() (*experiment.Plan, error) {
	p := o.Plan
	if p == nil {
		var err error
		if p, err = Plan(); err != nil {
			return nil, err
		}
	}
	if err := checkRoles(p); err != nil {
		return nil, err
	}
	prec, _, err := o.precision()
	if err != nil {
		return nil, err
	}
	q := *p
	q.Base = append(slices.Clip(p.Base), override.Set{Key: "train.precision", Value: prec})
	return &q, nil
}

func (o *Options) oodWindows() int {
	switch {
	case o.OODWindows == 0:
		return DefaultOODWindows
	case o.OODWindows < 0:
		return 0
	}
	return o.OODWindows
}

// experimentOptions are the plan's options for o.
func (o *Options) experimentOptions(p *experiment.Plan) (experiment.Options, error) {
	var seeds []uint64
	if o.Seeds != 0 {
		if err := experiment.CheckSeedCount("seeds", o.Seeds); err != nil {
			return experiment.Options{}, err
		}
		seeds = experiment.SeedRange(o.Seeds)
	}
	// Scoring each final model: the validation split (about 108,000 tokens of the embedded corpus) and the
	// out-of-distribution texts' windows, for the wall-time estimate.
	seq := int64(128)
	for _, s := range p.Base {
		if s.Key == "model.max_position_embeddings" {
			if v, ok := s.Value.(int64); ok {
				seq = v
			}
		}
	}
	score := int64(108_000) + int64(3*o.oodWindows())*seq
	_, why, err := o.precision()
	if err != nil {
		return experiment.Options{}, err
	}
	eo := experiment.Options{Out: o.Out, Budget: o.Budget, Steps: o.Steps, Seeds: seeds, ProbeTest: o.ProbeTest, Jobs: o.Jobs,
		Log: o.Log, ScoreTokens: score, Describe: true, PrecisionNote: why, Data: o.Data, Engine: o.Engine}
	// The anchor grid runs on the seeds the plan runs (a tier may choose them within the budget).
	eo.ExtraFor = func(seeds []uint64) ([]experiment.ExtraWork, error) {
		g := o.anchorGridFor(p, seeds)
		if g == nil {
			return nil, nil
		}
		w, err := anchorWork(g)
		if err != nil {
			return nil, err
		}
		return []experiment.ExtraWork{w}, nil
	}
	return eo, nil
}

// anchorGridFor is the plan's anchor grid under o's budget on seeds (nil without [anchor]).
func (o *Options) anchorGridFor(p *experiment.Plan, seeds []uint64) *anchor.Grid {
	budget := o.Budget
	if budget <= 0 {
		budget = p.Budget.Duration()
	}
	return anchorOf(p, &experiment.Outcome{Seeds: seeds, Tier: p.TierFor(budget)}, o.AnchorSteps)
}

// anchorGrid is the plan's anchor grid under o's budget and seeds (nil without [anchor]).
func (o *Options) anchorGrid(p *experiment.Plan) *anchor.Grid {
	budget := o.Budget
	if budget <= 0 {
		budget = p.Budget.Duration()
	}
	seeds := p.SeedsFor(budget)
	if o.Seeds > 0 {
		seeds = experiment.SeedRange(o.Seeds)
	}
	return anchorOf(p, &experiment.Outcome{Seeds: seeds, Tier: p.TierFor(budget)}, o.AnchorSteps)
}

// Describe is the reproduction's plan for o without training anything: arms, seeds, steps, tokens and the
// expected wall time from the throughput probe (tps > 0 replaces the probe).
func Describe(o Options, tps float64) (*experiment.Description, error) {
	p, err := o.plan()
	if err != nil {
		return nil, err
	}
	eo, err := o.experimentOptions(p)
	if err != nil {
		return nil, err
	}
	return experiment.Describe(p, eo, tps)
}

// Run runs the reproduce plan (data once, sizing from a throughput probe or OUT/sizing.json, the LR sweep, the
// arms, resuming finished and interrupted runs), scores every final model (whole validation split, per
// language, out-of-distribution texts, final saturation and sink rate), judges the claims, writes them with
// every number behind them to OUT/claims.json, the figures to OUT/reproduce-figures.html and OUT/report.html
// with claim 4's comparison.
func Run(ctx context.Context, o Options) (*Result, error) {
	p, err := o.plan()
	if err != nil {
		return nil, err
	}
	var res *Result
	eval := func(out *experiment.Outcome) error {
		res = &Result{Steps: out.Steps, Seeds: len(out.Seeds), Runs: out.Runs, Tokens: out.Tokens, Out: o.Out}
		if out.Tier != nil {
			res.Tier, res.Smoke = out.Tier.Name, out.Tier.Smoke
		}
		for _, t := range out.Tuned {
			res.Tuned = append(res.Tuned, t)
		}
		slices.SortFunc(res.Tuned, func(a, b experiment.Tuned) int {
			return cmp.Or(cmp.Compare(a.Width, b.Width), cmp.Compare(a.Gamma, b.Gamma))
		})
		var anc *AnchorEvidence
		if g := anchorOf(p, out, o.AnchorSteps); g != nil {
			if anc, err = runAnchor(ctx, g, anchorDir(o.Out), &o); err != nil {
				return err
			}
		}
		if err := res.evaluate(out, o.CompareWindows, o.oodWindows(), anc); err != nil {
			return err
		}
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return fmt.Errorf("claims.json: %w", err)
		}
		if err := atomicfile.Write(filepath.Join(o.Out, "claims.json"), append(b, '\n')); err != nil {
			return err
		}
		if err := writeFigures(filepath.Join(o.Out, FiguresFile), res); err != nil {
			return err
		}
		out.CompareA, out.CompareB = res.CompareA, res.CompareB
		return nil
	}
	eo, err := o.experimentOptions(p)
	if err != nil {
		return nil, err
	}
	eo.Evaluate = eval
	if _, err := experiment.Run(ctx, p, eo); err != nil {
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
