package reproduce

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/stats"
)

// judgePrimaries decides the plan's two pre-registered primaries (Primaries) as one family, Holm
// over the two at the plan's α (docs/definitions.md §7):
//
//   - H1 (claim 1): the paired gain L(γ=0.5) − L(γ=1) at the γ grid's width with both fixes, each γ at its tuned
//     LR; the same gain at the matched (shared) LR is reported beside it.
//   - H2 (claim 2): the per-seed least-squares slope of that paired gain against ln N over the ladder, which
//     needs ≥ MinWidths widths spanning ≥ MinSpan in width.
//
// Each is "supported" or "contradicted" when its Holm-adjusted p is at most α with the mean on that side, "no
// meaningful effect" when its two one-sided tests (also Holm-adjusted) place it inside ±δ, and otherwise
// inconclusive; "untestable at this horizon" when a γ = 1 run it reads had not plateaued.
//
// A primary's reached MDE is at Holm's first-step level α/2, the level its MDE was predicted at before training
// (Primaries.Write); its sign-flip p is Holm-adjusted over the pair too; H1 is also stated as an
// effective model size, read through the plan's own γ = 0.5 ladder fit at H1's width (bootstrap replicates).
func judgePrimaries(ev *Evidence, bootstrap int) []Claim {
	spec := ev.Primaries
	h1 := Test{Name: "H1: γ=1 gain L(γ=0.5) − L(γ=1), tuned LR", Decisive: true, Delta: spec.DeltaH1()}
	g05, g1 := ev.gammaArm(0.5), ev.gammaArm(1)
	d := gain(g05.Overall(), g1.Overall())
	h1.Estimate = stats.Estimate{Seeds: d.Seeds, Values: d.Values}

	lnSpan, widths := ladderSpan(ev.Ladder)
	h2 := Test{Name: "H2: slope of the gain against ln N", Decisive: true, Delta: spec.DeltaH2(lnSpan)}
	slopes, perSeed := ladderSlopes(ev.Ladder)
	h2.Estimate = stats.Estimate{Seeds: slopes.Seeds, Values: slopes.Values}

	tests := []*Test{&h1, &h2}
	ps := make([]float64, 2)
	pt := make([]float64, 2)
	for i, t := range tests {
		t.measure(spec.Alpha)
		ps[i] = t.Estimate.P
		pt[i] = pOr1(t.PTOST)
	}
	adj, adjT := stats.Holm(ps), stats.Holm(pt)
	var sf []float64
	for _, t := range tests {
		if t.PSignFlip != nil {
			sf = append(sf, *t.PSignFlip)
		}
	}
	var adjSF []float64
	if len(sf) == len(tests) {
		adjSF = stats.Holm(sf)
	}
	for i, t := range tests {
		p := adj[i]
		t.PHolm = &p
		if adjSF != nil {
			q := adjSF[i]
			t.PSignFlipHolm = &q
		}
		if t.Estimate.N >= 2 {
			t.MDEAlpha = spec.FirstStepAlpha()
			t.Estimate.MDE = stats.MDEMultiplier(t.Estimate.N, t.MDEAlpha, stats.Power) * t.Estimate.SE
		}
		if t.PTOST != nil {
			q := adjT[i]
			t.PTOST = &q
		}
		t.Decision = decide(t.Estimate, t.Delta, pOr1(t.PTOST), p, p, spec.Alpha)
		t.Result = resultOf(t.Decision)
		t.RestsOnOneSeed = t.fragile(t.Decision, spec.Alpha/2)
	}

	// H1's effective size is read through the ladder's L(N) only when the ladder trained at H1's horizon; a
	// ladder at its own horizon gives the effective size at that horizon, stated with H2.
	var ladderEff *EffReading
	if len(ev.Ladder) >= 2 {
		eff := effectiveSize(ev.Ladder, bootstrap)
		for i := range eff.Points {
			if eff.Points[i].Width == ev.Width {
				if ev.LadderOwnHorizon {
					ladderEff = &eff.Points[i]
				} else {
					h1.EffSize = &eff.Points[i]
				}
			}
		}
	}

	// With a horizon series H1 is also stated as effective data, through γ = 0.5's runs at the two longest
	// horizons (effdata.go).
	if spec.TokensPerParam > 0 {
		h1.EffData = effectiveData(ev.Horizons, g05, g1, spec.TokensPerParam, bootstrap)
	}

	var matched []Test
	if s05, s1 := sharedArm(ev, 0.5), sharedArm(ev, 1); s05 != nil && s1 != nil {
		dm := gain(s05.Overall(), s1.Overall())
		m := Test{Name: fmt.Sprintf("H1 at the matched (shared) LR %g [reported]", s1.LR), Delta: spec.DeltaH1(), Estimate: stats.Estimate{Seeds: dm.Seeds, Values: dm.Values}}
		m.measure(spec.Alpha)
		matched = append(matched, m)
	}

	matched = append(matched, horizonTests(ev.Horizons, spec.DeltaH1())...)
	matched = append(matched, gridMatched(ev, spec.DeltaH1())...)
	matched2 := gridMatchedSlopes(ev, spec.DeltaH2(lnSpan))
	// The per-width gains beside the slope: what the slope summarises, rung by rung.
	for _, r := range ev.Ladder {
		d := gain(r.G05.Overall(), r.G1.Overall())
		t := Test{Name: fmt.Sprintf("gain at width %d (N = %.0f, the ladder) [reported]", r.Width, r.N), Delta: spec.DeltaH1(),
			Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}}
		t.measure(ClaimAlpha)
		matched2 = append(matched2, t)
	}

	one := func(n int, id, text string, t Test, extra []Test, unplateaued []string, need string) Claim {
		c := Claim{N: n, ID: id, Text: text, Verdict: t.Decision, Tests: append([]Test{t}, extra...)}
		var parts []string
		for _, x := range c.Tests {
			parts = append(parts, (&claimTests{tests: []Test{x}}).text())
		}
		c.Evidence = fmt.Sprintf("%s; primary family: Holm over H1 and H2 at α = %g, intervals at α = %g, the primaries' MDE from the noncentral t at %.0f%% power at Holm's first-step α = %g (the level of the predicted MDE); t is the observed statistic",
			strings.Join(parts, "; "), spec.Alpha, spec.Alpha, 100*stats.Power, spec.FirstStepAlpha())
		switch {
		case need != "":
			c.Verdict, c.Reason = Inconclusive, need
		case t.Estimate.N < MinSeeds:
			c.Verdict, c.Reason = Inconclusive, fmt.Sprintf("too few seeds: %d paired, need %d", t.Estimate.N, MinSeeds)
		case len(unplateaued) > 0:
			c.Verdict = UntestableHorizon
			c.Reason = fmt.Sprintf("γ = 1's mean stable rank had not plateaued (last 3 diagnostics within %g%%) in %s", 100*spec.PlateauTolerance, strings.Join(unplateaued, ", "))
		case t.Decision == Inconclusive && !math.IsNaN(t.Estimate.MDE) && t.Estimate.MDE > t.Delta:
			c.Reason = fmt.Sprintf("the MDE %.4g is above δ %.4g: the budget could not tell an effect of interest from none", t.Estimate.MDE, t.Delta)
		}
		if t.RestsOnOneSeed {
			c.Reason = strings.TrimPrefix(c.Reason+"; rests on one seed (leave-one-seed-out changes the decision)", "; ")
		}
		return c
	}
	need2 := ""
	if len(widths) < spec.MinWidths || (len(widths) > 0 && float64(widths[len(widths)-1]) < spec.MinSpan*float64(widths[0])) {
		need2 = fmt.Sprintf("the ladder has widths %v; H2 needs ≥ %d widths spanning ≥ %gx", widths, spec.MinWidths, spec.MinSpan)
	}
	c1 := one(1, "H1", "γ = 1 lowers validation loss against γ = 0.5 (with ε = 1e-12 and the gate)", h1, matched,
		unplateaued(spec, []*ArmEvidence{g1}), "")
	var g1s []*ArmEvidence
	for i := range ev.Ladder {
		g1s = append(g1s, &ev.Ladder[i].G1)
	}
	c2 := one(2, "H2", "with both fixes, γ = 1's gain grows with model size", h2, matched2, unplateaued(spec, g1s), need2)
	detail := map[string]any{"slope_per_seed_points": perSeed, "ln_span": lnSpan}
	if ladderEff != nil {
		detail["effective_size_at_ladder_horizon"] = ladderEff
	}
	c2.Detail = detail
	return []Claim{c1, c2}
}

