package reproduce

import (
	"fmt"
	"math"
	"strings"

	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/stats"
)

// How a claim is judged (docs/definitions.md §7). The plan's primaries (primaries.go) are judged as
// their own family; every other claim is a secondary, judged in a separate stated family: each of the
// TestedClaims at ClaimAlpha = FamilyAlpha/TestedClaims (Bonferroni over claims). Within a claim made of several
// decisive comparisons, "supported" needs each of them to pass at ClaimAlpha (intersection-union: no
// correction needed), "contradicted" needs one to go against the claim after Holm over the claim's decisive
// comparisons, and "no meaningful effect" needs each to lie inside ±δ (two one-sided tests at ClaimAlpha).
const (
	// FamilyAlpha (choice) bounds the chance that a reproduction in a world without any effect decides one or
	// more of its secondary claims.
	FamilyAlpha = 0.05
	// TestedClaims are the secondary verdicts decided by a test: claim 1 (reasoning probes), claim 1
	// (reasoning, anchor-function tasks: anchor.go), claim 2 (the fixes' effect on the gain), claims 3 and 4,
	// and claim 1 (validation loss) when a plan has no primaries. Claim 5 reads trajectories, not a test.
	TestedClaims = 6
	ClaimAlpha   = FamilyAlpha / TestedClaims
	// MinSeeds is the fewest paired seeds a decisive comparison needs (n ≥ 3); below it the claim is
	// "inconclusive: too few seeds".
	MinSeeds = 3
	// MinWidths is the fewest widths claim 2's gain-against-ln N and the size law need (≥ 4 sizes).
	MinWidths = 4
	// ProbeSEs: a probe is judged only when the γ = 0.5 pilot's exact match exceeds chance by this many
	// binomial standard errors.
	ProbeSEs = 5
	// DifficultyBins are claim 4's quantiles of reference difficulty (default 10). Easy: bins 1-3;
	// medium-to-hard: 4-9; the hardest bin holds the rare and noisy tokens.
	DifficultyBins = 10
)

// Untestable is the verdict of a test that no arm could pass at this budget (the probe pilot stayed within
// ProbeSEs binomial standard errors of chance).
const Untestable = "untestable at this budget"

// UntestableHorizon is the verdict of a comparison whose γ = 1 runs had not finished condensing: their mean
// stable rank had not plateaued (docs/definitions.md §7, "Horizon before breadth"), so the comparison measures the transient.
const UntestableHorizon = "untestable at this horizon"

// Test is one paired comparison a claim reads, its numbers kept whole for claims.json.
type Test struct {
	Name     string         `json:"name"`     // what is compared, signed so that positive is the claim's direction
	Decisive bool           `json:"decisive"` // the verdict reads it (else it is reported beside)
	Estimate stats.Estimate `json:"estimate"` // mean over seeds with its t-interval at level Estimate.Alpha
	PHolm    *float64       `json:"p_holm,omitempty"`
	// PBonferroni is the p-value Bonferroni-adjusted over a family of secondaries (LanguageFamily; nil outside one).
	PBonferroni *float64 `json:"p_bonferroni,omitempty"`
	// Delta is the smallest effect of interest in the comparison's units (0: none stated, so "no meaningful
	// effect" cannot be reached); PTOST the two one-sided tests' p-value of the mean lying inside ±Delta.
	Delta float64  `json:"delta,omitempty"`
	PTOST *float64 `json:"p_tost,omitempty"`
	// PSignFlip is the sign-flip permutation p-value beside the t-test (exact; it needs no normality, and
	// cannot fall below 2/2^n).
	PSignFlip *float64 `json:"p_sign_flip,omitempty"`
	// PSignFlipHolm is PSignFlip Holm-adjusted over a primary family (nil outside one): a distribution-free
	// backup decides only when it is at most the family's α, which needs 2·2/2^n ≤ α (n ≥ 7 seeds for a pair at
	// α = 0.05).
	PSignFlipHolm *float64 `json:"p_sign_flip_holm,omitempty"`
	// MDEAlpha is the level Estimate.MDE is computed at when it differs from Estimate.Alpha: a primary's
	// reached MDE is at Holm's first-step level, the level its MDE was predicted at before training.
	MDEAlpha float64 `json:"mde_alpha,omitempty"`
	// EffSize states the comparison on the scale of model size (a primary's, from the plan's own γ = 0.5
	// ladder; nil without one).
	EffSize *EffReading `json:"effective_size,omitempty"`
	// EffData states H1 on the scale of training tokens, from the γ = 0.5 runs of the horizon series (effdata.go;
	// nil without a series). Added after the 8 h tier's plan was printed: post hoc.
	EffData *EffData `json:"effective_data,omitempty"`
	// POneSided is a pre-registered one-sided test's t p-value in the claim's direction (nil: two-sided).
	POneSided *float64 `json:"p_one_sided,omitempty"`
	// LeaveOneOut is the mean without each seed in turn (in Estimate.Seeds order); RestsOnOneSeed says that
	// dropping one seed changes the comparison's decision.
	LeaveOneOut    []float64 `json:"leave_one_seed_out_means,omitempty"`
	RestsOnOneSeed bool      `json:"rests_on_one_seed,omitempty"`
	Decision       string    `json:"decision,omitempty"` // Supported, Contradicted, NoMeaningfulEffect or Inconclusive
	Result         int       `json:"result"`             // +1: the claim's direction beyond the noise, −1: against, 0: neither
}

