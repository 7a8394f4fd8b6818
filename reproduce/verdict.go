package reproduce

import (
	"fmt"
	"math"
	"strings"

	"github.com/smallinit/smallinit/stats"
)

// How a claim is judged (docs/definitions.md §7). Every tested claim is a family of paired comparisons by seed; Holm corrects
// over the family's decisive comparisons; the claim is supported when every one of them goes the claim's way
// beyond the noise, not supported when any goes the other way, and inconclusive otherwise.
const (
	// FamilyAlpha (choice) bounds the chance that a reproduction in a world without any effect decides one or
	// more of its tested claims: each of the TestedClaims is judged at ClaimAlpha = FamilyAlpha/TestedClaims
	// (Bonferroni over claims), and within a claim Holm keeps its comparisons at ClaimAlpha together.
	FamilyAlpha = 0.05
	// TestedClaims are the verdicts decided by a test: claim 1 (validation loss), claim 1 (reasoning probes),
	// claim 1 (reasoning, anchor-function tasks: anchor.go), claims 2, 3 and 4. Claim 5 reads trajectories, not
	// a test.
	TestedClaims = 6
	ClaimAlpha   = FamilyAlpha / TestedClaims
	// MinSeeds is the fewest paired seeds a decisive comparison needs (docs/definitions.md §7: n ≥ 3); below it the claim is
	// "inconclusive: too few seeds".
	MinSeeds = 3
	// MinWidths is the fewest widths claim 2's gain-against-ln N and the size law need (docs/definitions.md §4: ≥ 4 sizes).
	MinWidths = 4
	// ProbeSEs: a probe is judged only when the γ = 0.5 pilot's exact match exceeds chance by this many
	// binomial standard errors (docs/definitions.md §7).
	ProbeSEs = 5
	// DifficultyBins are claim 4's quantiles of reference difficulty (docs/definitions.md §4: default 10). Easy: bins 1-3;
	// medium-to-hard: 4-9; the hardest bin holds the rare and noisy tokens.
	DifficultyBins = 10
)

// Untestable is the verdict of a test that no arm could pass at this budget (the probe pilot stayed within
// ProbeSEs binomial standard errors of chance).
const Untestable = "untestable at this budget"

// Test is one paired comparison a claim reads, its numbers kept whole for claims.json.
type Test struct {
	Name     string         `json:"name"`     // what is compared, signed so that positive is the claim's direction
	Decisive bool           `json:"decisive"` // the verdict reads it (else it is reported beside)
	Estimate stats.Estimate `json:"estimate"` // mean over seeds with its t-interval at level Estimate.Alpha
	PHolm    *float64       `json:"p_holm,omitempty"`
	Result   int            `json:"result"` // +1: the claim's direction beyond the noise after Holm, −1: against, 0: neither
}

// claimTests collects a claim's comparisons. The intervals and minimum detectable effects of all of them are
// stated at ClaimAlpha/m for m decisive comparisons (Bonferroni: the level of Holm's first step; a later step
// can decide a comparison whose interval touches 0).
type claimTests struct {
	tests []Test
}

func (c *claimTests) add(name string, decisive bool, d stats.Diff) {
	c.tests = append(c.tests, Test{Name: name, Decisive: decisive, Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}})
}