// ladderSpan is ln(N_max/N_min) over the ladder's rungs (lnSpan) and their widths, ascending.
func ladderSpan(ladder []Rung) (float64, []int) {
	var ws []int
	var ns []float64
	for _, r := range ladder {
		ws = append(ws, r.Width)
		ns = append(ns, r.N)
	}
	slices.Sort(ws)
	return lnSpan(ns), ws
}

// sharedArm is the shared-LR arm of γ g, or nil.
func sharedArm(ev *Evidence, g float64) *ArmEvidence {
	for i := range ev.SharedLR {
		if sameGamma(ev.SharedLR[i].Gamma, g) {
			return &ev.SharedLR[i].ArmEvidence
		}
	}
	return nil
}

// unplateaued names the γ = 1 arms (and seeds) whose mean stable rank still moved more than the plan's
// tolerance over its last 3 diagnostics; an arm without the record is not flagged (a plan without
// diagnostics cannot check, and says so through its missing plateau values in claims.json).
func unplateaued(spec *Primaries, arms []*ArmEvidence) []string {
	var out []string
	for _, a := range arms {
		if a == nil {
			continue
		}
		var seeds []int
		for s, v := range a.Plateau {
			if v > spec.PlateauTolerance {
				seeds = append(seeds, s)
			}
		}
		slices.Sort(seeds)
		if len(seeds) > 0 {
			out = append(out, fmt.Sprintf("%s seeds %v", a.Name, seeds))
		}
	}
	return out
}

