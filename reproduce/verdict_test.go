package reproduce

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/probes/probescore"
)

// world is a stand-in trainer for the verdicts (the proof that each claim can reach each verdict): it returns every arm's final loss from a
// known law plus seed noise, and per-token losses for claim 4, so that the right verdict of each claim is
// known.
//
// Losses: γ = 0.5 with both fixes follows L(N) = E + A·N^(−α); γ = 1 is lower by gain(N) = gain128 +
// slope·ln(N/N_128); at width 128 the γ grid's γ has loss L(0.5) − gain128·bump[γ]; without the fixes γ = 1's
// gain is gain128 − release. Every run adds a seed effect common to all arms of that seed (the same data
// order: seedSD) and its own noise (runSD): paired differences cancel the first.
type world struct {
	name           string
	E, A, alpha    float64
	gain128, slope float64
	release        float64
	bump           map[float64]float64
	seedSD, runSD  float64
	tokenAmp       float64 // claim 4: the loss reduction at the peak of a hump over medium-to-hard tokens
	tokenNoiseA    float64 // per-token noise of A (γ = 1) and B (γ = 0.5)
	tokenNoiseB    float64
	probeGain      float64 // claim 1b: reasoning gold-loss drop of γ = 1 (memorisation drops by a third of it)
	pilotAcc       float64
	seeds, tokens  int
	widths         []int
	negativeE      bool // the γ = 0.5 ladder follows a law whose E is below 0
}

var gammaGrid = []float64{0.5, 0.75, 1, 1.25, 1.5}

// nonEmbedding is a 4-block model's non-embedding parameter count at width d (12·d² per block).
func nonEmbedding(d int) float64 { return 4 * 12 * float64(d) * float64(d) }

func helps() world {
	return world{name: "γ = 1 helps, more with N", E: 1.5, A: 30, alpha: 0.25, gain128: 0.1, slope: 0.04, release: 0.08,
		bump: map[float64]float64{0.5: 0, 0.75: 0.5, 1: 1, 1.25: 0.5, 1.5: -0.5}, seedSD: 0.03, runSD: 0.002,
		tokenAmp: 0.3, tokenNoiseA: 0.1, tokenNoiseB: 0.1, probeGain: 0.1, pilotAcc: 0.4, seeds: 3, tokens: 4000, widths: []int{64, 128, 256, 512}}
}

func hurts() world {
	w := helps()
	w.name, w.gain128, w.slope, w.release, w.tokenAmp, w.probeGain = "γ = 1 hurts, more with N", -0.1, -0.04, -0.08, -0.3, -0.1
	return w
}

// null has no effect of γ anywhere; A is more confident than B token by token (smaller per-token noise), which
// makes binning by the compared models' own mean loss find a shape that is not there.
func null() world {
	w := helps()
	w.name, w.gain128, w.slope, w.release, w.tokenAmp, w.probeGain = "no effect", 0, 0, 0, 0, 0
	w.bump = map[float64]float64{0.5: 0, 0.75: 0, 1: 0, 1.25: 0, 1.5: 0}
	w.tokenNoiseA, w.tokenNoiseB = 0.05, 0.5
	return w
}

