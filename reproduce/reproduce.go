// Package reproduce runs the study's experiments scaled to one machine — a γ sweep, the 2×2 of fixes, a
// model-size ladder — as its own plan (plan.toml, embedded: Plan) run by package experiment, then fits, compares
// and checks each claim of docs/definitions.md (Claims) against the results, reporting honestly when a claim
// does not reproduce at this scale. The study owns its design end to end: the plan file, its tables and tier
// keys, the judging and the report's comparison; experiment runs the plan and returns what it ran.
package reproduce

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/summary"
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

// RoleSpec is one row of Roles: what the role's runs feed, and whether they reach the verdicts as one arm per γ
// in Evidence.ByRole (read with Evidence.RoleArm). A new arm whose verdict reads it that way is a plan group, a
// row here and the verdict: no Evidence field and no gathering code of its own.
type RoleSpec struct {
	Feeds   string
	ByGamma bool
}

// Roles is the table of roles a reproduce plan's groups may declare.
var Roles = map[Role]RoleSpec{
	RoleGamma:    {Feeds: "the γ grid: H1, claims 3, 4 and 5, the ladder's rung at its width"},
	RoleSharedLR: {Feeds: "H1 at the matched (shared) learning rate, reported"},
	RoleEmulated: {Feeds: "claim 2: the gain without the fixes (gate none)"},
	RoleEpsOnly:  {Feeds: "the ε fix alone, reported in the arms table"},
	RoleLadder:   {Feeds: "H2 and the effective size: the other widths of the ladder"},
	RolePilot:    {Feeds: "the probe pilot, which gates claim 1's probe half"},
	RoleProbes:   {Feeds: "claim 1's probe half"},
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
	Engine     train.Engine
	EngineInfo *summary.Engine // recorded in summary.json (experiment.Options.EngineInfo)
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
	// a row of train's precision table ("f32", "bf16"), or "auto" (also ""): the eligible precisions timed on the
	// base model and the faster taken for every run (experiment resolves it once, train.PrecisionFor, recorded
	// in OUT/precision.json). The anchor grid trains in float32 either way.
	Precision string
	// Data is a corpus directory prepared by `smallinit data prepare` to train on instead of the embedded one
	// (experiment.Options.Data).
	Data string
	// Force starts the plan even when its expected wall time is over the budget (experiment.Options.Force).
	Force bool
	Log   io.Writer
}

// planText is the reproduction's plan file.
//
//go:embed plan.toml
var planText []byte

// Plan is the reproduction's own plan (plan.toml).
func Plan() (*experiment.Plan, error) {
	p, err := experiment.Parse(planText)
	if err != nil {
		return nil, fmt.Errorf("the reproduce plan: %w", err)
	}
	return p, nil
}

// plan is the plan to run (Options.Plan or the built-in one) with every run's train.precision set to
// Options.Precision (resolved by experiment, once), and its study design. The LR grid's transfer tolerance,
// when the plan leaves it at 0, is the primaries' δ (docs/definitions.md §7, "Learning rates").
func (o *Options) plan() (*experiment.Plan, design, error) {
	p := o.Plan
	if p == nil {
		var err error
		if p, err = Plan(); err != nil {
			return nil, design{}, err
		}
	}
	if err := checkRoles(p); err != nil {
		return nil, design{}, err
	}
	d, err := designOf(p)
	if err != nil {
		return nil, design{}, err
	}
	q := *p
	q.Base = append(slices.Clip(p.Base), override.Set{Key: recipe.KeyPrecision, Value: cmp.Or(o.Precision, train.PrecisionAuto)})
	if t := p.Tune; t != nil && t.Mode == experiment.TuneFull && t.TransferTolerance == 0 && d.primaries != nil {
		tn := *t
		tn.TransferTolerance = d.primaries.DeltaH1()
		q.Tune = &tn
	}
	return &q, d, nil
}

// scoring is how many windows each final model is scored on: val per validation file (0: the whole split)
// and ood per out-of-distribution text (0: whole).
type scoring struct{ val, ood int }

