package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/summary"
)

const pairPlan = `name = "p"
seeds = [0, 1, 2]
[budget]
minutes = 30
efficiency = 1
min_steps = 1
[data]
corpus = "embedded"
vocab = 512
[[group]]
name = "g"
[[group.arm]]
name = "a"
set = { "init.gamma" = 0.5 }
[[group.arm]]
name = "b"
set = { "init.gamma" = 1 }
[[pair]]
name = "a against b"
a = "a"
b = "b"
`

// TestPairsPairBySeed: a plan's [[pair]] is L(a) − L(b) seed by seed from the summary rows, matched to arms and
// seeds by run directory, a seed missing in either arm left out; a pair naming no arm is refused.
func TestPairsPairBySeed(t *testing.T) {
	p, err := Parse([]byte(pairPlan))
	if err != nil {
		t.Fatal(err)
	}
	out := &Outcome{}
	loss := map[string][]float64{"a": {4.0, 4.1, 4.3}, "b": {4.2, 4.15}}
	for _, arm := range []string{"a", "b"} {
		for s, l := range loss[arm] {
			dir := arm + string(rune('0'+s))
			out.RunList = append(out.RunList, RunInfo{Arm: arm, Seed: uint64(s), Dir: dir})
			out.Rows = append(out.Rows, summary.Row{Run: arm, Dir: dir, ValLoss: l})
		}
	}
	ps := pairs(p, out)
	if len(ps) != 1 {
		t.Fatalf("%d pairs", len(ps))
	}
	e := ps[0].Estimate
	if e.N != 2 || math.Abs(e.Values[0]+0.2) > 1e-12 || math.Abs(e.Values[1]+0.05) > 1e-12 || math.Abs(e.Mean+0.125) > 1e-12 {
		t.Errorf("pair estimate %+v, want seeds 0, 1: −0.2, −0.05", e)
	}
	var b strings.Builder
	if err := WritePairs(&b, ps); err != nil || !strings.Contains(b.String(), "a against b (a − b)") || !strings.Contains(b.String(), "1: -0.0500") || !strings.Contains(b.String(), "none (n = 2") ||
		!strings.Contains(b.String(), "-0.1250  ± 0.0750") { // SE: SD 0.15/√2 of the two differences, over √2
		t.Errorf("printed:\n%s (%v)", b.String(), err)
	}
	if _, err := ps[0].MarshalJSON(); err != nil {
		t.Error(err)
	}
	if ps[0].ByLang != nil || ps[0].TrainMix != nil {
		t.Errorf("readouts without per-language losses: %+v, %+v", ps[0].ByLang, ps[0].TrainMix)
	}
	bad := strings.Replace(pairPlan, `b = "b"`, `b = "c"`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), `no arm "c"`) {
		t.Errorf("a pair of a missing arm: %v", err)
	}
}