// simulate runs one reproduction of the world: every arm on every seed, at each arm's width.
func (w world) simulate(rng *rand.Rand) *Evidence {
	n128 := nonEmbedding(128)
	law := func(N float64) float64 {
		if w.negativeE {
			return -1 + 60*math.Pow(N, -0.2)
		}
		return w.E + w.A*math.Pow(N, -w.alpha)
	}
	gainAt := func(N float64) float64 { return w.gain128 + w.slope*math.Log(N/n128) }
	seedFx := make([]float64, w.seeds)
	for s := range seedFx {
		seedFx[s] = w.seedSD * rng.NormFloat64()
	}
	arm := func(name string, mean float64) ArmEvidence {
		a := ArmEvidence{Name: name, LR: 2e-3, Seeds: map[int]Loss{}}
		for s := range w.seeds {
			v := mean + seedFx[s] + w.runSD*rng.NormFloat64()
			a.Seeds[s] = Loss{Overall: v, ByLanguage: map[string]float64{"en": v - 0.1, "zh": v + 0.1}}
		}
		return a
	}
	ev := &Evidence{Source: "synthetic world " + w.name, Width: 128, TokenRef: "the world's true difficulty plus noise"}
	l05 := law(n128)
	for _, g := range gammaGrid {
		ev.Gamma = append(ev.Gamma, GammaArm{Gamma: g, ArmEvidence: arm("γ grid", l05-w.gain128*w.bump[g])})
	}
	nf05 := arm("no fix γ=0.5", l05+0.05)
	nf1 := arm("no fix γ=1", l05+0.05-(w.gain128-w.release))
	ev.NoFix05, ev.NoFix1 = &nf05, &nf1
	for _, d := range w.widths {
		N := nonEmbedding(d)
		r := Rung{Width: d, N: N, G05: arm("ladder γ=0.5", law(N)), G1: arm("ladder γ=1", law(N)-gainAt(N))}
		if d == 128 { // the γ grid's runs are the ladder's width-128 point, as in the plan
			r.G05, r.G1 = *ev.gammaArm(0.5), *ev.gammaArm(1)
		}
		ev.Ladder = append(ev.Ladder, r)
	}
	// Claim 4: token i has true difficulty d_i (exponential, mean 3 nats); the reference sees it with its own
	// noise; B's loss is d_i plus B's noise, A's is B's expectation minus a hump of gain over the difficulty
	// quantile u (peak at u = 0.6, near 0 for the easiest 30% and the hardest 10%) plus A's noise.
	for s := range w.seeds {
		t := TokenLosses{Seed: s}
		amp := w.tokenAmp * (1 + 0.03*rng.NormFloat64())
		for range w.tokens {
			u := rng.Float64()
			d := -3 * math.Log(1-u)
			hump := amp * math.Exp(-math.Pow((u-0.6)/0.15, 2))
			t.Ref = append(t.Ref, float32(d+0.3*rng.NormFloat64()))
			t.B = append(t.B, float32(d+w.tokenNoiseB*rng.NormFloat64()))
			t.A = append(t.A, float32(d-hump+w.tokenNoiseA*rng.NormFloat64()))
		}
		ev.Tokens = append(ev.Tokens, t)
	}
	// Claim 1b: probe scores per seed.
	pr := &ProbeEvidence{Pilot: &probescore.Scores{ReasoningAcc: w.pilotAcc, ReasoningChance: 0.1, ReasoningCount: 100, ReasoningLoss: 2},
		G05: map[int]*probescore.Scores{}, G1: map[int]*probescore.Scores{}}
	for s := range w.seeds {
		fx := w.seedSD * rng.NormFloat64()
		pr.G05[s] = &probescore.Scores{ReasoningLoss: 2 + fx + w.runSD*rng.NormFloat64(), MemorisationLoss: 1 + fx + w.runSD*rng.NormFloat64()}
		pr.G1[s] = &probescore.Scores{ReasoningLoss: 2 + fx - w.probeGain + w.runSD*rng.NormFloat64(),
			MemorisationLoss: 1 + fx - w.probeGain/3 + w.runSD*rng.NormFloat64()}
	}
	ev.Probes = pr
	return ev
}

// rates judges reps simulated reproductions of w and returns, per claim index of Judge's output, the share of
// each verdict, and the share of reproductions in which every claim was inconclusive.
func rates(w world, reps int, seed uint64) (perClaim []map[string]float64, allInconclusive float64) {
	rng := rand.New(rand.NewPCG(seed, 15))
	perClaim = make([]map[string]float64, 5)
	for i := range perClaim {
		perClaim[i] = map[string]float64{}
	}
	for range reps {
		cs := Judge(w.simulate(rng), 0)
		all := true
		for i, c := range cs {
			perClaim[i][c.Verdict] += 1 / float64(reps)
			all = all && c.Verdict == Inconclusive
		}
		if all {
			allInconclusive += 1 / float64(reps)
		}
	}
	return perClaim, allInconclusive
}

var claimNames = []string{"claim 1 (loss)", "claim 1 (probes)", "claim 2", "claim 3", "claim 4"}