// MarshalJSON writes a number the test could not compute as null (H2's δ without a ladder), which encoding/json
// cannot write.
func (t Test) MarshalJSON() ([]byte, error) { return finitejson.Marshal(t) }

// claimTests collects a claim's comparisons. The intervals and minimum detectable effects of all of them are
// stated at the claim's level alpha (ClaimAlpha for a secondary claim).
type claimTests struct {
	tests []Test
	// delta is the claim's smallest effect of interest (0: none), given to every comparison added after it is
	// set.
	delta float64
}

func (c *claimTests) add(name string, decisive bool, d stats.Diff) {
	c.tests = append(c.tests, Test{Name: name, Decisive: decisive, Delta: c.delta, Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}})
}

// decide is one comparison's decision at level alpha: "no meaningful effect" when its two one-sided tests place
// it inside ±delta (even if it is also beyond 0: an effect smaller than the smallest of interest), "supported"
// when pFor ≤ alpha with a positive mean, "contradicted" when pAgainst ≤ alpha with a negative mean, else
// "inconclusive". pFor and pAgainst are the p-values the rule reads for each direction (a claim's IUT reads
// the raw p for "supported" and Holm's for "contradicted").
func decide(e stats.Estimate, delta, pTOST, pFor, pAgainst, alpha float64) string {
	switch {
	case delta > 0 && pTOST <= alpha:
		return NoMeaningfulEffect
	case pFor <= alpha && e.Mean > 0:
		return Supported
	case pAgainst <= alpha && e.Mean < 0:
		return Contradicted
	}
	return Inconclusive
}

// resultOf is a decision's Test.Result: +1 supported, −1 contradicted, 0 otherwise.
func resultOf(decision string) int {
	switch decision {
	case Supported:
		return 1
	case Contradicted:
		return -1
	}
	return 0
}

// measure fills a comparison's estimate at level alpha, its TOST and sign-flip p-values and its
// leave-one-seed-out means.
func (t *Test) measure(alpha float64) {
	t.Estimate = stats.Mean(t.Estimate.Values, t.Estimate.Seeds, alpha)
	if p := stats.SignFlipP(t.Estimate.Values); !math.IsNaN(p) {
		t.PSignFlip = &p
	}
	if t.Delta > 0 {
		if p := stats.TOST(t.Estimate.Values, t.Delta); !math.IsNaN(p) {
			t.PTOST = &p
		}
	}
	t.LeaveOneOut = nil
	if n := len(t.Estimate.Values); n >= 3 {
		for i := range t.Estimate.Values {
			rest := append(append([]float64{}, t.Estimate.Values[:i]...), t.Estimate.Values[i+1:]...)
			t.LeaveOneOut = append(t.LeaveOneOut, stats.Mean(rest, nil, alpha).Mean)
		}
	}
}

