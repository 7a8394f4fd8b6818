package experiment

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/tune"
)

// ladderPlan is horizonPlan with a ladder at its own horizon: widths 24, 32 and 48 at 0.02 tokens per parameter
// while H1 trains at 0.08 with the series 0.02, 0.04, 0.08.
func ladderPlan(ladder string) string {
	p := strings.Replace(horizonPlan, `groups = ["gamma"]`, `groups = ["gamma", "sizes"]
widths = [24, 32, 48]
ladder = `+ladder, 1)
	return p + `
[[group]]
name = "sizes"
lr = "tuned"
ladder = true
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
axes = { "init.gamma" = [0.5, 1], "model.hidden_size" = [32] }
`
}

// expandTier expands plan text under its first tier at steps per main run, as Describe does, training nothing.
func expandTier(t *testing.T, text string, steps int) (*Plan, []planRun, error) {
	t.Helper()
	p, err := Parse([]byte(text))
	if err != nil {
		return nil, nil, err
	}
	tier := &p.Tiers[0]
	q := p.Tiered(tier)
	out := &Outcome{Plan: q, Out: t.TempDir(), Seeds: tier.Seeds, Tier: tier, Stats: &data.Stats{Source: "embedded", VocabSize: 512}}
	o := Options{Out: out.Out, Seeds: tier.Seeds}
	runs, err := expandChecked(q, out, steps, &o)
	return q, runs, err
}

// TestLadderAtItsOwnHorizon: a tier's ladder trains every rung (the primaries' width too) at the ladder's horizon,
// each width at the same tokens per non-embedding parameter, as a single-horizon WSD run; its rung at the
// primaries' width is the recipe of H1's cooldown branch at that horizon; and the H1 runs keep their series.
func TestLadderAtItsOwnHorizon(t *testing.T) {
	const steps = 400
	p, runs, err := expandTier(t, ladderPlan(`{ tokens_per_param = 0.02, tune_widths = [24, 48] }`), steps)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ladder == nil || p.Ladder.TokensPerParam != 0.02 {
		t.Fatalf("the tiered plan's ladder is %+v", p.Ladder)
	}
	var ref int64
	for _, r := range runs {
		if r.group.Name == "gamma" {
			ref = r.cfg.Model.NonEmbeddingParams()
		}
	}
	rungs := map[int]bool{}
	var h1Branch, rung32 *planRun
	for i, r := range runs {
		c := r.cfg
		switch r.group.Name {
		case "gamma":
			if c.TotalSteps() != steps || len(r.branches) != 2 {
				t.Errorf("%s: H1 run of %d steps with %d branches, want %d and 2", r.dir, c.TotalSteps(), len(r.branches), steps)
			}
			if c.Init.Gamma == 0.5 && c.Seed == 0 {
				for j := range r.branches {
					if r.branches[j].horizon == 0.02 {
						h1Branch = &planRun{cfg: r.branches[j].cfg}
					}
				}
			}
		case "sizes":
			want := int(math.Ceil(steps * 0.02 / 0.08 * float64(c.Model.NonEmbeddingParams()) / float64(ref)))
			if c.TotalSteps() != want || len(r.branches) != 0 {
				t.Errorf("%s: rung of %d steps with %d branches, want %d and none", r.dir, c.TotalSteps(), len(r.branches), want)
			}
			if c.Schedule.Kind != recipe.ScheduleWSD || c.Schedule.DecaySteps != int(math.Round(0.2*float64(want))) || c.Train.SnapshotSteps != nil {
				t.Errorf("%s: %s schedule, decay %d, snapshots %v; want a single-horizon WSD run", r.dir, c.Schedule.Kind, c.Schedule.DecaySteps, c.Train.SnapshotSteps)
			}
			rungs[c.Model.Dim] = true
			if c.Model.Dim == 32 && c.Init.Gamma == 0.5 && c.Seed == 0 {
				rung32 = &runs[i]
			}
		}
	}
	if len(rungs) != 3 || !rungs[24] || !rungs[32] || !rungs[48] {
		t.Errorf("rungs %v, want widths 24, 32, 48", rungs)
	}
	if h1Branch == nil || rung32 == nil {
		t.Fatal("no H1 branch at 0.02 or no ladder rung at width 32")
	}
	a, b := h1Branch.cfg, rung32.cfg
	if a.TotalSteps() != b.TotalSteps() || !reflect.DeepEqual(a.Schedule, b.Schedule) || !reflect.DeepEqual(a.Model, b.Model) ||
		!reflect.DeepEqual(a.Init, b.Init) || !reflect.DeepEqual(a.Optimizer, b.Optimizer) {
		t.Errorf("the ladder's rung at the primaries' width is not H1's branch recipe:\n rung   %d steps %+v\n branch %d steps %+v", b.TotalSteps(), b.Schedule, a.TotalSteps(), a.Schedule)
	}
}

