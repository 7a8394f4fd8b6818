package experiment

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/tune"
)

// parseTiers reads the plan file's [[tier]]s (decoded as tiers) and [tune] into p, checking them.
func parseTiers(p *Plan, tiers []tierFile, f *planFile) error {
	for i, ft := range tiers {
		t := Tier{Name: ft.Name, Minutes: ft.Minutes, Seeds: ft.Seeds, Widths: ft.Widths, TuneWidths: ft.TuneWidths, Smoke: ft.Smoke,
			Groups: ft.Groups, Gammas: ft.Gammas, MinSeeds: ft.MinSeeds,
			TokensPerParam: ft.TokensPerParam, Horizons: ft.Horizons, Cooldown: ft.Cooldown}
		where := fmt.Sprintf("tier %d (%s)", i+1, t.Name)
		// A tier's name and smoke note are written into plan.txt and claims.json: one line each.
		if err := checkName(fmt.Sprintf("tier %d: name", i+1), t.Name); err != nil {
			return err
		}
		if err := checkLine(where+": smoke", t.Smoke); err != nil {
			return err
		}
		var err error
		if t.Ladder, err = parseLadder(ft.Ladder); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if t.Ladder != nil && (t.Widths == nil || f.Tune == nil || f.Tune.Mode != TuneFull || p.Horizon == nil) {
			return fmt.Errorf("%s: ladder: wants the tier's widths, a [tune] of mode %q and [primaries] (the ladder's horizon is sized from theirs)", where, TuneFull)
		}
		if err := checkHorizons(t.TokensPerParam, t.Horizons, t.Cooldown); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if t.TuneExtend = ft.TuneExtend; t.TuneExtend < 0 || t.TuneExtend > 8 {
			return fmt.Errorf("%s: tune_extend %d: want 0 (the [tune] extend) … 8", where, t.TuneExtend)
		}
		if ft.TuneLRs != nil {
			t.TuneLRs = map[float64][]float64{}
			for k, lrs := range ft.TuneLRs {
				g, err := strconv.ParseFloat(k, 64)
				if err != nil || !(g > 0) || math.IsInf(g, 0) {
					return fmt.Errorf("%s: tune_lrs: key %q: want a γ", where, k)
				}
				if err := (tune.GridOptions{LRs: lrs, Seeds: []uint64{0, 1}}).Validate(); err != nil {
					return fmt.Errorf("%s: tune_lrs %q: %w", where, k, err)
				}
				t.TuneLRs[g] = lrs
			}
		}
		if t.Name == "" || !(t.Minutes > 0) {
			return fmt.Errorf("%s: want a name and minutes > 0", where)
		}
		if i > 0 && t.Minutes <= p.Tiers[i-1].Minutes {
			return fmt.Errorf("%s: tiers must be listed by increasing minutes", where)
		}
		for _, w := range append(append([]int(nil), t.Widths...), t.TuneWidths...) {
			if w < 1 {
				return fmt.Errorf("%s: width %d: want ≥ 1", where, w)
			}
		}
		if t.MinSeeds < 0 || t.MinSeeds > 0 && (len(t.Seeds) == 0 || t.MinSeeds > len(t.Seeds)) {
			return fmt.Errorf("%s: min_seeds %d: want 0 (run every seed) or 1 … the %d seeds the tier lists", where, t.MinSeeds, len(t.Seeds))
		}
		for _, name := range t.Groups {
			if !slices.ContainsFunc(p.Groups, func(g Group) bool { return g.Name == name }) {
				return fmt.Errorf("%s: groups: no group %q", where, name)
			}
		}
		if t.Groups != nil && len(t.Groups) == 0 {
			return fmt.Errorf("%s: groups: want at least one group (leave the key out to run them all)", where)
		}
		for _, g := range t.Gammas {
			if !(g > 0) || math.IsInf(g, 0) {
				return fmt.Errorf("%s: gammas: %g: want positive and finite", where, g)
			}
		}
		if t.Gammas != nil && len(t.Gammas) == 0 {
			return fmt.Errorf("%s: gammas: want at least one γ (leave the key out to run them all)", where)
		}
		p.Tiers = append(p.Tiers, t)
	}
	if ft := f.Tune; ft != nil {
		t := &TuneSpec{Gammas: ft.Gammas, Widths: ft.Widths, Center: ft.Center, Values: ft.Values, StepsDiv: ft.StepsDiv,
			MinSteps: ft.MinSteps, Eta: ft.Eta, Seed: ft.Seed, Sets: override.Flatten(ft.Set), Mode: cmp.Or(ft.Mode, TuneHalving),
			LRs: ft.LRs, Seeds: ft.Seeds, Extend: ft.Extend, TransferExponent: ft.TransferExponent, TransferTolerance: ft.TransferTolerance}
		switch t.Mode {
		case TuneHalving:
			if len(t.Gammas) == 0 || len(t.Widths) != 2 || !(t.Center > 0) || t.Values < 4 || t.StepsDiv < 1 || t.MinSteps < 1 || t.Eta < 0 || t.Eta == 1 {
				return fmt.Errorf("tune: want gammas, two widths, center > 0, values ≥ 4, steps_div ≥ 1, min_steps ≥ 1 and eta 0 or ≥ 2 (have %+v)", *t)
			}
			if t.LRs != nil || t.Seeds != nil || t.Extend != 0 || t.TransferExponent != 0 || t.TransferTolerance != 0 {
				return fmt.Errorf("tune: lrs, seeds, extend and transfer_* belong to mode = %q", TuneFull)
			}
			for _, tr := range p.Tiers {
				if tr.TuneWidths != nil && len(tr.TuneWidths) != 2 {
					return fmt.Errorf("tier %s: tune_widths: want two widths (the smallest and a middle one), have %d", tr.Name, len(tr.TuneWidths))
				}
			}
		case TuneFull:
			if len(t.Gammas) == 0 || len(t.Widths) == 0 {
				return fmt.Errorf("tune: mode %q wants gammas and widths (the tuned width first, then the widths the transfer rule is checked at)", TuneFull)
			}
			if t.Center != 0 || t.Values != 0 || t.StepsDiv != 0 || t.MinSteps != 0 || t.Eta != 0 || t.Seed != 0 {
				return fmt.Errorf("tune: center, values, steps_div, min_steps, eta and seed belong to mode = %q (mode %q tunes lrs on seeds at the full horizon)", TuneHalving, TuneFull)
			}
			if err := (tune.GridOptions{LRs: t.LRs, Seeds: t.Seeds, Extend: t.Extend}).Validate(); err != nil {
				return err
			}
			if math.IsNaN(t.TransferExponent) || math.IsInf(t.TransferExponent, 0) || math.Abs(t.TransferExponent) > 4 {
				return fmt.Errorf("tune: transfer_exponent %g: want a finite value in [−4, 4]", t.TransferExponent)
			}
			if t.TransferTolerance < 0 || math.IsNaN(t.TransferTolerance) || math.IsInf(t.TransferTolerance, 0) {
				return fmt.Errorf("tune: transfer_tolerance %g: want a finite value ≥ 0 (0: the primaries' δ)", t.TransferTolerance)
			}
		default:
			return fmt.Errorf("tune: mode %q: want %q or %q", t.Mode, TuneHalving, TuneFull)
		}
		p.Tune = t
	} else {
		for _, tr := range p.Tiers {
			if tr.TuneWidths != nil {
				return fmt.Errorf("tier %s: tune_widths but the plan has no [tune]", tr.Name)
			}
		}
	}
	return nil
}