// fragile reports whether dropping any one seed changes the decision d of a comparison judged at alpha on raw
// p-values (the leave-one-seed-out check of a verdict resting on one seed; an "inconclusive" that one seed
// makes counts too: without it the comparison would decide).
func (t *Test) fragile(d string, alpha float64) bool {
	vs := t.Estimate.Values
	if len(vs) < 3 {
		return false
	}
	for i := range vs {
		rest := append(append([]float64{}, vs[:i]...), vs[i+1:]...)
		e := stats.Mean(rest, nil, alpha)
		pt := math.NaN()
		if t.Delta > 0 {
			pt = stats.TOST(rest, t.Delta)
		}
		if decide(e, t.Delta, pt, e.P, e.P, alpha) != d {
			return true
		}
	}
	return false
}

func pOr1(p *float64) float64 {
	if p == nil || math.IsNaN(*p) {
		return 1
	}
	return *p
}

// judge fills the estimates and decisions and returns the verdict with its reason (the rules above).
func (c *claimTests) judge() (verdict, reason string) {
	alpha := ClaimAlpha
	m := 0
	var ps []float64
	var few []string
	for i := range c.tests {
		t := &c.tests[i]
		t.measure(alpha)
		if t.Decisive {
			m++
			ps = append(ps, t.Estimate.P)
			if t.Estimate.N < MinSeeds {
				few = append(few, fmt.Sprintf("%s has %d", t.Name, t.Estimate.N))
			}
		}
	}
	if m == 0 {
		return Inconclusive, "nothing to compare"
	}
	if len(few) > 0 {
		return Inconclusive, fmt.Sprintf("too few seeds: %s paired seeds, need %d", strings.Join(few, ", "), MinSeeds)
	}
	adj := stats.Holm(ps)
	k := 0
	count := map[string]int{}
	var fragile []string
	for i := range c.tests {
		t := &c.tests[i]
		if !t.Decisive {
			continue
		}
		p := adj[k]
		k++
		t.PHolm = &p
		t.Decision = decide(t.Estimate, t.Delta, pOr1(t.PTOST), t.Estimate.P, p, alpha)
		switch t.Decision {
		case Supported:
			t.Result = 1
		case Contradicted:
			t.Result = -1
		}
		count[t.Decision]++
		if t.RestsOnOneSeed = t.fragile(t.Decision, alpha); t.RestsOnOneSeed {
			fragile = append(fragile, t.Name)
		}
	}
	note := ""
	if len(fragile) > 0 {
		note = "; rests on one seed (leave-one-seed-out changes the decision of " + strings.Join(fragile, ", ") + ")"
	}
	switch {
	case count[Contradicted] > 0:
		return Contradicted, strings.TrimPrefix(note, "; ")
	case count[Supported] == m:
		return Supported, strings.TrimPrefix(note, "; ")
	case count[NoMeaningfulEffect] == m:
		return NoMeaningfulEffect, "every decisive comparison lies inside ±δ" + note
	}
	return Inconclusive, "within the noise: an effect smaller than the MDE could not have been seen" + note
}

