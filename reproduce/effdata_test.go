package reproduce

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/experiment"
)

// lossArm is an ArmEvidence with the given overall losses for seeds 0, 1, ...
func lossArm(losses ...float64) ArmEvidence {
	a := ArmEvidence{Seeds: map[int]Loss{}}
	for s, l := range losses {
		a.Seeds[s] = Loss{Overall: l}
	}
	return a
}

// TestEffectiveDataRecoversKnownHorizon builds worlds whose γ = 0.5 loss is exactly linear in ln D and whose γ = 1
// loss equals γ = 0.5's at a known horizon: the reading must return that horizon, on the line and past it, with
// seed noise that averages out.
func TestEffectiveDataRecoversKnownHorizon(t *testing.T) {
	line := func(h float64) float64 { return 5.2 - 0.24*math.Log(h) } // 0.166 nats per doubling
	noise := []float64{-0.01, 0.004, 0.006}                           // mean zero
	for _, tc := range []struct {
		name   string
		truth  float64 // γ = 1 matches γ = 0.5 at this many tokens per parameter
		inside bool
	}{
		{"γ = 1 behind, on the line", 14, true},
		{"level", 20, true},
		{"γ = 1 ahead, the line extended", 23.5, false},
		{"γ = 1 far behind, below the series", 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := func(h float64) ArmEvidence {
				v := make([]float64, len(noise))
				for i, e := range noise {
					v[i] = h + e
				}
				return lossArm(v...)
			}
			hs := []HorizonArms{
				{Horizon: 5, G05: at(line(5)), G1: at(line(5) + 0.1)},
				{Horizon: 10, G05: at(line(10)), G1: at(line(10) + 0.1)},
			}
			g05, g1 := at(line(20)), at(line(tc.truth))
			ed := effectiveData(hs, &g05, &g1, 20, 400)
			if ed == nil || ed.Eff == nil {
				t.Fatalf("no reading: %+v", ed)
			}
			if ed.From != 10 || ed.To != 20 {
				t.Errorf("line through %g and %g, want the two longest horizons 10 and 20", ed.From, ed.To)
			}
			if math.Abs(*ed.Eff-tc.truth) > 1e-9*tc.truth {
				t.Errorf("effective horizon %.9g, want %g", *ed.Eff, tc.truth)
			}
			if want := tc.truth/20 - 1; math.Abs(*ed.Gain-want) > 1e-9 {
				t.Errorf("gain %.9g, want %g", *ed.Gain, want)
			}
			if ed.Inside != tc.inside {
				t.Errorf("inside = %v, want %v (note %q)", ed.Inside, tc.inside, ed.Note)
			}
			if ed.CI == nil || !(ed.CI.Lo <= *ed.Gain && *ed.Gain <= ed.CI.Hi) || !(ed.CI.Hi > ed.CI.Lo) {
				t.Errorf("bootstrap interval %+v does not bracket the reading %g with seed noise", ed.CI, *ed.Gain)
			}
			if txt := ed.text(); !strings.Contains(txt, "post hoc") || (!tc.inside) != strings.Contains(txt, "extended") {
				t.Errorf("text %q: must say post hoc, and extended exactly when past the series", txt)
			}
		})
	}
}

// TestEffectiveDataUnderstatesAConvexLaw: on a law E + B·D^(−β) (convex in ln D) a reading at or past the shorter
// horizon lies between zero and the law's own effective horizon, whichever γ leads; below it the line overstates
// the deficit (docs/definitions.md §7).
func TestEffectiveDataUnderstatesAConvexLaw(t *testing.T) {
	law := func(h float64) float64 { return 3.1 + 6.0*math.Pow(h, -0.45) }
	for _, truth := range []float64{6, 8, 10, 12, 17, 22, 30, 45} {
		hs := []HorizonArms{{Horizon: 10, G05: lossArm(law(10)), G1: lossArm(law(10))}}
		g05, g1 := lossArm(law(20)), lossArm(law(truth))
		ed := effectiveData(hs, &g05, &g1, 20, 0)
		if ed == nil || ed.Gain == nil {
			t.Fatalf("truth %g: no reading", truth)
		}
		want := truth/20 - 1
		if truth < 10 {
			if !(*ed.Gain < want) {
				t.Errorf("truth %g, below the series: the line reads %+.4f, the law %+.4f: want an overstated deficit", truth, *ed.Gain, want)
			}
			continue
		}
		if !(math.Abs(*ed.Gain) <= math.Abs(want)+1e-12 && *ed.Gain*want >= 0) {
			t.Errorf("truth %g: the line reads %+.4f, the law %+.4f: not between zero and the law's", truth, *ed.Gain, want)
		}
	}
}