// TestPairsByLanguageAndTrainMix: a pair also reads each language's validation split and the training mix,
// Σ w·L with w the language's share of the training tokens (here en 1/4, zh 3/4).
func TestPairsByLanguageAndTrainMix(t *testing.T) {
	p, err := Parse([]byte(pairPlan))
	if err != nil {
		t.Fatal(err)
	}
	out := &Outcome{Stats: &data.Stats{Train: data.SplitStats{Tokens: 400},
		TrainByLang: map[string]data.SplitStats{"en": {Tokens: 100}, "zh": {Tokens: 300}}}}
	// Per seed: a − b is +0.4 on en and −0.1 on zh, so +0.4/4 − 0.3/4 = +0.025 at the training mix, while
	// the whole split (weighted by its own tokens) says −0.2.
	for s := range 3 {
		for _, arm := range []struct {
			name     string
			en, zh   float64
			wholeVal float64
		}{{"a", 5.4 + float64(s), 4.0, 4.0}, {"b", 5.0 + float64(s), 4.1, 4.2}} {
			dir := arm.name + string(rune('0'+s))
			out.RunList = append(out.RunList, RunInfo{Arm: arm.name, Seed: uint64(s), Dir: dir})
			out.Rows = append(out.Rows, summary.Row{Run: arm.name, Dir: dir, ValLoss: arm.wholeVal, LangLoss: map[string]float64{"en": arm.en, "zh": arm.zh}})
		}
	}
	ps := pairs(p, out)
	if len(ps) != 1 || ps[0].TrainMix == nil {
		t.Fatalf("pairs %+v: want one with a training-mix readout", ps)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if e := ps[0].Estimate; e.N != 3 || !near(e.Mean, -0.2) {
		t.Errorf("whole split %+v, want −0.2 on 3 seeds", e)
	}
	if e := ps[0].ByLang["en"]; e.N != 3 || !near(e.Mean, 0.4) {
		t.Errorf("en %+v, want +0.4", e)
	}
	if e := ps[0].ByLang["zh"]; e.N != 3 || !near(e.Mean, -0.1) {
		t.Errorf("zh %+v, want −0.1", e)
	}
	if e := *ps[0].TrainMix; e.N != 3 || !near(e.Mean, 0.025) {
		t.Errorf("training mix %+v, want +0.025", e)
	}
	var b strings.Builder
	if err := WritePairs(&b, ps); err != nil || !strings.Contains(b.String(), "at the training mix") || !strings.Contains(b.String(), "en validation only") {
		t.Errorf("printed:\n%s (%v)", b.String(), err)
	}
	if l, ok := TrainMixLoss(map[string]float64{"en": 1}, out.Stats); !ok || !math.IsNaN(l) {
		t.Errorf("a language without a loss: %v, %v; want NaN, true", l, ok)
	}
}

// TestDataSelectionTrainsWithoutTheSlice: `[data] selection = true` makes a plan without [tune] train on
// train.select.tok and count its tokens, as a tuning plan does; without it the runs train on train.tok.
func TestDataSelectionTrainsWithoutTheSlice(t *testing.T) {
	for _, tc := range []struct {
		plan string
		want string
	}{
		{pairPlan, data.TrainFile},
		{strings.Replace(pairPlan, "vocab = 512\n", "vocab = 512\nselection = true\n", 1), data.SelectTrainFile},
	} {
		p, err := Parse([]byte(tc.plan))
		if err != nil {
			t.Fatal(err)
		}
		out := &Outcome{DataDir: "d", Stats: &data.Stats{VocabSize: 512, Train: data.SplitStats{Tokens: 1000}}}
		var got string
		for _, s := range out.baseSets(p, &p.Groups[0], 10) {
			if s.Key == recipe.KeyDataTrain {
				got = fmt.Sprint(s.Value)
			}
		}
		if filepath.Base(got) != tc.want {
			t.Errorf("selection %v: data.train = %q, want %s", p.Data.Selection, got, tc.want)
		}
		if n, est := trainTokens(p, "d", out.Stats); (tc.want == data.TrainFile) != (n == 1000) || est != (n != 1000) {
			t.Errorf("selection %v: training tokens %d of 1000 (estimated %v)", p.Data.Selection, n, est)
		}
	}
}

// TestPairsRefusedWithoutSharedSeed: a pair whose arms run no seed in common (here a group with its own seeds)
// is refused naming both arms and their seeds before anything is written or trained (it trained every run,
// then printed +NaN); a pair of arms that share a seed passes the check.
func TestPairsRefusedWithoutSharedSeed(t *testing.T) {
	plan := strings.Replace(pairPlan, "[[pair]]", `[[group]]
name = "h"
seeds = [7]
[[group.arm]]
name = "c"
set = { "init.gamma" = 0.75 }
[[pair]]`, 1)
	p, err := Parse([]byte(strings.Replace(plan, `b = "b"`, `b = "c"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	_, err = Run(context.Background(), p, Options{Out: out, Steps: 1})
	if err == nil || !strings.Contains(err.Error(), `pair "a against b"`) || !strings.Contains(err.Error(), "[0 1 2]") || !strings.Contains(err.Error(), "[7]") {
		t.Fatalf("a pair without a common seed: %v", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("the refused plan wrote %s", out)
	}
	ok, err := Parse([]byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPairSeeds(ok, []uint64{0, 1, 2}); err != nil {
		t.Errorf("arms a and b share seeds 0, 1, 2: %v", err)
	}
}