// Tiered is the plan as tier t runs it: only t's groups (all without Tier.Groups), their init.gamma axes and
// the LR sweep's γ cut to t's Gammas (a group left without a γ is dropped), its horizon. The plan itself is not
// changed; nil t gives p. (The tier's study keys are the study design's to apply.)
func (p *Plan) Tiered(t *Tier) *Plan {
	if t == nil || (t.Groups == nil && t.Gammas == nil && t.TokensPerParam == 0 && t.Horizons == nil && t.TuneLRs == nil && t.TuneExtend == 0 && t.Ladder == nil) {
		return p
	}
	q := *p
	q.Ladder = t.Ladder
	if p.Horizon != nil && (t.TokensPerParam > 0 || t.Horizons != nil) {
		pr := *p.Horizon
		if t.TokensPerParam > 0 {
			pr.TokensPerParam = t.TokensPerParam
		}
		if t.Horizons != nil {
			pr.Horizons, pr.Cooldown = t.Horizons, t.Cooldown
		}
		q.Horizon = &pr
	}
	if p.Tune != nil && (t.TuneLRs != nil || t.TuneExtend > 0) {
		tn := *p.Tune
		if t.TuneLRs != nil {
			tn.LRsByGamma = t.TuneLRs
		}
		if t.TuneExtend > 0 {
			tn.Extend = t.TuneExtend
		}
		q.Tune = &tn
	}
	keepGamma := func(v any) bool {
		if t.Gammas == nil {
			return true
		}
		var g float64
		switch x := v.(type) {
		case float64:
			g = x
		case int64:
			g = float64(x)
		default:
			return true
		}
		return slices.ContainsFunc(t.Gammas, func(want float64) bool { return math.Abs(want-g) <= 1e-9 })
	}
	q.Groups = nil
	for _, g := range p.Groups {
		if t.Groups != nil && !slices.Contains(t.Groups, g.Name) {
			continue
		}
		g.Axes = slices.Clone(g.Axes)
		empty := false
		for i, a := range g.Axes {
			if a.Key != recipe.KeyGamma {
				continue
			}
			a.Values = slices.DeleteFunc(slices.Clone(a.Values), func(v any) bool { return !keepGamma(v) })
			g.Axes[i] = a
			empty = empty || len(a.Values) == 0
		}
		if !empty {
			q.Groups = append(q.Groups, g)
		}
	}
	if q.Tune != nil && t.Gammas != nil {
		tn := *q.Tune
		tn.Gammas = slices.DeleteFunc(slices.Clone(tn.Gammas), func(g float64) bool { return !keepGamma(g) })
		q.Tune = &tn
	}
	return &q
}

