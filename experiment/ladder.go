package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/tune"
)

// LadderHorizon gives a tier's ladder groups a horizon of their own (docs/definitions.md §7, "A ladder at its
// own horizon"): the size ladder trains at TokensPerParam tokens per non-embedding parameter while the primaries'
// other runs train at theirs, so that H2's every rung trains long enough on data seen once, on a corpus too
// small for the whole ladder at H1's horizon. Every rung (the primaries' width included) is a run of the ladder
// group; a rung is a single-horizon WSD run when the plan has a horizon series, so the primaries' width rung is
// the same recipe as the series' branch of that horizon.
//
// The rate is tuned at the ladder's horizon at both of its ends (TuneWidths: every γ of the sweep, a full
// grid on the tuning seeds, extended past either edge where the best lies); the widths between take
// tune.AtWidth, the rate interpolated in log width.
type LadderHorizon struct {
	TokensPerParam float64
	TuneWidths     []int     // the ladder's two ends
	LRs            []float64 // the ends' grid (nil: the [tune] lrs)
	// MinSteps > 0: every rung trains at least MinSteps steps; MaxEmbeddingShare > 0: a rung's embedding and head
	// parameters are at most that share of all its parameters. A plan that breaks either is refused before
	// anything trains.
	MinSteps          int
	MaxEmbeddingShare float64
}

// ladderFile is a tier's ladder table in a plan file.
type ladderFile struct {
	TokensPerParam    float64   `toml:"tokens_per_param"`
	TuneWidths        []int     `toml:"tune_widths"`
	LRs               []float64 `toml:"lrs"`
	MinSteps          int       `toml:"min_steps"`
	MaxEmbeddingShare float64   `toml:"max_embedding_share"`
}

// parseLadder checks a tier's ladder table.
func parseLadder(f *ladderFile) (*LadderHorizon, error) {
	if f == nil {
		return nil, nil
	}
	l := &LadderHorizon{TokensPerParam: f.TokensPerParam, TuneWidths: f.TuneWidths, LRs: f.LRs, MinSteps: f.MinSteps, MaxEmbeddingShare: f.MaxEmbeddingShare}
	if !(l.TokensPerParam > 0) || l.TokensPerParam > 1e4 {
		return nil, fmt.Errorf("ladder: tokens_per_param %g: want a horizon in (0, 10000] tokens per non-embedding parameter", l.TokensPerParam)
	}
	if len(l.TuneWidths) != 2 || l.TuneWidths[0] < 1 || l.TuneWidths[1] <= l.TuneWidths[0] {
		return nil, fmt.Errorf("ladder: tune_widths %v: want the ladder's two ends, smallest first", l.TuneWidths)
	}
	if l.LRs != nil {
		if err := (tune.GridOptions{LRs: l.LRs, Seeds: []uint64{0, 1}}).Validate(); err != nil {
			return nil, fmt.Errorf("ladder: lrs: %w", err)
		}
	}
	if l.MinSteps < 0 || l.MinSteps > budget.MaxSteps {
		return nil, fmt.Errorf("ladder: min_steps %d: want 0 … %d", l.MinSteps, budget.MaxSteps)
	}
	if !(l.MaxEmbeddingShare >= 0 && l.MaxEmbeddingShare < 1) {
		return nil, fmt.Errorf("ladder: max_embedding_share %g: want a share in [0, 1) (0: not checked)", l.MaxEmbeddingShare)
	}
	return l, nil
}

// ownHorizon reports whether g trains at the tier's ladder horizon instead of the primaries'.
func (p *Plan) ownHorizon(g *Group) bool { return g != nil && g.Ladder && p.Ladder != nil }

// rungSteps are the steps of a ladder run of recipe c at the ladder's horizon, for main runs of steps at the
// primaries' horizon: ceil(steps·(h/H)·N(c)/N(primaries' width)), the same tokens per non-embedding parameter at
// every width.
func (out *Outcome) rungSteps(p *Plan, steps int, c recipe.Config) (int, error) {
	pr := p.Horizon
	if pr == nil || !(pr.TokensPerParam > 0) {
		return 0, fmt.Errorf("plan %s: a ladder horizon needs the primaries' tokens_per_param", p.Name)
	}
	ref, err := out.horizonParams(p)
	if err != nil {
		return 0, err
	}
	x := float64(steps) * p.Ladder.TokensPerParam / pr.TokensPerParam * float64(c.Model.NonEmbeddingParams()) / float64(ref)
	return max(1, int(math.Ceil(x))), nil
}

// singleHorizon makes c a WSD run of its own steps when the plan has a horizon series (the decay over the
// series' cooldown fraction; the warmup its per-step divisor already gave), so that a rung at the primaries'
// width is the recipe of the series' branch at the ladder's horizon; without a series c is unchanged.
func (p *Plan) singleHorizon(c recipe.Config) (recipe.Config, error) {
	hs, cool := p.series()
	if hs == nil {
		return c, nil
	}
	c.Train.SnapshotSteps = nil
	c.Schedule.Kind, c.Schedule.DecaySteps = recipe.ScheduleWSD, decaySteps(c.TotalSteps(), cool)
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("ladder rung: %w", err)
	}
	return c, nil
}