// describePrimaries is the primaries' statement printed before any number of a reproduction's result.
func describePrimaries(spec *Primaries, ev *Evidence) string {
	lnSpan, _ := ladderSpan(ev.Ladder)
	var b strings.Builder
	n := 0
	if g1 := ev.gammaArm(1); g1 != nil {
		n = len(g1.Seeds)
	}
	spec.Write(&b, n, lnSpan)
	return b.String()
}

// gridEvidence is the full-horizon LR grid's cells from the sweep's results (nil without a grid), with each
// width's N from the ladder.
func gridEvidence(tuned map[string]experiment.Tuned, ladder []Rung) []GridCell {
	cells := map[[3]float64]*GridCell{}
	for _, t := range tuned {
		if t.Grid == nil {
			continue
		}
		for _, tr := range t.Grid.Trials {
			k := [3]float64{float64(t.Width), tr.LR, t.TokensPerParam}
			c := cells[k]
			if c == nil {
				c = &GridCell{Width: t.Width, LR: tr.LR, TokensPerParam: t.TokensPerParam, G05: map[int]float64{}, G1: map[int]float64{}}
				for _, r := range ladder {
					if r.Width == t.Width {
						c.N = r.N
					}
				}
				cells[k] = c
			}
			switch {
			case sameGamma(t.Gamma, 0.5):
				c.G05[int(tr.Seed)] = tr.Loss
			case sameGamma(t.Gamma, 1):
				c.G1[int(tr.Seed)] = tr.Loss
			}
		}
	}
	var out []GridCell
	for _, c := range cells {
		if len(c.G05) > 0 && len(c.G1) > 0 {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b GridCell) int {
		return cmp.Or(cmp.Compare(a.TokensPerParam, b.TokensPerParam), cmp.Compare(a.Width, b.Width), cmp.Compare(a.LR, b.LR))
	})
	return out
}

// gridMatched is H1 at every matched learning rate of the grid at the γ grid's width: the paired gain on the
// tuning seeds, on the LR-selection slice, reported beside the tuned-LR primary (never decisive).
func gridMatched(ev *Evidence, delta float64) []Test {
	var out []Test
	for _, c := range ev.Grid {
		if c.Width != ev.Width || c.TokensPerParam != 0 {
			continue
		}
		d := gain(c.G05, c.G1)
		t := Test{Name: fmt.Sprintf("H1 at the matched LR %g (the LR grid: tuning seeds, LR-selection slice) [reported]", c.LR), Delta: delta,
			Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}}
		t.measure(ClaimAlpha)
		out = append(out, t)
	}
	return out
}

// gridMatchedSlopes is H2 at every matched learning rate the grid ran at two or more ladder widths: the per-seed
// slope of the paired gain against ln N over those widths (the ladder's ends), on the tuning seeds and the
// LR-selection slice, reported.
func gridMatchedSlopes(ev *Evidence, delta float64) []Test {
	// One slope per rate and horizon: a ladder grid at its own horizon (TokensPerParam > 0) is never mixed with
	// the primaries' grid.
	byLR := map[[2]float64][]Rung{}
	var lrs [][2]float64
	for _, c := range ev.Grid {
		if !(c.N > 0) {
			continue
		}
		k := [2]float64{c.TokensPerParam, c.LR}
		if _, ok := byLR[k]; !ok {
			lrs = append(lrs, k)
		}
		byLR[k] = append(byLR[k], Rung{Width: c.Width, N: c.N, G05: ArmEvidence{Seeds: lossesOf(c.G05)}, G1: ArmEvidence{Seeds: lossesOf(c.G1)}})
	}
	slices.SortFunc(lrs, func(a, b [2]float64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	var out []Test
	for _, k := range lrs {
		rungs, lr := byLR[k], k[1]
		if len(rungs) < 2 {
			continue
		}
		slopes, _ := slopesOver(rungs, 2)
		var ws []string
		for _, r := range rungs {
			ws = append(ws, fmt.Sprint(r.Width))
		}
		at := ""
		if k[0] > 0 {
			at = fmt.Sprintf(" at the ladder's %g tokens per parameter", k[0])
		}
		t := Test{Name: fmt.Sprintf("H2 at the matched LR %g over widths %s%s (the LR grid: tuning seeds, LR-selection slice) [reported]", lr, strings.Join(ws, ", "), at),
			Delta: delta, Estimate: stats.Estimate{Seeds: slopes.Seeds, Values: slopes.Values}}
		t.measure(ClaimAlpha)
		out = append(out, t)
	}
	return out
}

// lossesOf turns per-seed losses into an arm's per-seed Loss.
func lossesOf(m map[int]float64) map[int]Loss {
	out := map[int]Loss{}
	for s, v := range m {
		out[s] = Loss{Overall: v}
	}
	return out
}
