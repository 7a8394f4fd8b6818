package reproduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/stats"
	"github.com/smallinit/smallinit/train/rundir"
)

// primaryWorld is a world for the primaries: 8 seeds, paired SD 0.014 nats per comparison (run noise 0.01),
// ladder widths 64-512, δ = 0.02 nats.
func primaryWorld(name string, gain128, slope float64) world {
	w := helps()
	w.name, w.gain128, w.slope, w.runSD, w.seeds, w.tokens = name, gain128, slope, 0.01, 8, 200
	return w
}

func primarySpec() *Primaries {
	return &Primaries{H1: "gain at 128", H2: "slope", Alpha: 0.05, Delta: 0.02, Horizon: experiment.Horizon{Width: 128}, MinWidths: 4,
		MinSpan: 2.5, PlateauTolerance: 0.05, Power: 0.8, MaxSeeds: 64}
}

// TestPrimaryVerdictsInWorldsWithAKnownAnswer is the four-outcome protocol's proof (docs/definitions.md §7) on
// 300 simulated reproductions per world: where γ = 1 helps by 2.5δ (and its gain grows), H1 and H2 are
// supported; where it hurts, contradicted; with no effect, "no meaningful effect" is reached most of the time
// and a decision either way at most at the family's α; with an effect smaller than δ (0.4δ), "no meaningful
// effect" is reached most of the time and "contradicted" at most at α; and "no meaningful effect" never appears
// where the effect is 2.5δ. The rates are logged.
func TestPrimaryVerdictsInWorldsWithAKnownAnswer(t *testing.T) {
	const reps = 300
	slack := 2 * math.Sqrt(0.05*0.95/reps)
	for _, c := range []struct {
		w     world
		check func(h string, r map[string]float64) string
	}{
		{primaryWorld("helps by 2.5δ", 0.05, 0.02), func(h string, r map[string]float64) string {
			if r[Supported] < 0.9 || r[NoMeaningfulEffect] > 0 {
				return "want supported ≥ 0.9 and never no meaningful effect"
			}
			return ""
		}},
		{primaryWorld("hurts by 2.5δ", -0.05, -0.02), func(h string, r map[string]float64) string {
			if r[Contradicted] < 0.9 || r[NoMeaningfulEffect] > 0 {
				return "want contradicted ≥ 0.9 and never no meaningful effect"
			}
			return ""
		}},
		{primaryWorld("no effect", 0, 0), func(h string, r map[string]float64) string {
			if r[NoMeaningfulEffect] < 0.6 || r[Supported]+r[Contradicted] > 0.05+slack {
				return "want no meaningful effect ≥ 0.6 and a decision either way ≤ α"
			}
			return ""
		}},
		{primaryWorld("smaller than δ", 0.008, 0.001), func(h string, r map[string]float64) string {
			if r[NoMeaningfulEffect] < 0.5 || r[Contradicted] > 0.05+slack {
				return "want no meaningful effect ≥ 0.5 and contradicted ≤ α"
			}
			return ""
		}},
	} {
		rng := rand.New(rand.NewPCG(7, 8))
		per := []map[string]float64{{}, {}}
		for range reps {
			ev := c.w.simulate(rng)
			ev.Primaries = primarySpec()
			cs := judgePrimaries(ev, 0)
			for i := range per {
				per[i][cs[i].Verdict] += 1.0 / reps
			}
		}
		for i, h := range []string{"H1", "H2"} {
			r := per[i]
			t.Logf("%s, %s: supported %.3f, contradicted %.3f, no meaningful effect %.3f, inconclusive %.3f",
				c.w.name, h, r[Supported], r[Contradicted], r[NoMeaningfulEffect], r[Inconclusive])
			if msg := c.check(h, r); msg != "" {
				t.Errorf("%s, %s: %s (rates %v)", c.w.name, h, msg, r)
			}
		}
	}
}

// A primary whose γ = 1 runs are still condensing is untestable at this horizon, whatever its numbers say.
func TestPrimaryUntestableBeforeThePlateau(t *testing.T) {
	ev := primaryWorld("helps", 0.05, 0.02).simulate(rand.New(rand.NewPCG(1, 1)))
	ev.Primaries = primarySpec()
	g1 := ev.gammaArm(1)
	g1.Plateau = map[int]float64{0: 0.01, 1: 0.2}
	cs := judgePrimaries(ev, 0)
	if cs[0].Verdict != UntestableHorizon || !strings.Contains(cs[0].Reason, "seeds [1]") {
		t.Errorf("H1 with seed 1 still condensing: %s (%s)", cs[0].Verdict, cs[0].Reason)
	}
	g1.Plateau = map[int]float64{0: 0.01, 1: 0.04}
	if cs := judgePrimaries(ev, 0); cs[0].Verdict != Supported {
		t.Errorf("H1 with every seed plateaued: %s (%s)", cs[0].Verdict, cs[0].Reason)
	}
}