// TestLadderRungChecks: a rung below the ladder's min_steps, or one whose embedding and head outweigh its
// max_embedding_share, is refused before anything trains, naming the width; a ladder table that cannot be
// sized is refused when the plan is read.
func TestLadderRungChecks(t *testing.T) {
	for _, tc := range []struct {
		name, ladder, want string
	}{
		{"too few steps", `{ tokens_per_param = 0.02, tune_widths = [24, 48], min_steps = 100 }`, "width 24 trains 44 steps at the ladder's 0.02 tokens per parameter, fewer than the ladder's min_steps 100"},
		{"embedding dominates", `{ tokens_per_param = 0.02, tune_widths = [24, 48], max_embedding_share = 0.05 }`, "of its parameters, more than the ladder's max_embedding_share 0.05"},
		{"one end", `{ tokens_per_param = 0.02, tune_widths = [24] }`, "want the ladder's two ends"},
		{"no horizon", `{ tune_widths = [24, 48] }`, "ladder: tokens_per_param 0"},
		{"a misspelt key", `{ tokens_per_param = 0.02, tune_widths = [24, 48], min_step = 5 }`, "min_step"},
		{"share of one", `{ tokens_per_param = 0.02, tune_widths = [24, 48], max_embedding_share = 1 }`, "want a share in [0, 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := expandTier(t, ladderPlan(tc.ladder), 400)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestLadderGridTunesBothEnds: a plan with a ladder at its own horizon tunes each γ at both of the ladder's ends
// at that horizon (single-horizon WSD trials, results recorded with their horizon), and every rung runs at the
// rate interpolated in log width between the ends' (tune.AtWidth).
func TestLadderGridTunesBothEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: trains the grids and the runs of a small plan")
	}
	p, err := Parse([]byte(ladderPlan(`{ tokens_per_param = 0.04, tune_widths = [24, 48], lrs = [2e-3, 4e-3] }`)))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var log bytes.Buffer
	res, err := Run(context.Background(), p, Options{Out: out, Budget: 30 * time.Minute, Steps: 20, Windows: 4, Log: &log, Describe: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{"ladder at its own horizon: 0.04 tokens per non-embedding parameter", "ladder LR grid at 0.04 tokens per parameter", "rung width 48"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the printed plan lacks %q", want)
		}
	}
	ends := map[int]Tuned{}
	for _, w := range []int{24, 48} {
		tr, ok := res.Tuned[LadderTunedKey(0.5, w, 0.04)]
		if !ok || tr.TokensPerParam != 0.04 || tr.Grid == nil || len(tr.Grid.Trials) < 4 {
			t.Fatalf("width %d: ladder grid %+v", w, tr)
		}
		ends[w] = tr
		for _, trial := range tr.Grid.Trials {
			if !(trial.Loss > 0) {
				t.Errorf("width %d: trial %+v", w, trial)
			}
		}
	}
	for _, r := range res.RunList {
		if r.Group != "sizes" {
			continue
		}
		want, err := tune.AtWidth(tune.Swept{Width: 24, LR: ends[24].Result.LR}, tune.Swept{Width: 48, LR: ends[48].Result.LR}, r.Config.Model.Dim)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Config.Schedule.PeakLR; math.Abs(got-want) > 1e-12*want || r.Config.Schedule.Kind != recipe.ScheduleWSD {
			t.Errorf("%s: rate %g (%s), want %g interpolated between the ends (wsd)", r.Dir, got, r.Config.Schedule.Kind, want)
		}
	}
}

// TestTierTuneExtend: a tier's tune_extend replaces [tune] extend under that tier (the grid may add that many
// rates past an edge), and a negative one is refused.
func TestTierTuneExtend(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(horizonPlan, "tune_lrs = ", "tune_extend = 3\ntune_lrs = ", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if q := p.Tiered(&p.Tiers[0]); q.Tune.Extend != 3 || p.Tune.Extend != 0 || q.Tune.gridOptions(q, true, 0.5).Extend != 3 {
		t.Errorf("extend %d under the tier (plan's %d), want 3", q.Tune.Extend, p.Tune.Extend)
	}
	if _, err := Parse([]byte(strings.Replace(horizonPlan, "tune_lrs = ", "tune_extend = -1\ntune_lrs = ", 1))); err == nil || !strings.Contains(err.Error(), "tune_extend -1") {
		t.Errorf("tune_extend = -1: %v", err)
	}
}

// TestLadderOfExplicitArms: a ladder group of explicit arms (each setting its own width and rate) gives every arm
// the steps of its width at the primaries' tokens per parameter, with the per-step keys recomputed from them, and
// keeps each arm's own keys; the verdict ladder (issue 44, family B) is such a plan. A lr = "tuned" group of arms
// is still refused.
func TestLadderOfExplicitArms(t *testing.T) {
	p, err := Builtin("verdict-20tpp-ladder")
	if err != nil {
		t.Fatal(err)
	}
	out := &Outcome{Plan: p, Out: t.TempDir(), Seeds: p.Seeds, Stats: &data.Stats{Source: "embedded", VocabSize: 4096}}
	steps, ref, err := p.horizonSteps(out)
	if err != nil || steps != 8972 {
		t.Fatalf("the primaries' horizon: %d steps (%v), want family A's 8972", steps, err)
	}
	runs, err := expand(p, out, steps, &Options{Out: out.Out, Seeds: p.Seeds})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range runs {
		c := r.cfg
		n := c.Model.NonEmbeddingParams()
		tokens := float64(c.Train.Steps * c.Train.BatchSize * c.Model.SeqLen)
		// ceil(steps·N/N_ref) steps: 20 tokens per parameter, at most a step more.
		if want := int(math.Ceil(float64(steps) * float64(n) / float64(ref))); c.Train.Steps != want {
			t.Errorf("%s: width %d, %d steps, want %d", r.arm, c.Model.Dim, c.Train.Steps, want)
		}
		if tpp := tokens / float64(n); tpp < 20 || tpp > 20.01 {
			t.Errorf("%s seed %d: width %d: %.4f tokens per parameter, want 20", r.arm, r.seed, c.Model.Dim, tpp)
		}
		if want := max(c.Train.Steps/20, 1); c.Schedule.Warmup != want {
			t.Errorf("%s: warmup %d steps, want %d (a twentieth of its own %d)", r.arm, c.Schedule.Warmup, want, c.Train.Steps)
		}
		if !strings.Contains(r.dir, fmt.Sprintf("%s-%dsteps-seed%d", r.arm, c.Train.Steps, r.seed)) {
			t.Errorf("%s: run directory %s does not name its arm, steps and seed", r.arm, r.dir)
		}
		wantLR := map[float64]float64{0.5: 2e-3, 1: 5e-4}[c.Init.Gamma]
		if r.group.Name == "rates" {
			if c.Schedule.PeakLR != wantLR/2 && c.Schedule.PeakLR != wantLR*2 {
				t.Errorf("%s: lr %g, want ×½ or ×2 of %g", r.arm, c.Schedule.PeakLR, wantLR)
			}
		} else if c.Schedule.PeakLR != wantLR {
			t.Errorf("%s: lr %g, want %g", r.arm, c.Schedule.PeakLR, wantLR)
		}
		seen[r.group.Name]++
	}
	if seen["main"] != 10 || seen["ladder"] != 40 || seen["rates"] != 16 {
		t.Errorf("runs per group %v, want main 10 (seeds 2-6), ladder 40, rates 16", seen)
	}
	bad := strings.Replace(fullPlan, `axes = { "init.gamma" = [0.5, 1], "model.hidden_size" = [16] }`, `[[group.arm]]
name = "x"
set = { "model.hidden_size" = 16 }`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "lr = tuned") {
		t.Errorf("a tuned-rate group of arms: %v, want a refusal", err)
	}
}