// checkRung refuses a ladder rung that trains fewer than the ladder's min_steps or whose embedding and head
// outweigh its max_embedding_share.
func (p *Plan) checkRung(c recipe.Config) error {
	l := p.Ladder
	if l.MinSteps > 0 && c.TotalSteps() < l.MinSteps {
		return fmt.Errorf("width %d trains %d steps at the ladder's %g tokens per parameter, fewer than the ladder's min_steps %d", c.Model.Dim, c.TotalSteps(), l.TokensPerParam, l.MinSteps)
	}
	if l.MaxEmbeddingShare > 0 {
		all := c.Model.NumParams()
		if s := float64(all-c.Model.NonEmbeddingParams()) / float64(all); s > l.MaxEmbeddingShare {
			return fmt.Errorf("width %d: the embedding and head are %.0f%% of its parameters, more than the ladder's max_embedding_share %g", c.Model.Dim, 100*s, l.MaxEmbeddingShare)
		}
	}
	return nil
}

// expandChecked is expand at the plan's real steps (not a sizing probe's), with every ladder rung checked
// against the ladder's min_steps and max_embedding_share (checkRung).
func expandChecked(p *Plan, out *Outcome, steps int, o *Options) ([]planRun, error) {
	runs, err := expand(p, out, steps, o)
	if err != nil || p.Ladder == nil {
		return runs, err
	}
	for _, r := range runs {
		if p.ownHorizon(r.group) {
			if err := p.checkRung(r.cfg); err != nil {
				return nil, fmt.Errorf("plan %s: group %s: arm %s: %w", p.Name, r.group.Name, r.arm, err)
			}
		}
	}
	return runs, nil
}

// ladderTuneKey names the ladder's grid of γ at width (its directory and result file in TuneDir).
func ladderTuneKey(gamma float64, width int, tpp float64) string {
	return fmt.Sprintf("%s-tpp%g", tuneKey(gamma, width), tpp)
}

// LadderTunedKey names the ladder-horizon grid's result of γ at width in Outcome.Tuned.
func LadderTunedKey(gamma float64, width int, tpp float64) string {
	return ladderTuneKey(gamma, width, tpp)
}

// ladderGridOptions are the ladder's grid options for γ at either end: its rates (else the [tune] lrs), the
// sweep's tuning seeds and extension (both ends extend), and the spike veto.
func (p *Plan) ladderGridOptions() tune.GridOptions {
	o := tune.GridOptions{LRs: p.Tune.LRs, Seeds: p.Tune.Seeds, Extend: p.Tune.Extend}
	if p.Ladder.LRs != nil {
		o.LRs = p.Ladder.LRs
	}
	if p.Horizon != nil {
		o.SpikeThreshold = p.Horizon.SpikeThreshold
	}
	return o
}

// ladderTrialSteps are the steps of a ladder-horizon trial of γ at width.
func (out *Outcome) ladderTrialSteps(p *Plan, gamma float64, width int) (int, error) {
	c, err := train.LoadSets("", out.trialSets(p, gamma, width, out.Steps, p.Tune.LRs[0], p.Tune.Seeds[0]))
	if err != nil {
		return 0, fmt.Errorf("ladder LR grid recipe at width %d: %w", width, err)
	}
	return out.rungSteps(p, out.Steps, c)
}

// runLadderGrid runs (or resumes, or reads back) the ladder's grid at its horizon: every γ of the sweep at both
// ends of the ladder, every rate on every tuning seed, extended past either edge. It adds the results to res by
// LadderTunedKey.
func runLadderGrid(ctx context.Context, p *Plan, out *Outcome, o *Options, res map[string]Tuned) error {
	l := p.Ladder
	for _, w := range l.TuneWidths {
		for _, g := range p.Tune.Gammas {
			key := ladderTuneKey(g, w, l.TokensPerParam)
			path := filepath.Join(o.Out, TuneDir, key+".json")
			if t, ok := readTuned(path, o, true); ok {
				res[key] = t
				continue
			}
			if o.Task {
				return fmt.Errorf("ladder learning-rate grid %s has not run: run the plan once without a task index first (the tasks of a job array read its results)", key)
			}
			steps, err := out.ladderTrialSteps(p, g, w)
			if err != nil {
				return err
			}
			gopts := p.ladderGridOptions()
			o.logf("\n== ladder learning-rate grid γ = %g, width %d at %g tokens per parameter: rates %v on seeds %v, %d steps each, spike threshold %g\n",
				g, w, l.TokensPerParam, gopts.LRs, gopts.Seeds, steps, gopts.SpikeThreshold)
			r, err := out.selectGrid(ctx, p, key, g, w, steps, gopts, o, nil)
			if err != nil {
				return fmt.Errorf("ladder learning-rate grid %s: %w", key, err)
			}
			t := Tuned{Gamma: g, Width: w, TokensPerParam: l.TokensPerParam, Grid: &r,
				Result: tune.Result{LR: r.LR, Loss: r.Loss, Bracketed: r.Bracketed, Steps: steps * len(r.Trials)}}
			for _, tr := range r.Trials {
				t.Result.Curve = append(t.Result.Curve, tune.Point{LR: tr.LR, Steps: steps, Loss: tr.Loss})
			}
			o.logf("γ = %g, width %d at %g tokens per parameter: learning rate %g (mean selection loss %.4f over %d seeds, bracketed %v)\n",
				g, w, l.TokensPerParam, r.LR, r.Loss, len(gopts.Seeds), r.Bracketed)
			b, err := json.MarshalIndent(t, "", "  ")
			if err != nil {
				return fmt.Errorf("ladder learning-rate grid %s: %w", key, err)
			}
			if err := atomicfile.Write(path, append(b, '\n')); err != nil {
				return err
			}
			res[key] = t
		}
	}
	return nil
}