// TierFor is the tier a budget selects: the last whose Minutes the budget reaches, or the first when it reaches
// none; nil for a plan without tiers.
func (p *Plan) TierFor(budget time.Duration) *Tier {
	if len(p.Tiers) == 0 {
		return nil
	}
	t := &p.Tiers[0]
	for i := range p.Tiers {
		if budget.Minutes() >= p.Tiers[i].Minutes*(1-1e-9) {
			t = &p.Tiers[i]
		}
	}
	return t
}

// TierNamed is the tier of that name (e.g. "2h"), or nil.
func (p *Plan) TierNamed(name string) *Tier {
	for i := range p.Tiers {
		if p.Tiers[i].Name == name {
			return &p.Tiers[i]
		}
	}
	return nil
}

// tuneWidths are the widths the LR sweep runs at under tier t.
func (p *Plan) tuneWidths(t *Tier) []int {
	if t != nil && t.TuneWidths != nil {
		return t.TuneWidths
	}
	if p.Tune == nil {
		return nil
	}
	return p.Tune.Widths
}

// groupAxes are g's axes under tier t: a ladder group's model.hidden_size axis is the tier's widths.
func groupAxes(g *Group, t *Tier) []axis {
	var out []axis
	for _, a := range g.Axes {
		vals := a.Values
		if g.Ladder && a.Key == arch.KeyHiddenSize && t != nil && t.Widths != nil {
			vals = nil
			for _, w := range t.Widths {
				vals = append(vals, int64(w))
			}
		}
		out = append(out, axis{a.Key, vals})
	}
	return out
}

