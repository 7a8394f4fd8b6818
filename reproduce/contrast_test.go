package reproduce

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/override"
)

// contrastWorld is family D's design with a known answer: γ = 0.5 and γ = 1 in group "main" of one directory,
// the mixed arm (γ = 1 with the embedding and head at γ = 0.5) in group "embed-head" of another, seeds 0-6,
// and a cosine control beside γ = 0.5. The mixed arm's Chinese loss is γ = 0.5's less 0.03 and its English
// loss γ = 0.5's, each with seed noise of SD sd.
func contrastWorld(sd float64) []StudyRun {
	rng := rand.New(rand.NewPCG(3, 4))
	run := func(group string, seed int, l map[string]float64, sets ...override.Set) StudyRun {
		cfg := append([]override.Set{{Key: "seed", Value: int64(seed)}, {Key: "model.hidden_size", Value: int64(128)},
			{Key: "schedule.kind", Value: "wsd"}, {Key: "data.train", Value: fmt.Sprintf("/%s/data/train.tok", group)}}, sets...)
		return StudyRun{Dir: fmt.Sprintf("/%s/run-seed%d-%v", group, seed, sets), Group: group, Seed: seed, config: cfg,
			Loss: Loss{Overall: 0.2*l["en"] + 0.8*l["zh"], ByLanguage: l}}
	}
	var runs []StudyRun
	for s := range 7 {
		base := 4 + 0.1*rng.NormFloat64()
		noisy := func(d float64) float64 { return base + d + sd*rng.NormFloat64() }
		runs = append(runs,
			run("main", s, map[string]float64{"en": noisy(0), "zh": noisy(0)}, override.Set{Key: "init.gamma", Value: 0.5}, override.Set{Key: "schedule.lr", Value: 2e-3}),
			run("main", s, map[string]float64{"en": noisy(0), "zh": noisy(-0.02)}, override.Set{Key: "init.gamma", Value: 1.0}, override.Set{Key: "schedule.lr", Value: 5e-4}),
			run("embed-head", s, map[string]float64{"en": noisy(0), "zh": noisy(-0.03)}, override.Set{Key: "init.gamma", Value: 1.0}, override.Set{Key: "schedule.lr", Value: 1e-3},
				override.Set{Key: "init.classes.embed.gamma", Value: 0.5}))
		if s < 2 {
			runs = append(runs, run("controls", s, map[string]float64{"en": noisy(0), "zh": noisy(0)}, override.Set{Key: "init.gamma", Value: 0.5},
				override.Set{Key: "schedule.lr", Value: 2e-3}, override.Set{Key: "schedule.kind", Value: "cosine"}))
		}
	}
	return runs
}

func mustSelector(t *testing.T, s string) Selector {
	t.Helper()
	sel, err := ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestContrastRecoversAKnownWorld: the mixed arm against γ = 0.5 reads the built gains (+0.03 on Chinese, 0 on
// English, +0.024 at the training mix) inside their intervals, over the 7 seeds, with the keys the arms differ
// in listed, and decides Chinese supported; against γ = 1 the Chinese gain is +0.01, inside δ: no meaningful
// effect.
func TestContrastRecoversAKnownWorld(t *testing.T) {
	runs := contrastWorld(0.002)
	for _, tc := range []struct {
		a          string
		mix, en, z float64
		differ     string
		zh         string // the Chinese reading's decision: +0.03 is beyond δ, +0.01 inside it
	}{
		{"group=main,init.gamma=0.5", 0.024, 0, 0.03, "init.classes.embed.gamma: unset against 0.5; init.gamma: 0.5 against 1; schedule.lr: 0.002 against 0.001", Supported},
		{"group=main,init.gamma=1", 0.008, 0, 0.01, "init.classes.embed.gamma: unset against 0.5; schedule.lr: 0.0005 against 0.001", NoMeaningfulEffect},
	} {
		c, err := ContrastArms(runs, mustSelector(t, tc.a), mustSelector(t, "group=embed-head"), nil, 0.05, 0.0193)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(c.Differ, "; "); got != tc.differ {
			t.Errorf("%s: differ %q, want %q", tc.a, got, tc.differ)
		}
		if len(c.RunsA) != 7 || len(c.RunsB) != 7 || len(c.ByLanguage) != 2 {
			t.Fatalf("%s: %d and %d runs, %d languages", tc.a, len(c.RunsA), len(c.RunsB), len(c.ByLanguage))
		}
		for _, r := range []struct {
			t    Test
			want float64
		}{{c.Mix, tc.mix}, {c.ByLanguage[0], tc.en}, {c.ByLanguage[1], tc.z}} {
			e := r.t.Estimate
			if e.N != 7 || !(e.Lo <= r.want && r.want <= e.Hi) || math.Abs(e.Alpha-0.05) > 0 || r.t.PSignFlip == nil || r.t.PTOST == nil {
				t.Errorf("%s, %s: n %d, [%.4f, %.4f] at α %g; want 7 seeds covering %.3f with TOST and sign-flip p", tc.a, r.t.Name, e.N, e.Lo, e.Hi, e.Alpha, r.want)
			}
		}
		if c.ByLanguage[1].Decision != tc.zh {
			t.Errorf("%s: Chinese %s, want %s", tc.a, c.ByLanguage[1].Decision, tc.zh)
		}
	}
}

// TestContrastRefusesWhatIsNotOneArm: a selector that chooses two arms, none, or two runs of a seed, two
// selectors that choose one arm, and arms that differ beyond --vary are refused, each naming the problem.
func TestContrastRefusesWhatIsNotOneArm(t *testing.T) {
	runs := contrastWorld(0.002)
	dup := append(contrastWorld(0.002), StudyRun{Dir: "/again", Group: "embed-head", Seed: 3, config: runs[2].config})
	for _, tc := range []struct {
		runs []StudyRun
		a, b string
		vary []string
		want string
	}{
		{runs, "init.gamma=0.5", "group=embed-head", nil, "schedule.kind: wsd against cosine): name that key too"},
		{runs, "init.gamma=0.25", "group=embed-head", nil, "arm A: init.gamma=0.25 chooses no finished run"},
		{runs, "group=main,init.gamma=1", "init.gamma=1,schedule.lr=5e-4", nil, "choose one arm"},
		{dup, "group=main,init.gamma=1", "group=embed-head", nil, "arm B: group=embed-head chooses two runs of seed 3"},
		{runs, "group=main,init.gamma=1", "group=embed-head", []string{"init.classes.embed.gamma"}, "the arms differ in schedule.lr: 0.0005 against 0.001, which is not one of the keys allowed to vary"},
		{runs, "no.such.key=1", "group=embed-head", nil, "chooses no finished run"},
	} {
		_, err := ContrastArms(tc.runs, mustSelector(t, tc.a), mustSelector(t, tc.b), tc.vary, 0.05, 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s against %s: %v, want %q", tc.a, tc.b, err, tc.want)
		}
	}
	if _, err := ParseSelector("init.gamma"); err == nil {
		t.Error("a selector without =: accepted")
	}
	if c, err := ContrastArms(runs, mustSelector(t, "group=main,init.gamma=1"), mustSelector(t, "group=embed-head"),
		[]string{"init.classes.embed.gamma", "schedule.lr"}, 0.05, 0); err != nil || len(c.Differ) != 2 {
		t.Errorf("arms that differ only in the allowed keys: %v %v", c, err)
	}
}