// A verdict that one heavy-tailed seed makes is marked: the leave-one-seed-out check.
func TestVerdictRestingOnOneSeedIsMarked(t *testing.T) {
	c := claimTests{delta: 0.02}
	vals := []float64{0.001, 0.002, 0.0015, 0.0012, 0.3}
	c.tests = []Test{{Name: "gain", Decisive: true, Delta: 0.02, Estimate: statsEstimate(vals)}}
	c.judge()
	if !c.tests[0].RestsOnOneSeed {
		t.Errorf("four tiny gains and one of 0.3: decision %s not marked as resting on one seed", c.tests[0].Decision)
	}
	c2 := claimTests{delta: 0.02}
	c2.tests = []Test{{Name: "gain", Decisive: true, Delta: 0.02, Estimate: statsEstimate([]float64{0.05, 0.06, 0.055, 0.052, 0.058})}}
	c2.judge()
	if c2.tests[0].Decision != Supported || c2.tests[0].RestsOnOneSeed {
		t.Errorf("five consistent seeds: %s, rests on one seed %v", c2.tests[0].Decision, c2.tests[0].RestsOnOneSeed)
	}
	one := claimTests{delta: 0.02}
	one.tests = []Test{{Name: "gain", Decisive: true, Delta: 0.02, Estimate: statsEstimate([]float64{0.05, 0.051, 0.049, 0.05, -0.2, 0.05})}}
	one.judge()
	if !one.tests[0].RestsOnOneSeed {
		t.Errorf("one seed against five: decision %s not marked as resting on one seed", one.tests[0].Decision)
	}
}

// writeTrajectory writes a run directory whose diagnostics give the mean stable rank traj.
func writeTrajectory(t *testing.T, dir string, traj []float64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, v := range traj {
		fmt.Fprintf(&b, `{"diagnostics":{"classes":[{"class":"q","tensors":1,"stable_rank":%g},{"class":"ffn_up","tensors":1,"stable_rank":%g}]},"step":%d}`+"\n", v, v, 10*i)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.DiagFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Claim 5 can fail: a γ = 0.5 that condenses as deeply as γ = 1 contradicts "γ = 0.5 changes slowly".
func TestClaim5FailsWhenGammaHalfCondenses(t *testing.T) {
	g1 := []float64{40, 8, 5, 7, 9.5}
	for _, c := range []struct {
		name string
		g05  []float64
		want string
	}{
		{"γ = 0.5 keeps its rank", []float64{40, 33, 30, 28, 27}, Supported},
		{"γ = 0.5 loses 74%", []float64{40, 20, 14, 11, 10.4}, Contradicted},
	} {
		root := t.TempDir()
		var recs []RunRecord
		for s := range 2 {
			d1, d05 := filepath.Join(root, fmt.Sprintf("g1-%d", s)), filepath.Join(root, fmt.Sprintf("g05-%d", s))
			writeTrajectory(t, d1, g1)
			writeTrajectory(t, d05, c.g05)
			recs = append(recs, RunRecord{Seed: 1_000_000 + s, Role: RoleGamma, Dir: d1, Gamma: 1},
				RunRecord{Seed: 1_000_000 + s, Role: RoleGamma, Dir: d05, Gamma: 0.5})
		}
		cl := condensationClaim(recs)
		if cl.Verdict != c.want {
			t.Errorf("%s: %s, want %s: %s", c.name, cl.Verdict, c.want, cl.Evidence)
		}
		if !strings.Contains(cl.Evidence, "seed 1000001") {
			t.Errorf("%s: seeds ≥ 10⁶ are not written as integers: %s", c.name, cl.Evidence)
		}
	}
}

func statsEstimate(vals []float64) stats.Estimate {
	seeds := make([]int, len(vals))
	for i := range seeds {
		seeds[i] = i
	}
	return stats.Estimate{Seeds: seeds, Values: vals}
}
