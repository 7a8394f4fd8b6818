package reproduce

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/anchor"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/recipe"
)

// design is the study design a reproduce plan carries besides its groups, read from the plan file's study
// tables (experiment.Plan.DecodeStudy): the pre-registered primaries ([primaries]'s hypotheses, δ, priors and
// power) and the anchor-function grid ([anchor]). experiment runs the plan; the design states, prices and
// judges it (evaluator).
type design struct {
	primaries *Primaries  // nil: the claims are judged as secondaries
	anchor    *AnchorSpec // nil: no anchor grid
}

// designOf reads and checks the plan's study tables.
func designOf(p *experiment.Plan) (design, error) {
	var d design
	var err error
	if d.primaries, err = parsePrimaries(p); err != nil {
		return d, fmt.Errorf("plan %s: %w", p.Name, err)
	}
	if d.anchor, err = parseAnchor(p); err != nil {
		return d, fmt.Errorf("plan %s: %w", p.Name, err)
	}
	return d, nil
}

// AnchorSpec is a plan's anchor-function grid ([anchor]; 2405.05409's composite task, package anchor): every γ of
// Gammas at depth Depth, every rate of LRs (the best per cell is kept), on the plan's seeds, a model of width
// Dim, feed-forward width FFN and head width HeadDim, Batch sequences per step drawn from Examples training
// sequences, Steps steps unless the budget's tier sets anchor_steps (experiment.Tier.AnchorSteps).
type AnchorSpec struct {
	Gammas            []float64
	Depth             int
	LRs               []float64
	Dim, FFN, HeadDim int
	Batch, Examples   int
	Steps             int
}

// anchorFile is the TOML layout of [anchor].
type anchorFile struct {
	Gammas   []float64 `toml:"gammas"`
	Depth    int       `toml:"depth"`
	LRs      []float64 `toml:"lrs"`
	Dim      int       `toml:"dim"`
	FFN      int       `toml:"ffn"`
	HeadDim  int       `toml:"head_dim"`
	Batch    int       `toml:"batch"`
	Examples int       `toml:"examples"`
	Steps    int       `toml:"steps"`
}

// parseAnchor reads and checks the plan's [anchor] (nil without one).
func parseAnchor(p *experiment.Plan) (*AnchorSpec, error) {
	var fa anchorFile
	ok, err := p.DecodeStudy(experiment.TableAnchor, &fa)
	if err != nil || !ok {
		return nil, err
	}
	a := &AnchorSpec{Gammas: fa.Gammas, Depth: fa.Depth, LRs: fa.LRs, Dim: fa.Dim, FFN: fa.FFN, HeadDim: fa.HeadDim,
		Batch: fa.Batch, Examples: fa.Examples, Steps: fa.Steps}
	if len(a.Gammas) < 2 || a.Depth < 1 || len(a.LRs) == 0 || a.Dim < 1 || a.FFN < 1 || a.HeadDim < 1 || a.Batch < 1 || a.Examples < a.Batch || a.Steps < 1 {
		return nil, fmt.Errorf("anchor: want ≥ 2 gammas, depth ≥ 1, lrs, dim, ffn, head_dim, batch, steps ≥ 1 and examples ≥ batch (have %+v)", *a)
	}
	for _, lr := range a.LRs {
		if !(lr > 0) {
			return nil, fmt.Errorf("anchor: lr %g: want > 0", lr)
		}
	}
	return a, nil
}

// steps are the grid's steps per cell under tier t: the tier's anchor_steps, else the grid's (0 when a is nil
// or the tier leaves the grid out).
func (a *AnchorSpec) steps(t *experiment.Tier) int {
	switch {
	case a == nil || t != nil && t.NoAnchor:
		return 0
	case t != nil && t.AnchorSteps > 0:
		return t.AnchorSteps
	}
	return a.Steps
}

// evaluator is the reproduction's experiment.Evaluator: it states the primaries before training, prices the
// anchor grid from the budget, and judges the claims once the plan's runs are done.
type evaluator struct {
	o      *Options
	design design
	res    *Result // Evaluate's, for Run
}

// Statement prints the primaries and their predicted power on the described seeds, H2's margin over the
// described ladder (the ladder groups' arms and the arms at the primaries' width).
func (e *evaluator) Statement(w io.Writer, d *experiment.Description) error {
	pr := e.design.primaries.at(d.Plan)
	if pr == nil {
		return nil
	}
	ladder := map[string]bool{}
	for _, g := range d.Plan.Groups {
		ladder[g.Name] = g.Ladder
	}
	var ns []float64
	for _, a := range d.Arms {
		if ladder[a.Group] || a.Width == pr.Width {
			ns = append(ns, float64(a.Params))
		}
	}
	pr.Write(w, len(d.Seeds), lnSpan(ns))
	return nil
}

// Extra is the anchor grid on the seeds the plan runs under tier t (none without [anchor] or when the tier
// leaves it out).
func (e *evaluator) Extra(p *experiment.Plan, t *experiment.Tier, seeds []uint64) ([]experiment.ExtraWork, error) {
	g := e.anchorGrid(t, seeds)
	if g == nil {
		return nil, nil
	}
	w, err := anchorWork(g)
	if err != nil {
		return nil, err
	}
	return []experiment.ExtraWork{w}, nil
}

// ScoreTokens are the tokens each final model is scored on: the validation split (about 108,000 tokens of the
// embedded corpus) and the out-of-distribution texts' windows of the plan's context.
func (e *evaluator) ScoreTokens(p *experiment.Plan, t *experiment.Tier) int64 {
	seq := int64(128)
	for _, s := range p.Base {
		if s.Key == recipe.KeyContext {
			if v, ok := s.Value.(int64); ok {
				seq = v
			}
		}
	}
	sc := e.o.scoring(t)
	val := int64(108_000)
	if sc.val > 0 { // the embedded corpus's validation split has a file per language (2)
		val = min(val, 2*int64(sc.val)*seq)
	}
	return val + int64(3*sc.ood)*seq
}

// anchorGrid is the plan's anchor grid under tier t on seeds (Options.AnchorSteps replacing the tier's steps);
// nil without [anchor] or when the tier leaves it out.
func (e *evaluator) anchorGrid(t *experiment.Tier, seeds []uint64) *anchor.Grid {
	a := e.design.anchor
	steps := a.steps(t)
	if steps > 0 && e.o.AnchorSteps > 0 {
		steps = e.o.AnchorSteps
	}
	return anchorGrid(a, seeds, steps)
}

// Evaluate runs the anchor grid, scores every run, judges the claims and writes claims.json and the figures;
// the report's comparison is claim 4's pair.
func (e *evaluator) Evaluate(ctx context.Context, out *experiment.Outcome) error {
	o := e.o
	res := &Result{Steps: out.Steps, Seeds: len(out.Seeds), Runs: out.Runs, Tokens: out.Tokens, Out: o.Out}
	e.res = res
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
	if g := e.anchorGrid(out.Tier, out.Seeds); g != nil {
		var err error
		if anc, err = runAnchor(ctx, g, anchorDir(o.Out), o); err != nil {
			return err
		}
	}
	if err := res.evaluate(out, e.design.primaries.at(out.Plan), o.CompareWindows, o.scoring(out.Tier), anc); err != nil {
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