// scoring is the scoring of a tier with keys k: its score_windows and ood_windows where it sets them, else the
// whole validation split and Options.OODWindows (0: DefaultOODWindows; < 0: whole). Options.OODWindows set
// by a caller (tests) wins over the tier's.
func (o *Options) scoring(k tierKeys) scoring {
	sc := scoring{ood: DefaultOODWindows, val: k.ScoreWindows}
	if k.OODWindows > 0 {
		sc.ood = k.OODWindows
	}
	switch {
	case o.OODWindows > 0:
		sc.ood = o.OODWindows
	case o.OODWindows < 0:
		sc.ood = 0
	}
	return sc
}

// experimentOptions are experiment's options for o on plan p, with the study's extra work and scoring under
// the tier o's budget selects handed over as data.
func (o *Options) experimentOptions(p *experiment.Plan, d design) (experiment.Options, *study, error) {
	var seeds []uint64
	if o.Seeds != 0 {
		if err := experiment.CheckSeedCount("seeds", o.Seeds); err != nil {
			return experiment.Options{}, nil, err
		}
		seeds = experiment.SeedRange(o.Seeds)
	}
	s := &study{o: o, design: d}
	t := p.TierFor(cmp.Or(o.Budget, p.Budget.Duration()))
	extra, err := s.extra(t)
	if err != nil {
		return experiment.Options{}, nil, err
	}
	eo := experiment.Options{Out: o.Out, Budget: o.Budget, Steps: o.Steps, Seeds: seeds, ProbeTest: o.ProbeTest, Jobs: o.Jobs,
		Log: o.Log, Describe: true, Data: o.Data, Engine: o.Engine, EngineInfo: o.EngineInfo, Force: o.Force,
		Extra: extra, ScoreTokens: s.scoreTokens(p, t)}
	return eo, s, nil
}

// Describe is the reproduction's plan for o without training anything: the primaries' statement, arms, seeds,
// steps, tokens and the expected wall time from the throughput probe (tps > 0 replaces the probe).
func Describe(o Options, tps float64) (*experiment.Description, error) {
	p, d, err := o.plan()
	if err != nil {
		return nil, err
	}
	eo, s, err := o.experimentOptions(p, d)
	if err != nil {
		return nil, err
	}
	desc, err := experiment.Describe(p, eo, tps)
	if err != nil {
		return nil, err
	}
	desc.Statement = s.statement(desc)
	if err := chargeProbeScoring(context.Background(), desc, o.Out); err != nil {
		return nil, err
	}
	return desc, nil
}

// chargeProbeScoring adds the probe arms' scoring, timed on this machine (probeScoring), to desc's expected
// wall time.
func chargeProbeScoring(ctx context.Context, desc *experiment.Description, out string) error {
	w, ok, err := probeScoring(ctx, desc, filepath.Join(out, experiment.ProbeDataDir))
	if err != nil {
		return fmt.Errorf("timing the probe scoring: %w", err)
	}
	if ok {
		desc.AddScoring(w)
	}
	return nil
}

// Run runs the reproduce plan (data once, sizing from a throughput probe or OUT/sizing.json, the LR sweep, the
// arms, resuming finished and interrupted runs), scores every final model (whole validation split, per
// language, out-of-distribution texts, final saturation and sink rate), judges the claims, writes them with
// every number behind them to OUT/claims.json, the figures to OUT/reproduce-figures.html and OUT/report.html
// with claim 4's comparison. The way is one way: experiment runs the plan and returns what it ran; the study
// judges it and has experiment write the report with its pair.
func Run(ctx context.Context, o Options) (*Result, error) {
	p, d, err := o.plan()
	if err != nil {
		return nil, err
	}
	eo, s, err := o.experimentOptions(p, d)
	if err != nil {
		return nil, err
	}
	x, err := experiment.Start(ctx, p, eo)
	if err != nil {
		return nil, err
	}
	defer x.Close() // OUT/study.lock, held through the judging and the report
	if x.PrintsPlan() {
		desc, err := x.Describe()
		if err != nil {
			return nil, err
		}
		desc.Statement = s.statement(desc)
		if err := chargeProbeScoring(ctx, desc, o.Out); err != nil {
			return nil, err
		}
		if err := x.Register(desc); err != nil {
			return nil, err
		}
	}
	out, err := x.Train(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.judge(ctx, out)
	if err != nil {
		return nil, err
	}
	out.Compare.A, out.Compare.B = res.CompareA, res.CompareB
	if err := x.WriteReport(ctx); err != nil {
		return nil, err
	}
	return res, nil
}
