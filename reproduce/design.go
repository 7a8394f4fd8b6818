package reproduce

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/anchor"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/recipe"
)

// design is the study design a reproduce plan carries besides its groups, read from the plan file's study
// tables (experiment.Plan.DecodeStudy): the pre-registered primaries ([primaries]'s hypotheses, δ, priors and
// power) and the anchor-function grid ([anchor]). experiment runs the plan; the design states, prices and
// judges it (study).
type design struct {
	primaries *Primaries          // nil: the claims are judged as secondaries
	anchor    *AnchorSpec         // nil: no anchor grid
	tiers     map[string]tierKeys // by tier name: the design's keys of each [[tier]]
}

// tierKeys are the keys of a [[tier]] the design reads (experiment reads the rest, experiment.Tier): the anchor
// grid's steps per cell under the tier (anchor_steps; 0: the grid's own) and whether the tier leaves the grid
// out (anchor = false); ScoreWindows > 0 scores each final model on the first ScoreWindows context windows of
// each validation file instead of the whole split, and OODWindows > 0 bounds each out-of-distribution text to
// its first windows (0: the defaults): a short tier's scoring otherwise costs more than its training. Every arm
// is scored on the same windows, so the paired comparisons stay paired.
type tierKeys struct {
	AnchorSteps  int
	NoAnchor     bool
	ScoreWindows int
	OODWindows   int
}

// tierFile is the TOML layout of the design's keys of a [[tier]].
type tierFile struct {
	AnchorSteps  int   `toml:"anchor_steps"`
	Anchor       *bool `toml:"anchor"`
	ScoreWindows int   `toml:"score_windows"`
	OODWindows   int   `toml:"ood_windows"`
}

// parseTierKeys reads and checks the design's keys of every tier of the plan, by tier name.
func parseTierKeys(p *experiment.Plan) (map[string]tierKeys, error) {
	var fs []tierFile
	if err := p.DecodeStudyTiers(&fs); err != nil {
		return nil, err
	}
	keys := map[string]tierKeys{}
	for i, f := range fs {
		name := p.Tiers[i].Name
		if err := errors.Join(eval.CheckWindows("score_windows", f.ScoreWindows), eval.CheckWindows("ood_windows", f.OODWindows)); err != nil {
			return nil, fmt.Errorf("tier %d (%s): %w (0: the whole split, the design's default)", i+1, name, err)
		}
		if f.AnchorSteps < 0 {
			return nil, fmt.Errorf("tier %d (%s): anchor_steps %d: want ≥ 0", i+1, name, f.AnchorSteps)
		}
		keys[name] = tierKeys{AnchorSteps: f.AnchorSteps, NoAnchor: f.Anchor != nil && !*f.Anchor, ScoreWindows: f.ScoreWindows, OODWindows: f.OODWindows}
	}
	return keys, nil
}

// keys are the design's keys of tier t (none for nil: a plan without tiers).
func (d design) keys(t *experiment.Tier) tierKeys {
	if t == nil {
		return tierKeys{}
	}
	return d.tiers[t.Name]
}

// CheckKeys checks a plan that `smallinit study` runs without its design: every key of reproduce's in the
// plan file ([primaries]' hypotheses and priors, [anchor], reproduce's keys of each [[tier]]) is read as
// reproduce reads it, so that a misspelt key (anchr_steps in a [[tier]]) is refused naming it, as experiment's
// own unknown keys are, instead of doing nothing. The tiers' values are checked too (they size what study
// scores); [primaries] and [anchor] are judged and run only by reproduce, which checks their values.
func CheckKeys(p *experiment.Plan) error {
	if _, err := parseTierKeys(p); err != nil {
		return err
	}
	if _, err := p.DecodeStudy(experiment.TablePrimaries, &primariesFile{}); err != nil {
		return err
	}
	_, err := p.DecodeStudy(experiment.TableAnchor, &anchorFile{})
	return err
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
	if d.tiers, err = parseTierKeys(p); err != nil {
		return d, fmt.Errorf("plan %s: %w", p.Name, err)
	}
	return d, nil
}