// ladderLR is the rate of γ at width d on the ladder: tune.AtWidth between the rates tuned at its two ends.
func (out *Outcome) ladderLR(p *Plan, gamma float64, d int) (float64, error) {
	l := p.Ladder
	a, okA := out.Tuned[ladderTuneKey(gamma, l.TuneWidths[0], l.TokensPerParam)]
	b, okB := out.Tuned[ladderTuneKey(gamma, l.TuneWidths[1], l.TokensPerParam)]
	if !okA || !okB {
		return 0, fmt.Errorf("no ladder learning-rate grid of γ = %g at widths %v (the plan's [tune] gammas must cover every ladder arm)", gamma, l.TuneWidths)
	}
	return tune.AtWidth(tune.Swept{Width: a.Width, LR: a.Result.LR}, tune.Swept{Width: b.Width, LR: b.Result.LR}, d)
}

// ladderGridCost is the ladder grid's worst-case training in trial steps and in base-model steps (perStep is a
// recipe's cost of one step relative to the base's), for main runs of steps.
func (out *Outcome) ladderGridCost(p *Plan, steps int, perStep func(recipe.Config) float64) (int, float64, error) {
	if p.Ladder == nil || !p.Tune.full() {
		return 0, 0, nil
	}
	var n int
	var cost float64
	trials := p.ladderGridOptions().WorstCaseTrials()
	for _, w := range p.Ladder.TuneWidths {
		for _, g := range p.Tune.Gammas {
			c, err := train.LoadSets("", out.trialSets(p, g, w, steps, p.Tune.LRs[0], p.Tune.Seeds[0]))
			if err != nil {
				return 0, 0, fmt.Errorf("plan %s: ladder LR grid recipe: %w", p.Name, err)
			}
			ts, err := out.rungSteps(p, steps, c)
			if err != nil {
				return 0, 0, err
			}
			n += trials * ts
			cost += float64(trials*ts) * perStep(c)
		}
	}
	return n, cost, nil
}

// ladderAt is ", at the ladder's own horizon of h tokens per parameter" when the plan gives it one.
func ladderAt(p *Plan) string {
	if p.Ladder == nil {
		return ""
	}
	return fmt.Sprintf(", at the ladder's own horizon of %g", p.Ladder.TokensPerParam)
}

// writeLadder prints the ladder's horizon, its rungs' steps, tokens and embedding shares, and its grid.
func (d *Description) writeLadder(w io.Writer) {
	l := d.Plan.Ladder
	if l == nil {
		return
	}
	fmt.Fprintf(w, "ladder at its own horizon: %g tokens per non-embedding parameter (the primaries' other runs: %g); every rung is a run of the ladder group, a single-horizon WSD run under a horizon series",
		l.TokensPerParam, d.Plan.Horizon.TokensPerParam)
	if l.MinSteps > 0 {
		fmt.Fprintf(w, "; every rung trains ≥ %d steps", l.MinSteps)
	}
	if l.MaxEmbeddingShare > 0 {
		fmt.Fprintf(w, "; the embedding and head are ≤ %.0f%% of a rung's parameters", 100*l.MaxEmbeddingShare)
	}
	fmt.Fprintln(w)
	seen := map[int]bool{}
	var rungs []ArmLine
	for _, a := range d.Arms {
		if a.Ladder && !seen[a.Width] {
			seen[a.Width] = true
			rungs = append(rungs, a)
		}
	}
	slices.SortFunc(rungs, func(a, b ArmLine) int { return a.Width - b.Width })
	for _, a := range rungs {
		fmt.Fprintf(w, "  rung width %d: N = %d, %d steps, embedding and head %.0f%% of the parameters\n", a.Width, a.Params, a.Steps, 100*a.EmbeddingShare)
	}
	g := d.Plan.ladderGridOptions()
	fmt.Fprintf(w, "ladder LR grid at %g tokens per parameter: γ ∈ %v at both ends (widths %v), rates %v (up to %d more past either edge) on tuning seeds %v; the widths between take the rate interpolated in log width (tune.AtWidth)\n",
		l.TokensPerParam, d.Tune.Gammas, l.TuneWidths, g.LRs, g.Extend, g.Seeds)
}