type axis struct {
	key    string
	values []any
}

// points is the cartesian product of the axes, in the axes' order (the last varies fastest).
func points(axes []axis) [][]override.Set {
	out := [][]override.Set{nil}
	for _, a := range axes {
		var next [][]override.Set
		for _, p := range out {
			for _, v := range a.values {
				next = append(next, append(slices.Clone(p), override.Set{Key: a.key, Value: v}))
			}
		}
		out = next
	}
	return out
}

// pointName names an arm of a derived group from its values, e.g. "gamma1-hidden_size64-attn_gatenone".
func pointName(sets []override.Set) string {
	name := ""
	for i, s := range sets {
		if i > 0 {
			name += "-"
		}
		k := s.Key
		if j := lastDot(k); j >= 0 {
			k = k[j+1:]
		}
		name += fmt.Sprintf("%s%v", k, s.Value)
	}
	if name == "" {
		name = "arm"
	}
	return name
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

// groupSeeds are the seeds of g's arms: its own, else the run's.
func groupSeeds(g *Group, o *Options) []uint64 {
	if g.Seeds != nil {
		return g.Seeds
	}
	return o.Seeds
}

// derivedSets are the keys a derived group computes for one arm from its resolved recipe c: the tuned
// learning rate of its γ at its width, and the width-emulated ε of its γ and width. Before the sweep has run
// (sizing) a tuned arm keeps the base learning rate: the cost of a run does not depend on it.
func (out *Outcome) derivedSets(p *Plan, g *Group, c recipe.Config) ([]override.Set, error) {
	var sets []override.Set
	gamma, d := c.Init.Gamma, c.Model.Dim
	if g.LR == LRTuned && out.Tuned != nil {
		tuned := out.TunedLR
		if p.ownHorizon(g) {
			tuned = out.ladderLR
		}
		lr, err := tuned(p, gamma, d)
		if err != nil {
			return nil, err
		}
		sets = append(sets, override.Set{Key: recipe.KeyLR, Value: lr})
	}
	if g.EmulateEps > 0 {
		eps, err := arch.EmulatedEps(arch.DefaultNormEps, gamma, d, g.EmulateEps)
		if err != nil {
			return nil, err
		}
		sets = append(sets, override.Set{Key: recipe.KeyNormEps, Value: eps})
	}
	return sets, nil
}

// TunedLR is the learning rate of γ at width d: under TuneFull the grid's choice at the tuned width carried to
// d by the plan's one transfer rule (tune.Transfer); otherwise the sweep's choice where it ran at d, else
// tune.AtWidth between the two swept widths.
func (out *Outcome) TunedLR(p *Plan, gamma float64, d int) (float64, error) {
	ws := p.tuneWidths(out.Tier)
	if p.Tune.full() {
		t, ok := out.Tuned[tuneKey(gamma, ws[0])]
		if !ok {
			return 0, fmt.Errorf("no learning-rate grid of γ = %g at width %d (the plan's [tune] gammas must cover every tuned arm)", gamma, ws[0])
		}
		return tune.Transfer(t.Result.LR, ws[0], d, p.Tune.TransferExponent), nil
	}
	a, okA := out.Tuned[tuneKey(gamma, ws[0])]
	b, okB := out.Tuned[tuneKey(gamma, ws[1])]
	if !okA || !okB {
		return 0, fmt.Errorf("no learning-rate sweep of γ = %g at widths %v (the plan's [tune] gammas must cover every tuned arm)", gamma, ws)
	}
	return tune.AtWidth(tune.Swept{Width: a.Width, LR: a.Result.LR}, tune.Swept{Width: b.Width, LR: b.Result.LR}, d)
}