// TestEffectiveDataRefusals: no shorter horizon, a missing arm, or a γ = 0.5 loss that does not fall gives no
// number.
func TestEffectiveDataRefusals(t *testing.T) {
	g05, g1 := lossArm(4.40, 4.41), lossArm(4.38, 4.39)
	if ed := effectiveData(nil, &g05, &g1, 20, 10); ed != nil {
		t.Errorf("no series: got %+v", ed)
	}
	hs := []HorizonArms{{Horizon: 10, G05: lossArm(4.57, 4.58), G1: lossArm(4.6, 4.6)}}
	if ed := effectiveData(hs, &g05, &ArmEvidence{}, 20, 10); ed != nil {
		t.Errorf("γ = 1 without seeds: got %+v", ed)
	}
	longer := []HorizonArms{{Horizon: 40, G05: lossArm(4.2), G1: lossArm(4.2)}}
	if ed := effectiveData(longer, &g05, &g1, 20, 10); ed != nil {
		t.Errorf("only a longer horizon: got %+v", ed)
	}
	flat := []HorizonArms{{Horizon: 10, G05: lossArm(4.39, 4.40), G1: lossArm(4.6, 4.6)}}
	ed := effectiveData(flat, &g05, &g1, 20, 10)
	if ed == nil || ed.Gain != nil || !strings.Contains(ed.Note, "does not fall") {
		t.Errorf("γ = 0.5 not falling: got %+v", ed)
	}
	if txt := ed.text(); !strings.Contains(txt, "undetermined") {
		t.Errorf("text %q should say undetermined", txt)
	}
}

// TestJudgedH1CarriesEffectiveData: with a horizon series, the judged H1 states its effective data beside the
// paired gain (in claims.json and in its evidence text); without a primary horizon it states none.
func TestJudgedH1CarriesEffectiveData(t *testing.T) {
	line := func(h float64) float64 { return 5.2 - 0.24*math.Log(h) }
	seeds := func(l float64) ArmEvidence { return lossArm(l, l+0.01, l-0.005, l+0.004, l-0.009, l+0.002, l-0.002) }
	ev := &Evidence{Width: 128,
		Gamma: []GammaArm{{Gamma: 0.5, ArmEvidence: seeds(line(20))}, {Gamma: 1, ArmEvidence: seeds(line(25))}},
		Horizons: []HorizonArms{
			{Horizon: 5, Steps: 2243, G05: seeds(line(5)), G1: seeds(line(4.5))},
			{Horizon: 10, Steps: 4486, G05: seeds(line(10)), G1: seeds(line(11))},
		},
		Primaries: &Primaries{Alpha: 0.05, Delta: 0.0193, MinWidths: 4, MinSpan: 2.5,
			Horizon: experiment.Horizon{Width: 128, TokensPerParam: 20, Horizons: []float64{5, 10, 20}}},
	}
	h1 := judgePrimaries(ev, 200)[0]
	ed := h1.Tests[0].EffData
	if ed == nil || ed.Gain == nil || math.Abs(*ed.Gain-0.25) > 1e-9 || ed.From != 10 {
		t.Fatalf("H1's effective data %+v, want +25%% through horizons 10 and 20", ed)
	}
	if !strings.Contains(h1.Evidence, "effective data +25%") {
		t.Errorf("H1's evidence does not state the effective data: %s", h1.Evidence)
	}
	ev.Primaries.TokensPerParam = 0
	if ed := judgePrimaries(ev, 0)[0].Tests[0].EffData; ed != nil {
		t.Errorf("no primary horizon, yet effective data %+v", ed)
	}
}

// TestClaimsWithoutALadderMarshal: a tier without a ladder (the 8 h tier) judges H2 with no span, so its δ and ln
// span are NaN; claims.json must still be written, with those numbers as null.
func TestClaimsWithoutALadderMarshal(t *testing.T) {
	seeds := func(l float64) ArmEvidence { return lossArm(l, l+0.01, l-0.005) }
	ev := &Evidence{Width: 128,
		Gamma:     []GammaArm{{Gamma: 0.5, ArmEvidence: seeds(4.4)}, {Gamma: 1, ArmEvidence: seeds(4.38)}},
		Horizons:  []HorizonArms{{Horizon: 10, Steps: 4486, G05: seeds(4.57), G1: seeds(4.58)}},
		Primaries: &Primaries{Alpha: 0.05, Delta: 0.0193, MinWidths: 4, MinSpan: 2.5, Horizon: experiment.Horizon{Width: 128, TokensPerParam: 20}},
	}
	claims := judgePrimaries(ev, 50)
	if d := claims[1].Tests[0].Delta; !math.IsNaN(d) {
		t.Fatalf("H2's δ without a ladder is %g; this test expects the NaN it guards", d)
	}
	b, err := json.Marshal(Result{Claims: claims})
	if err != nil {
		t.Fatalf("claims.json of a tier without a ladder: %v", err)
	}
	if !strings.Contains(string(b), `"ln_span":null`) || !strings.Contains(string(b), `"delta":null`) {
		t.Errorf("the NaNs are not written as null: %s", b)
	}
}