// judge fills the estimates and the Holm decisions and returns the verdict with its reason.
func (c *claimTests) judge() (verdict, reason string) {
	m := 0
	for _, t := range c.tests {
		if t.Decisive {
			m++
		}
	}
	alpha := ClaimAlpha / float64(max(m, 1))
	var ps []float64
	var few []string
	for i := range c.tests {
		t := &c.tests[i]
		t.Estimate = stats.Mean(t.Estimate.Values, t.Estimate.Seeds, alpha)
		if t.Decisive {
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
		return Inconclusive, fmt.Sprintf("too few seeds: %s paired seeds, need %d (docs/definitions.md §7)", strings.Join(few, ", "), MinSeeds)
	}
	adj := stats.Holm(ps)
	k, pos, neg := 0, 0, 0
	for i := range c.tests {
		t := &c.tests[i]
		if !t.Decisive {
			continue
		}
		p := adj[k]
		k++
		t.PHolm = &p
		if p <= ClaimAlpha {
			switch {
			case t.Estimate.Mean > 0:
				t.Result = 1
			case t.Estimate.Mean < 0:
				t.Result = -1
			}
		}
		switch t.Result {
		case 1:
			pos++
		case -1:
			neg++
		}
	}
	switch {
	case neg > 0:
		return NotSupported, ""
	case pos == m:
		return Supported, ""
	}
	return Inconclusive, "within the noise: an effect smaller than the MDE could not have been seen"
}

// text writes the tests as evidence: mean, interval, df, n, Holm p and MDE.
func (c *claimTests) text() string {
	var parts []string
	for _, t := range c.tests {
		e := t.Estimate
		s := fmt.Sprintf("%s: %+.4f", t.Name, e.Mean)
		if e.N >= 2 {
			s += fmt.Sprintf(", %.4g%% CI [%+.4f, %+.4f] (t = %.3g on %d df, n = %d seeds), MDE %.4f", 100*(1-e.Alpha), e.Lo, e.Hi, e.T, e.DF, e.N, e.MDE)
		} else {
			s += fmt.Sprintf(" (n = %d seeds: no interval)", e.N)
		}
		if t.PHolm != nil {
			s += fmt.Sprintf(", p_Holm %.3g", *t.PHolm)
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
	ev += fmt.Sprintf(" (paired by seed; intervals at α = %.3g, Holm over the %s at %.3g; MDE at %.0f%% power)",
		c.alpha(), decisiveNames(c.tests), ClaimAlpha, 100*stats.Power)
	return Claim{N: n, Text: text, Verdict: v, Reason: reason, Evidence: ev, Tests: c.tests, Detail: detail}
}

func (c *claimTests) alpha() float64 {
	m := 0
	for _, t := range c.tests {
		if t.Decisive {
			m++
		}
	}
	return ClaimAlpha / float64(max(m, 1))
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

// Judge decides claims 1 (validation loss), 1 (reasoning probes), 2, 3 and 4 from the evidence, in that
// order. bootstrap resamples of seeds give the effective-size intervals of claim 2 (0: none; they are
// reported, not decisive).
func Judge(ev *Evidence, bootstrap int) []Claim {
	return []Claim{judgeLoss(ev), judgeProbes(ev.Probes), judgeFixes(ev, bootstrap), judgeShape(ev), judgeTokens(ev)}
}

func (ev *Evidence) gammaArm(g float64) *Arm {
	for i := range ev.Gamma {
		if ev.Gamma[i].Gamma == g {
			return &ev.Gamma[i].Arm
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
	g05, g1 := ev.gammaArm(0.5), ev.gammaArm(1)
	c.add("γ=1 gain L(γ=0.5) − L(γ=1), overall", true, gain(g05.Overall(), g1.Overall()))
	for _, lang := range languages(g05, g1) {
		c.add("gain on "+lang, false, gain(g05.Language(lang), g1.Language(lang)))
	}
	for _, text := range oodTexts(g05, g1) {
		c.add("gain on out-of-distribution "+text+" (bits per byte)", false, gain(g05.OODText(text), g1.OODText(text)))
	}
	var s05, s1 *Arm
	for i := range ev.SharedLR {
		switch ev.SharedLR[i].Gamma {
		case 0.5:
			s05 = &ev.SharedLR[i].Arm
		case 1:
			s1 = &ev.SharedLR[i].Arm
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
	at := -1
	for i, g := range ev.Gamma {
		if g.Gamma == 1 {
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
	fixed := gain(ev.gammaArm(0.5).Overall(), ev.gammaArm(1).Overall())
	none := gain(ev.NoFix05.Overall(), ev.NoFix1.Overall())
	c.add(fmt.Sprintf("gain with both fixes − gain without, width %d", ev.Width), true, stats.Paired(bySeed(fixed), bySeed(none)))
	slopes, perSeed := ladderSlopes(ev.Ladder)
	c.add("slope of the gain (both fixes) against ln N", true, slopes)
	for _, r := range ev.Ladder {
		c.add(fmt.Sprintf("gain at width %d", r.Width), false, gain(r.G05.Overall(), r.G1.Overall()))
	}
	eff := effectiveSize(ev.Ladder, bootstrap)
	detail := map[string]any{"slope_per_seed_points": perSeed, "effective_size": eff}
	cl := claimOf(2, text, fmt.Sprintf("gain = L(γ=0.5) − L(γ=1), %s", source(ev)), &c, eff.text(), detail)
	if len(ev.Ladder) < MinWidths && cl.Verdict != NotSupported {
		cl.Verdict, cl.Reason = Inconclusive, fmt.Sprintf("the ladder has %d widths, need %d", len(ev.Ladder), MinWidths)
	}
	return cl
}

// ladderSlopes is, per seed that has both arms at ≥ MinWidths widths, the least-squares slope of its paired
// gain against ln N, and the points each slope was fitted to.
func ladderSlopes(ladder []Rung) (stats.Diff, map[int][][2]float64) {
	pts := map[int][][2]float64{}
	for _, r := range ladder {
		d := gain(r.G05.Overall(), r.G1.Overall())
		for i, s := range d.Seeds {
			pts[s] = append(pts[s], [2]float64{math.Log(r.N), d.Values[i]})
		}
	}
	by := stats.BySeed{}
	for s, p := range pts {
		if len(p) < MinWidths {
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