// TestSyntheticWorldsGiveTheKnownVerdicts is the statistics' proof on worlds with known answers, 200
// simulated reproductions each with 3 seeds and 4 widths: where γ = 1 helps and its help grows with N, claims
// 1-4 are supported in at least 90% of them; where it hurts, not supported in at least 90%; with no effect at
// all, each claim is inconclusive in at least 95% of them (its false-positive rate, logged; by design at most
// ClaimAlpha = 5%/6 ≈ 0.83%). The whole reproduction's false-positive rate (any claim decided) is by design at most
// FamilyAlpha = 5%; it is logged and checked against that bound with two binomial standard errors of 200
// reproductions, 5% + 2·√(0.05·0.95/200) = 8.1%.
func TestSyntheticWorldsGiveTheKnownVerdicts(t *testing.T) {
	const reps = 200
	for _, tc := range []struct {
		w    world
		want string
		min  float64
	}{
		{helps(), Supported, 0.9},
		{hurts(), Contradicted, 0.9},
		{null(), Inconclusive, 0.95},
	} {
		per, all := rates(tc.w, reps, 1)
		for i, r := range per {
			t.Logf("%s, %s: supported %.3f, not supported %.3f, inconclusive %.3f", tc.w.name, claimNames[i], r[Supported], r[Contradicted], r[Inconclusive])
			if r[tc.want] < tc.min {
				t.Errorf("%s, %s: %s in %.3f of %d reproductions, want at least %.2f", tc.w.name, claimNames[i], tc.want, r[tc.want], reps, tc.min)
			}
		}
		if tc.want == Inconclusive {
			t.Logf("%s: every claim inconclusive in %.3f of %d reproductions (false-positive rate of the reproduction %.3f)", tc.w.name, all, reps, 1-all)
			if bound := FamilyAlpha + 2*math.Sqrt(FamilyAlpha*(1-FamilyAlpha)/reps); 1-all > bound {
				t.Errorf("%s: some claim decided in %.3f of %d reproductions, above FamilyAlpha %.2f beyond 2 binomial SE (%.3f)", tc.w.name, 1-all, reps, FamilyAlpha, bound)
			}
		}
	}
}

// TestConfoundedBinningFindsAShapeThatIsNotThere: in the no-effect world (6 seeds of 20,000 tokens here) A is
// merely more confident than B;
// binning by the compared models' own mean loss puts B's unlucky tokens in the hard bins, so A "wins" them
// (a contrast whose interval excludes 0), while binning by the reference finds nothing (docs/definitions.md §4).
func TestConfoundedBinningFindsAShapeThatIsNotThere(t *testing.T) {
	w := null()
	w.seeds, w.tokens = 6, 20000
	ev := w.simulate(rand.New(rand.NewPCG(3, 4)))
	if c := judgeTokens(ev); c.Verdict != Inconclusive {
		t.Fatalf("reference binning: %s, want inconclusive: %s", c.Verdict, c.Evidence)
	}
	confounded := *ev
	confounded.Tokens = nil
	for _, tl := range ev.Tokens {
		own := TokenLosses{Seed: tl.Seed, A: tl.A, B: tl.B}
		for i := range tl.A {
			own.Ref = append(own.Ref, (tl.A[i]+tl.B[i])/2)
		}
		confounded.Tokens = append(confounded.Tokens, own)
	}
	c := judgeTokens(&confounded)
	if e := c.Tests[0].Estimate; !(e.Lo > 0) {
		t.Errorf("own-mean binning: contrast %+.3f [%+.3f, %+.3f], want the confound's spurious contrast beyond the noise", e.Mean, e.Lo, e.Hi)
	}
	t.Logf("bins 4-9 minus 1-3 with own-mean binning %+.3f (verdict %s); with the reference %+.4f", c.Tests[0].Estimate.Mean, c.Verdict, judgeTokens(ev).Tests[0].Estimate.Mean)
}

// TestTooFewSeedsIsSaid: with 2 seeds even a clear effect is "inconclusive: too few seeds", with the
// estimate still reported.
func TestTooFewSeedsIsSaid(t *testing.T) {
	w := helps()
	w.seeds = 2
	for _, c := range Judge(w.simulate(rand.New(rand.NewPCG(5, 6))), 0) {
		if c.Verdict != Inconclusive || !strings.Contains(c.Reason, "too few seeds") {
			t.Errorf("claim %d with 2 seeds: %s (%s), want inconclusive: too few seeds", c.N, c.Verdict, c.Reason)
		}
	}
}