// text writes the tests as evidence: mean, interval, df, n, Holm p and MDE.
func (c *claimTests) text() string {
	var parts []string
	for _, t := range c.tests {
		e := t.Estimate
		s := fmt.Sprintf("%s: %+.4f", t.Name, e.Mean)
		if e.N == 2 && len(e.Seeds) == 2 {
			// Two seeds give a 1-df interval that says nothing: the values themselves.
			s += fmt.Sprintf(" (seed %d: %+.4f, seed %d: %+.4f; n = 2: no interval)", e.Seeds[0], e.Values[0], e.Seeds[1], e.Values[1])
		} else if e.N >= 2 {
			s += fmt.Sprintf(", %.4g%% CI [%+.4f, %+.4f] (t = %.3g on %d df, n = %d seeds), MDE %.4f", 100*(1-e.Alpha), e.Lo, e.Hi, e.TStat, e.DF, e.N, e.MDE)
			if t.MDEAlpha > 0 {
				s += fmt.Sprintf(" (at α = %.3g)", t.MDEAlpha)
			}
		} else if e.N == 1 {
			s += " (1 seed: no interval)"
		} else { // no paired seed: there is no estimate to print (never "+NaN")
			s = fmt.Sprintf("%s: not measured (no paired seeds)", t.Name)
		}
		if t.PHolm != nil {
			s += fmt.Sprintf(", p_Holm %.3g", *t.PHolm)
		}
		if t.PBonferroni != nil {
			s += fmt.Sprintf(", p_Bonferroni %.3g", *t.PBonferroni)
		}
		if t.PSignFlip != nil {
			s += fmt.Sprintf(", sign-flip p %.3g", *t.PSignFlip)
			if t.PSignFlipHolm != nil {
				s += fmt.Sprintf(" (Holm %.3g)", *t.PSignFlipHolm)
			}
		}
		if r := t.EffSize; r != nil && r.Gain != nil {
			s += fmt.Sprintf(", effective size %+.0f%%", 100**r.Gain)
			if r.CI != nil {
				s += fmt.Sprintf(" [%+.0f%%, %+.0f%%]", 100*r.CI.Lo, 100*r.CI.Hi)
			}
			s += fmt.Sprintf(" of the γ = 0.5 model at N = %.0f", r.N)
			if !r.Inside {
				s += " (extrapolated)"
			}
		}
		if t.EffData != nil {
			s += t.EffData.text()
		}
		if t.Delta > 0 {
			s += fmt.Sprintf(", δ %.4g", t.Delta)
			if t.PTOST != nil {
				s += fmt.Sprintf(" (TOST p %.3g)", *t.PTOST)
			}
		}
		if t.RestsOnOneSeed {
			s += " [rests on one seed]"
		}
		if !t.Decisive {
			s += " [reported]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// claimOf builds the claim from its tests, judged, with a header sentence and extra evidence.
func claimOf(n int, text, header string, c *claimTests, extra string, detail any) Claim {
	v, reason := c.judge()
	ev := header
	if t := c.text(); t != "" {
		ev += ": " + t
	}
	if extra != "" {
		ev += "; " + extra
	}
	ev += fmt.Sprintf(" (secondary; paired by seed; intervals at α = %.3g; supported when each of the %s passes at that level, contradicted after Holm over them; MDE from the noncentral t at %.0f%% power)",
		ClaimAlpha, decisiveNames(c.tests), 100*stats.Power)
	return Claim{N: n, Text: text, Verdict: v, Reason: reason, Evidence: ev, Tests: c.tests, Detail: detail}
}

func decisiveNames(ts []Test) string {
	n := 0
	for _, t := range ts {
		if t.Decisive {
			n++
		}
	}
	if n == 1 {
		return "1 decisive comparison"
	}
	return fmt.Sprintf("%d decisive comparisons", n)
}

// gain is the paired γ = 1 gain over γ = 0.5, L(γ=0.5) − L(γ=1) per seed (positive: γ = 1 lower).
func gain(g05, g1 stats.BySeed) stats.Diff { return stats.Paired(g05, g1) }

// bySeed turns a Diff back into per-seed values (to difference two differences seed by seed).
func bySeed(d stats.Diff) stats.BySeed {
	out := stats.BySeed{}
	for i, s := range d.Seeds {
		out[s] = d.Values[i]
	}
	return out
}

// Judge decides the plan's primaries H1 and H2 (primaries.go) when ev.Primaries is set, else claim 1
// (validation loss) as a secondary; then claims 1 (reasoning probes), 2, 3 and 4, in that order. bootstrap
// resamples of seeds give the effective-size intervals of claim 2 (0: none; they are reported, not decisive).
func Judge(ev *Evidence, bootstrap int) []Claim {
	var cs []Claim
	if ev.Primaries != nil {
		cs = judgePrimaries(ev, bootstrap)
	} else {
		cs = []Claim{judgeLoss(ev)}
	}
	return append(cs, judgeProbes(ev.Probes), judgeFixes(ev, bootstrap), judgeShape(ev), judgeTokens(ev))
}

func (ev *Evidence) gammaArm(g float64) *ArmEvidence {
	for i := range ev.Gamma {
		if sameGamma(ev.Gamma[i].Gamma, g) {
			return &ev.Gamma[i].ArmEvidence
		}
	}
	return nil
}

func source(ev *Evidence) string {
	if ev.Source == "" {
		return "losses of unstated origin"
	}
	return ev.Source
}

// judgeLoss is claim 1: γ = 1 lowers the validation loss against γ = 0.5 with both fixes, each at its own
// learning rate. Decisive: the paired overall gain. Reported: the gain per language and at the shared LR.
func judgeLoss(ev *Evidence) Claim {
	var c claimTests
	c.delta = ev.delta()
	g05, g1 := ev.gammaArm(0.5), ev.gammaArm(1)
	c.add("γ=1 gain L(γ=0.5) − L(γ=1), overall", true, gain(g05.Overall(), g1.Overall()))
	for _, lang := range languages(g05, g1) {
		c.add("gain on "+lang, false, gain(g05.Language(lang), g1.Language(lang)))
	}
	for _, text := range oodTexts(g05, g1) {
		c.add("gain on out-of-distribution "+text+" (bits per byte)", false, gain(g05.OODText(text), g1.OODText(text)))
	}
	var s05, s1 *ArmEvidence
	for i := range ev.SharedLR {
		switch ev.SharedLR[i].Gamma {
		case 0.5:
			s05 = &ev.SharedLR[i].ArmEvidence
		case 1:
			s1 = &ev.SharedLR[i].ArmEvidence
		}
	}
	if s05 != nil && s1 != nil {
		c.add(fmt.Sprintf("gain at the shared LR %g", s1.LR), false, gain(s05.Overall(), s1.Overall()))
	}
	lr := "LR not recorded"
	if g05 != nil && g1 != nil && g05.LR > 0 && g1.LR > 0 {
		lr = fmt.Sprintf("LR γ=0.5 %g, γ=1 %g", g05.LR, g1.LR)
	}
	return claimOf(1, "γ = 1 lowers validation loss against γ = 0.5 (with ε = 1e-12 and the gate)",
		fmt.Sprintf("width %d, both fixes, %s, %s", ev.Width, lr, source(ev)), &c, "", nil)
}

// judgeShape is claim 3: loss is best at γ = 1 and worse on both sides. Decisive: γ = 1 against each neighbour
// on the γ grid, L(γ_k) − L(γ=1) paired by seed (positive: γ = 1 lower), Holm over the two; the other γ are
// reported. Not a best-of-grid: picking the lowest of five arms would favour whichever arm's seeds were lucky.
func judgeShape(ev *Evidence) Claim {
	var c claimTests
	c.delta = ev.delta()
	at := -1
	for i, g := range ev.Gamma {
		if sameGamma(g.Gamma, 1) {
			at = i
		}
	}
	text := "γ = 1 is critical: loss is best at γ = 1 and worse past it"
	if at < 0 || at == 0 || at == len(ev.Gamma)-1 {
		return Claim{N: 3, Text: text, Verdict: Inconclusive, Reason: "the γ grid needs γ = 1 with a neighbour on each side",
			Evidence: fmt.Sprintf("%d γ arms", len(ev.Gamma))}
	}
	one := ev.Gamma[at].Overall()
	for i, g := range ev.Gamma {
		if i == at {
			continue
		}
		c.add(fmt.Sprintf("L(γ=%g) − L(γ=1)", g.Gamma), i == at-1 || i == at+1, stats.Paired(g.Overall(), one))
	}
	return claimOf(3, text, fmt.Sprintf("γ grid at width %d, both fixes, each γ at its own LR, %s", ev.Width, source(ev)), &c, "", nil)
}

// judgeFixes is claim 2: the fixes release γ = 1's gain, more as models grow, and with them γ = 1 is worth
// more model size. Decisive: (a) the fixes' effect on the gain at Width, [gain with both fixes] − [gain
// without], paired by seed; (b) the slope of the paired gain (both fixes) against ln N over the ladder, one
// least-squares slope per seed over ≥ MinWidths widths, its t-interval over seeds. Reported: the gain at each
// width and the effective model size from L(N) of γ = 0.5 (effsize.go).
func judgeFixes(ev *Evidence, bootstrap int) Claim {
	text := "ε = 1e-5 and the attention sink hold γ = 1 back, more as models grow; with both fixes γ = 1 is worth more model size"
	var c claimTests
	c.delta = ev.delta()
	fixed := gain(ev.gammaArm(0.5).Overall(), ev.gammaArm(1).Overall())
	none := gain(ev.NoFix05.Overall(), ev.NoFix1.Overall())
	c.add(fmt.Sprintf("gain with both fixes − gain without, width %d", ev.Width), true, stats.Paired(bySeed(fixed), bySeed(none)))
	slopes, perSeed := ladderSlopes(ev.Ladder)
	c.add("slope of the gain (both fixes) against ln N", ev.Primaries == nil, slopes) // with primaries: H2
	for _, r := range ev.Ladder {
		c.add(fmt.Sprintf("gain at width %d", r.Width), false, gain(r.G05.Overall(), r.G1.Overall()))
	}
	eff := effectiveSize(ev.Ladder, bootstrap)
	detail := map[string]any{"slope_per_seed_points": perSeed, "effective_size": eff}
	cl := claimOf(2, text, fmt.Sprintf("gain = L(γ=0.5) − L(γ=1), %s", source(ev)), &c, eff.text(), detail)
	if ev.Primaries == nil && len(ev.Ladder) < MinWidths && cl.Verdict != Contradicted {
		cl.Verdict, cl.Reason = Inconclusive, fmt.Sprintf("the ladder has %d widths, need %d", len(ev.Ladder), MinWidths)
	}
	return cl
}

// ladderSlopes is, per seed that has both arms at ≥ MinWidths widths, the least-squares slope of its paired
// gain against ln N, and the points each slope was fitted to.
func ladderSlopes(ladder []Rung) (stats.Diff, map[int][][2]float64) {
	return slopesOver(ladder, MinWidths)
}

// slopesOver is ladderSlopes with the fewest widths a seed needs (minWidths ≥ 2): the reported matched-rate rows
// of the LR grid have only the ladder's two ends.
func slopesOver(ladder []Rung, minWidths int) (stats.Diff, map[int][][2]float64) {
	pts := map[int][][2]float64{}
	for _, r := range ladder {
		d := gain(r.G05.Overall(), r.G1.Overall())
		for i, s := range d.Seeds {
			pts[s] = append(pts[s], [2]float64{math.Log(r.N), d.Values[i]})
		}
	}
	by := stats.BySeed{}
	for s, p := range pts {
		if len(p) < minWidths {
			continue
		}
		x, y := make([]float64, len(p)), make([]float64, len(p))
		for i, q := range p {
			x[i], y[i] = q[0], q[1]
		}
		by[s] = stats.Slope(x, y)
	}
	// Paired against zero gives the sorted seeds and drops a NaN slope (one width repeated).
	zero := stats.BySeed{}
	for s := range by {
		zero[s] = 0
	}
	return stats.Paired(by, zero), pts
}

// delta is the smallest effect of interest in nats of the secondary loss comparisons: the primaries' δ, or 0
// (none stated) for a plan without primaries.
func (ev *Evidence) delta() float64 {
	if ev.Primaries == nil {
		return 0
	}
	return ev.Primaries.DeltaH1()
}