// AnchorSpec is a plan's anchor-function grid ([anchor]; 2405.05409's composite task, package anchor): every γ of
// Gammas at depth Depth, every rate of LRs (the best per cell is kept), on the plan's seeds, a model of width
// Dim, feed-forward width FFN and head width HeadDim, Batch sequences per step drawn from Examples training
// sequences, Steps steps unless the budget's tier sets anchor_steps (tierKeys.AnchorSteps).
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

// steps are the grid's steps per cell under a tier with keys k: the tier's anchor_steps, else the grid's (0
// when a is nil or the tier leaves the grid out).
func (a *AnchorSpec) steps(k tierKeys) int {
	switch {
	case a == nil || k.NoAnchor:
		return 0
	case k.AnchorSteps > 0:
		return k.AnchorSteps
	}
	return a.Steps
}

// study is the reproduction's design at work on one execution of its plan: it hands experiment its extra work
// and scoring as data (experimentOptions), states the primaries before training (statement) and, once the
// plan's runs are done, runs the anchor grid and judges the claims (judge). experiment never calls it.
type study struct {
	o      *Options
	design design
}

// statement is the primaries and their predicted power on the described seeds, H2's margin over the
// described ladder (the ladder groups' arms and the arms at the primaries' width): the first lines of the
// printed plan (experiment.Description.Statement).
func (s *study) statement(d *experiment.Description) []byte {
	pr := s.design.primaries.at(d.Plan)
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
	var b bytes.Buffer
	pr.Write(&b, len(d.Seeds), lnSpan(ns))
	return b.Bytes()
}

// extra is the anchor grid under tier t, per seed the plan runs (none without [anchor] or when the tier leaves
// it out).
func (s *study) extra(t *experiment.Tier) ([]experiment.ExtraWork, error) {
	g := s.anchorGrid(t, []uint64{0})
	if g == nil {
		return nil, nil
	}
	w, err := anchorWork(g)
	if err != nil {
		return nil, err
	}
	return []experiment.ExtraWork{w}, nil
}

// scoreTokens are the tokens each final model is scored on under tier t: the validation split (about 108,000
// tokens of the embedded corpus) and the out-of-distribution texts' windows of the plan's context.
func (s *study) scoreTokens(p *experiment.Plan, t *experiment.Tier) int64 {
	seq := int64(128)
	for _, b := range p.Base {
		if b.Key == recipe.KeyContext {
			if v, ok := b.Value.(int64); ok {
				seq = v
			}
		}
	}
	sc := s.o.scoring(s.design.keys(t))
	val := int64(108_000)
	if sc.val > 0 { // the embedded corpus's validation split has a file per language (2)
		val = min(val, 2*int64(sc.val)*seq)
	}
	return val + int64(3*sc.ood)*seq
}

// anchorGrid is the plan's anchor grid under tier t on seeds (Options.AnchorSteps replacing the tier's steps);
// nil without [anchor] or when the tier leaves it out.
func (s *study) anchorGrid(t *experiment.Tier, seeds []uint64) *anchor.Grid {
	a := s.design.anchor
	steps := a.steps(s.design.keys(t))
	if steps > 0 && s.o.AnchorSteps > 0 {
		steps = s.o.AnchorSteps
	}
	return anchorGrid(a, seeds, steps)
}

// judge runs the anchor grid, scores every run of the outcome, judges the claims and writes claims.json and
// the figures; the report's comparison is claim 4's pair (Result.CompareA, CompareB).
func (s *study) judge(ctx context.Context, out *experiment.Outcome) (*Result, error) {
	o := s.o
	res := &Result{Steps: out.Steps, Seeds: len(out.Seeds), Runs: out.Runs, Tokens: out.Tokens, Out: o.Out}
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
	if g := s.anchorGrid(out.Tier, out.Seeds); g != nil {
		var err error
		if anc, err = runAnchor(ctx, g, anchorDir(o.Out), o); err != nil {
			return nil, err
		}
	}
	if err := res.evaluate(ctx, out, s.design.primaries.at(out.Plan), o.CompareWindows, o.scoring(s.design.keys(out.Tier)), anc); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("claims.json: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(o.Out, "claims.json"), append(b, '\n')); err != nil {
		return nil, err
	}
	if err := writeFigures(filepath.Join(o.Out, FiguresFile), res); err != nil {
		return nil, err
	}
	return res, nil
}
