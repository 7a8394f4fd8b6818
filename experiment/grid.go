package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/tune"
)

// runGrid runs (or resumes, or reads back) the full-horizon learning-rate grid (TuneFull, docs/definitions.md
// §7 "Learning rates"): every γ of the sweep at its tuned width Widths[0] and at every check width, every rate
// on every tuning seed at that width's full horizon. The tuned width's choice is each γ's rate; the check
// widths test the one transfer rule (TransferCheck) and are reported, never used for an arm.
func runGrid(ctx context.Context, p *Plan, out *Outcome, o *Options) (map[string]Tuned, error) {
	ws := p.tuneWidths(out.Tier)
	res := map[string]Tuned{}
	for i, w := range ws {
		for _, g := range p.Tune.Gammas {
			key := tuneKey(g, w)
			path := filepath.Join(o.Out, TuneDir, key+".json")
			if t, ok := readTuned(path, o, true); ok {
				res[key] = t
				continue
			}
			if o.Task {
				return nil, fmt.Errorf("learning-rate grid %s has not run: run the plan once without a task index first (the tasks of a job array read its results)", key)
			}
			steps, err := out.trialSteps(p, g, w)
			if err != nil {
				return nil, err
			}
			gopts := p.Tune.gridOptions(p, i == 0, g)
			o.logf("\n== learning-rate grid γ = %g, width %d: rates %v on seeds %v, %d steps each (the full horizon), spike threshold %g\n",
				g, w, gopts.LRs, gopts.Seeds, steps, gopts.SpikeThreshold)
			hz := &horizonTrials{}
			r, err := out.selectGrid(ctx, p, key, g, w, steps, gopts, o, hz)
			if err != nil {
				return nil, fmt.Errorf("learning-rate grid %s: %w", key, err)
			}
			t := Tuned{Gamma: g, Width: w, Grid: &r, Horizons: hz.sorted(),
				Result: tune.Result{LR: r.LR, Loss: r.Loss, Bracketed: r.Bracketed, Steps: steps * len(r.Trials)}}
			for _, tr := range r.Trials {
				t.Result.Curve = append(t.Result.Curve, tune.Point{LR: tr.LR, Steps: steps, Loss: tr.Loss})
			}
			if i > 0 {
				base, ok := res[tuneKey(g, ws[0])]
				if !ok {
					return nil, fmt.Errorf("learning-rate grid %s: the tuned width %d has no result", key, ws[0])
				}
				c := tune.CheckTransfer(g, w, r, tune.Transfer(base.Result.LR, ws[0], w, p.Tune.TransferExponent), p.Tune.transferTolerance())
				t.Transfer = &c
				o.logf("transfer rule at width %d, γ = %g: %s\n", w, g, describeTransfer(c))
			}
			o.logf("γ = %g, width %d: learning rate %g (mean selection loss %.4f over %d seeds, bracketed %v)\n", g, w, r.LR, r.Loss, len(gopts.Seeds), r.Bracketed)
			b, err := json.MarshalIndent(t, "", "  ")
			if err != nil {
				return nil, fmt.Errorf("learning-rate grid %s: %w", key, err)
			}
			if err := atomicfile.Write(path, append(b, '\n')); err != nil {
				return nil, err
			}
			res[key] = t
		}
	}
	if p.Ladder != nil {
		if err := runLadderGrid(ctx, p, out, o, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// describeTransfer is one line on a transfer-rule check.
func describeTransfer(c tune.TransferCheck) string {
	verdict := "holds"
	switch {
	case math.IsNaN(c.Cost):
		verdict = "NOT CHECKED (the rule's rate was not trained there, or it spiked or diverged)"
	case !c.Pass:
		verdict = "FAILS"
	}
	return fmt.Sprintf("rule rate %g, best %g, the rule costs %.4f nats of selection loss (tolerance %g): %s", c.RuleLR, c.BestLR, c.Cost, c.Tolerance, verdict)
}

// gridOptions are the full-horizon grid's options for γ; only the tuned width (tuned) extends past the grid's
// edges.
func (t *TuneSpec) gridOptions(p *Plan, tuned bool, gamma float64) tune.GridOptions {
	o := tune.GridOptions{LRs: t.LRs, Seeds: t.Seeds}
	for g, lrs := range t.LRsByGamma {
		if math.Abs(g-gamma) <= 1e-9 {
			o.LRs = lrs
		}
	}
	if tuned {
		o.Extend = t.Extend
	}
	if p.Horizon != nil {
		o.SpikeThreshold = p.Horizon.SpikeThreshold
	}
	return o
}

// transferTolerance is the selection loss the transfer rule may give up at a check width: the plan's
// tune.transfer_tolerance (a study design may fill it in from its smallest effect of interest: package
// reproduce sets the primaries' δ), else 0.
func (t *TuneSpec) transferTolerance() float64 { return t.TransferTolerance }

// ladderSteps are the steps of a run of recipe c when the plan sizes its horizon in tokens per non-embedding
// parameter: steps scaled by N(c)/N(primaries' width), so every width of the ladder sees the same tokens per
// parameter (docs/definitions.md §7, "Horizon before breadth"); steps unchanged without a horizon.
func (out *Outcome) ladderSteps(p *Plan, steps int, c recipe.Config) (int, error) {
	if p.Horizon == nil || !(p.Horizon.TokensPerParam > 0) {
		return steps, nil
	}
	ref, err := out.horizonParams(p)
	if err != nil {
		return 0, err
	}
	n := c.Model.NonEmbeddingParams()
	if n == ref {
		return steps, nil
	}
	return max(1, int(math.Ceil(float64(steps)*float64(n)/float64(ref)))), nil
}

// horizonParams is N at the primaries' width, the reference of every ladder's steps (computed once).
func (out *Outcome) horizonParams(p *Plan) (int64, error) {
	if out.refParams == 0 {
		_, n, err := p.horizonSteps(out)
		if err != nil {
			return 0, err
		}
		out.refParams = n
	}
	return out.refParams, nil
}

// selectionPrepared makes sure the LR-selection slice exists (the trials train without it and are scored on it).
func selectionPrepared(out *Outcome, o *Options) error {
	if _, err := data.ReadSelectionStats(out.DataDir); err != nil && !o.Task {
		o.logf("carving the LR-selection slice out of the training documents (%.0f%%)\n", 100*data.DefaultSelectShare)
		if _, err := data.PrepareSelection(out.DataDir, data.DefaultSelectShare); err != nil {
			return err
		}
	}
	return nil
}

// tunedLike reports whether recipe c has the sweep's ε and gate (its Sets), so that its tuned rate was tuned
// for it; an arm that differs inherits the rate of its γ (docs/definitions.md §7, "Learning rates").
func (t *TuneSpec) tunedLike(c recipe.Config) bool {
	for _, s := range t.Sets {
		switch s.Key {
		case recipe.KeyNormEps:
			if v, ok := s.Value.(float64); ok && v != c.Model.NormEps {
				return false
			}
		case recipe.KeyAttnGate:
			if v, ok := s.Value.(string); ok && v != string(c.Model.AttnGate) {
				return false
			}
		}
	}
	return true
}

// setsText is sets as key = value, comma-separated; a string value holding a control character is written
// quoted and escaped, so that a value of the user's never adds a line to plan.txt.
func setsText(sets []override.Set) string {
	var parts []string
	for _, s := range sets {
		v := fmt.Sprint(s.Value)
		if str, ok := s.Value.(string); ok && strings.ContainsFunc(str, unicode.IsControl) {
			v = strconv.Quote(str)
		}
		parts = append(parts, s.Key+" = "+v)
	}
	return strings.Join(parts, ", ")
}