// TestUntestableProbes: a pilot at chance + 3 SE leaves the probes untestable, with the pilot's figures.
func TestUntestableProbes(t *testing.T) {
	w := helps()
	w.pilotAcc = 0.1 + 3*0.03 // chance 0.1 over 100 prompts: SE 0.03, threshold 0.25
	c := judgeProbes(w.simulate(rand.New(rand.NewPCG(7, 8))).Probes)
	if c.Verdict != Untestable || !strings.Contains(c.Evidence, "exact match 0.190 against chance 0.100 (100 prompts)") || !strings.Contains(c.Evidence, "0.250") {
		t.Errorf("%s: %s", c.Verdict, c.Evidence)
	}
	if th := PilotThreshold(0.25, 400); math.Abs(th-(0.25+5*math.Sqrt(0.25*0.75/400))) > 1e-15 {
		t.Errorf("threshold %g", th)
	}
}

// TestEffectiveSizeInsideTheFittedRange: in the helps world the size law is fitted with E ≥ 0, every width's
// γ = 1 loss is read as a larger N_eff, and a reading beyond the largest fitted size is called an
// extrapolation; a ladder whose law has E < 0 is refused and said to be undetermined.
func TestEffectiveSizeInsideTheFittedRange(t *testing.T) {
	ev := helps().simulate(rand.New(rand.NewPCG(9, 10)))
	es := effectiveSize(ev.Ladder, 200)
	if es.Law == nil || es.Law.E < 0 {
		t.Fatalf("law %+v, %s", es.Law, es.Error)
	}
	for _, r := range es.Points {
		if r.Gain == nil || !(*r.Gain > 0) || r.CI == nil {
			t.Errorf("width %d: %+v, want a positive gain with an interval", r.Width, r)
			continue
		}
		if r.Inside != (*r.Eff <= nonEmbedding(512) && *r.Eff >= nonEmbedding(64)) || (!r.Inside && !strings.Contains(r.Note, "extrapolation")) {
			t.Errorf("width %d: N_eff %.3g inside %v, note %q", r.Width, *r.Eff, r.Inside, r.Note)
		}
	}
	if last := es.Points[len(es.Points)-1]; last.Inside {
		t.Errorf("the largest width's γ = 1 is better than any fitted γ = 0.5 size, so its N_eff is an extrapolation: %+v", last)
	}
	w := helps()
	w.negativeE = true
	neg := w.simulate(rand.New(rand.NewPCG(9, 10)))
	es = effectiveSize(neg.Ladder, 0)
	if es.Law != nil || !strings.Contains(es.Error, "E < 0") {
		t.Errorf("E < 0 ladder: law %+v, error %q; want refused", es.Law, es.Error)
	}
	c := judgeFixes(neg, 0)
	if !strings.Contains(c.Evidence, "effective model size undetermined") {
		t.Errorf("claim 2 with an E < 0 ladder: %s", c.Evidence)
	}
}

// TestClaimsJSONCarriesTheNumbers: a judged claim written as JSON carries each comparison's per-seed values,
// df, interval, Holm p and MDE, and claim 4 its bins; non-finite numbers (one seed's missing noise, a
// diverged run's loss among the inputs) are null, so encoding succeeds.
func TestClaimsJSONCarriesTheNumbers(t *testing.T) {
	cs := Judge(helps().simulate(rand.New(rand.NewPCG(11, 12))), 50)
	w := helps()
	w.seeds = 1
	one := w.simulate(rand.New(rand.NewPCG(13, 14)))
	cs = append(cs, Judge(one, 0)...)
	one.Gamma[0].Seeds[0] = Loss{Overall: math.NaN()} // a diverged run
	b, err := json.Marshal(struct {
		Claims []Claim
		Inputs *Evidence
	}{cs, one})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"values":[`, `"df":2`, `"mde":`, `"p_holm":`, `"bins":[`, `"effective_size":`, `"se":null`, `"reference":`, `"overall":null`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("claims JSON lacks %s", key)
		}
	}
}
