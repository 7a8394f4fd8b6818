package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/tune"
)

// fullPlan tunes at the full horizon (mode = "full") and sizes its runs in tokens per parameter; its short tier
// runs only the primaries' groups and γ.
const fullPlan = `name = "full"
seeds = [0, 1]
[budget]
minutes = 30
efficiency = 1
min_steps = 1
[[tier]]
name = "short"
minutes = 30
seeds = [0, 1]
widths = [16]
tune_widths = [32, 16]
groups = ["gamma", "sizes"]
gammas = [0.5, 1]
anchor = false
[[tier]]
name = "long"
minutes = 120
seeds = [0, 1, 2]
widths = [16, 24]
[tune]
mode = "full"
gammas = [0.5, 0.75, 1]
widths = [32, 16]
lrs = [2e-3, 4e-3]
seeds = [1000, 1001]
transfer_exponent = 1
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
[primaries]
h1 = "gain at 32"
h2 = "slope of the gain"
width = 32
delta = 0.02
tokens_per_param = 0.02
spike_threshold = 0.5
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
[anchor]
gammas = [0.5, 1]
depth = 2
lrs = [1e-3]
dim = 16
ffn = 32
head_dim = 8
batch = 8
examples = 64
steps = 2
[data]
corpus = "embedded"
vocab = 512
[base]
"model.preset" = "tiny"
"model.hidden_size" = 32
"model.max_position_embeddings" = 32
"train.batch_size" = 4
"schedule.lr" = 2e-3
[per_steps]
"train.checkpoint_interval" = 2
[[group]]
name = "gamma"
lr = "tuned"
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
axes = { "init.gamma" = [0.5, 0.75, 1] }
[[group]]
name = "nofix"
lr = "tuned"
set = { "model.norm_eps" = 1e-5, "model.attn_gate" = "none" }
axes = { "init.gamma" = [0.5, 1] }
[[group]]
name = "sizes"
lr = "tuned"
ladder = true
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
axes = { "init.gamma" = [0.5, 1], "model.hidden_size" = [16] }
`

// TestTieredPlan: a tier with groups and gammas runs only those groups and only those γ (in the arms and the
// LR grid), and hands its anchor = false to the study design (which owns the grid: Plan.DecodeStudyTiers, and
// a design that reads no such key is told of it); the plan itself keeps everything.
func TestTieredPlan(t *testing.T) {
	p, err := Parse([]byte(fullPlan))
	if err != nil {
		t.Fatal(err)
	}
	short := p.Tiered(p.TierNamed("short"))
	var names []string
	for _, g := range short.Groups {
		names = append(names, g.Name)
	}
	var keys []struct {
		Anchor *bool `toml:"anchor"`
	}
	if err := p.DecodeStudyTiers(&keys); err != nil || len(keys) != len(p.Tiers) {
		t.Fatalf("the tiers' study keys: %v (%d for %d tiers)", err, len(keys), len(p.Tiers))
	}
	noAnchor := false
	for i, tr := range p.Tiers {
		if tr.Name == "short" {
			noAnchor = keys[i].Anchor != nil && !*keys[i].Anchor
		}
	}
	if !slices.Equal(names, []string{"gamma", "sizes"}) || !noAnchor || !slices.Equal(short.Tune.Gammas, []float64{0.5, 1}) {
		t.Errorf("short tier: groups %v, no anchor %v, tuned γ %v; want gamma and sizes, true, [0.5 1]", names, noAnchor, short.Tune.Gammas)
	}
	fresh, err := Parse([]byte(fullPlan))
	if err != nil {
		t.Fatal(err)
	}
	var none []struct{}
	if err := fresh.DecodeStudyTiers(&none); err == nil || !strings.Contains(err.Error(), "tier.anchor") {
		t.Errorf("a study that reads no tier key: %v, want the unknown key tier.anchor", err)
	}
	if g := short.Groups[0]; len(g.Axes[0].Values) != 2 {
		t.Errorf("the γ grid under the short tier: %v, want 0.5 and 1", g.Axes[0].Values)
	}
	if len(p.Groups) != 3 || len(p.Groups[0].Axes[0].Values) != 3 || !p.HasStudy(TableAnchor) || len(p.Tune.Gammas) != 3 {
		t.Error("Tiered changed the plan it was called on")
	}
	if long := p.Tiered(p.TierNamed("long")); long != p {
		t.Error("a tier without groups, gammas or anchor = false should run the plan as written")
	}
	d, err := Describe(p, Options{Out: t.TempDir(), Budget: 30 * time.Minute}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.Arms {
		if a.Group == "nofix" || a.Gamma == 0.75 {
			t.Errorf("the short tier describes %s/%s", a.Group, a.Arm)
		}
	}
	// The long tier runs the no-fix arms: they inherit the rate tuned with both fixes, and say so.
	long, err := Describe(p, Options{Out: t.TempDir(), Budget: 2 * time.Hour}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range long.Arms {
		if want := map[bool]string{true: "inherited", false: "tuned"}[a.Group == "nofix"]; a.LR != want {
			t.Errorf("%s/%s: LR %q, want %q", a.Group, a.Arm, a.LR, want)
		}
	}
	var b strings.Builder
	if err := long.Write(&b); err != nil || !strings.Contains(b.String(), `LR "inherited"`) || !strings.Contains(b.String(), "LR grid (package tune, at the full horizon)") {
		t.Errorf("the long tier's description does not explain its rates: %v\n%s", err, b.String())
	}
}

// TestLadderSameTokensPerParam: every width of the ladder trains the same tokens per non-embedding parameter as
// the primaries' width (its own steps), and the estimate charges each run its own steps.
func TestLadderSameTokensPerParam(t *testing.T) {
	p, err := Parse([]byte(fullPlan))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Describe(p, Options{Out: t.TempDir(), Budget: 30 * time.Minute}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	var ref float64
	for _, a := range d.Arms {
		if a.Width == 32 {
			ref = float64(a.Tokens) / float64(a.Params)
		}
	}
	if !(ref > 0) {
		t.Fatal("no arm at the primaries' width")
	}
	seen := 0
	for _, a := range d.Arms {
		if a.Width != 16 {
			continue
		}
		seen++
		step := float64(a.Tokens/int64(a.Steps)) / float64(a.Params) // tokens per parameter of one step
		if got := float64(a.Tokens) / float64(a.Params); math.Abs(got-ref) > step {
			t.Errorf("%s: %.4f tokens per parameter, want the primaries' width's %.4f (within a step)", a.Arm, got, ref)
		}
	}
	if seen != 2 {
		t.Fatalf("%d ladder arms at width 16, want 2", seen)
	}
}

// TestFullGridEndToEnd: the full-horizon grid trains every rate on both tuning seeds at each width's own
// horizon, records the grid and the transfer rule's check at the other width, and the tuned arms run at the
// rule's rate; a second run reads everything back.
func TestFullGridEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: trains 16 trials and 8 runs")
	}
	p, err := Parse([]byte(fullPlan))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o := Options{Out: out, Budget: 30 * time.Minute, Steps: 4, Windows: 4}
	res, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	var tuned, check Tuned
	for _, w := range []int{32, 16} {
		b, err := os.ReadFile(filepath.Join(out, TuneDir, tuneKey(1, w)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var tr Tuned
		if err := json.Unmarshal(b, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.Grid == nil || len(tr.Grid.Trials) != 4 || len(tr.Grid.Rates) != 2 {
			t.Fatalf("width %d: grid %+v, want 2 rates × 2 seeds", w, tr.Grid)
		}
		if w == 32 {
			tuned = tr
		} else {
			check = tr
		}
	}
	if tuned.Transfer != nil || check.Transfer == nil || check.Transfer.RuleLR != tune.Transfer(tuned.Result.LR, 32, 16, 1) {
		t.Errorf("transfer check %+v at width 16, want the rule's rate %g", check.Transfer, tune.Transfer(tuned.Result.LR, 32, 16, 1))
	}
	if _, err := os.Stat(filepath.Join(out, TuneDir, tuneKey(0.75, 32)+".json")); err == nil {
		t.Error("the short tier tuned γ = 0.75, which it does not run")
	}
	trial := filepath.Join(out, TuneDir, tuneKey(1, 16), "lr0.002-2steps-seed1001")
	if _, err := os.Stat(trial); err != nil {
		t.Errorf("the width-16 trial is not at its own horizon (2 of the 4 steps): %v", err)
	}
	if len(res.RunList) != 8 {
		t.Fatalf("%d runs, want 2 γ × 2 widths × 2 seeds", len(res.RunList))
	}
	for _, r := range res.RunList {
		g := r.Config.Init.Gamma
		lr, err := res.TunedLR(res.Plan, g, r.Config.Model.Dim)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Config.Schedule.PeakLR-lr) > 1e-12*lr || math.Abs(lr-res.Tuned[tuneKey(g, 32)].Result.LR*32/float64(r.Config.Model.Dim)) > 1e-12*lr {
			t.Errorf("%s: LR %.17g, want the rule's %.17g (tuned %.17g, d %d)", r.Dir, r.Config.Schedule.PeakLR, lr, res.Tuned[tuneKey(g, 32)].Result.LR, r.Config.Model.Dim)
		}
		if want := map[int]int{32: 4, 16: 2}[r.Config.Model.Dim]; r.Config.TotalSteps() != want {
			t.Errorf("%s: %d steps, want %d (the same tokens per parameter)", r.Dir, r.Config.TotalSteps(), want)
		}
	}
	again, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Tuned[tuneKey(1, 32)].Result.LR != tuned.Result.LR {
		t.Error("the second run chose another rate")
	}
}

// TestFullGridPacked: a full-horizon grid whose trials train two at a time (Options.Jobs) chooses what one at a
// time chooses, from the same bits: every trial's selection loss, and its final weights byte for byte.
func TestFullGridPacked(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: trains 8 trials and 2 runs")
	}
	text := strings.NewReplacer("tune_widths = [32, 16]", "tune_widths = [32]", `groups = ["gamma", "sizes"]`, `groups = ["gamma"]`,
		"gammas = [0.5, 1]\nanchor", "gammas = [1]\nanchor", "seeds = [0, 1]\nwidths = [16]", "seeds = [0]\nwidths = [16]").Replace(fullPlan)
	var got [2]Tuned
	var outs [2]string
	for i, jobs := range []int{1, 2} {
		p, err := Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = t.TempDir()
		var log strings.Builder
		if _, err := Run(context.Background(), p, Options{Out: outs[i], Budget: 30 * time.Minute, Steps: 4, Windows: 4, Jobs: jobs, Log: &log}); err != nil {
			t.Fatalf("jobs %d: %v\n%s", jobs, err, log.String())
		}
		if packed := strings.Contains(log.String(), "2 trials at a time with"); packed != (jobs == 2 && runtime.NumCPU() > 1) {
			t.Errorf("jobs %d: the log says packed %v; log:\n%s", jobs, packed, log.String())
		}
		b, err := os.ReadFile(filepath.Join(outs[i], TuneDir, tuneKey(1, 32)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &got[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got[0].Grid == nil || len(got[0].Grid.Trials) != 4 {
		t.Fatalf("grid %+v, want 2 rates × 2 seeds", got[0].Grid)
	}
	if !reflect.DeepEqual(got[0].Grid, got[1].Grid) || got[0].Result.LR != got[1].Result.LR {
		t.Errorf("two at a time:\n%+v\none at a time:\n%+v", got[1].Grid, got[0].Grid)
	}
	for _, tr := range got[0].Grid.Trials {
		name := filepath.Join(TuneDir, tuneKey(1, 32), fmt.Sprintf("lr%g-4steps-seed%d", tr.LR, tr.Seed), "final", "model.safetensors")
		a, errA := os.ReadFile(filepath.Join(outs[0], name))
		b, errB := os.ReadFile(filepath.Join(outs[1], name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the weights differ between one and two at a time (%v, %v)", name, errA, errB)
		}
	}
}

// TestTuneFullRefusals: a full-horizon [tune] or a tier that cannot run is refused, naming the key.
func TestTuneFullRefusals(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`seeds = [1000, 1001]`, `seeds = [1000]`, "at least 2 seeds"},
		{`lrs = [2e-3, 4e-3]`, `lrs = [4e-3, 2e-3]`, "increasing"},
		{`mode = "full"`, `mode = "fast"`, `mode "fast"`},
		{`transfer_exponent = 1`, `transfer_exponent = 9`, "transfer_exponent"},
		{`transfer_exponent = 1`, "transfer_exponent = 1\ncenter = 4e-3", "belong to mode"},
		{`groups = ["gamma", "sizes"]`, `groups = ["gamma", "nope"]`, `no group "nope"`},
		{`groups = ["gamma", "sizes"]`, `groups = []`, "at least one group"},
		{"seeds = [0, 1]\nwidths = [16]", "seeds = [0, 1]\nmin_seeds = 3\nwidths = [16]", "min_seeds 3"},
		{`gammas = [0.5, 1]
anchor`, `gammas = [-1]
anchor`, "positive"},
	} {
		_, err := Parse([]byte(strings.Replace(fullPlan, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: %v, want an error with %q", tc.from, tc.to, err, tc.want)
		}
	}
}

// TestSeedsWithinBudget: a tier with min_seeds runs the most of its seeds whose expected wall time fits the
// budget at the horizon, never fewer than min_seeds (and says so when even those do not fit); a sizing on
// record decides for every later process.
func TestSeedsWithinBudget(t *testing.T) {
	// The short tier at three budgets (a budget must name a tier: checkTierBudget), each buying its own seeds.
	short := "seeds = [0, 1, 2, 3, 4, 5, 6, 7]\nmin_seeds = 2\nwidths = [16]\ntune_widths = [32, 16]\ngroups = [\"gamma\", \"sizes\"]\ngammas = [0.5, 1]\nanchor = false\n"
	text := strings.Replace(fullPlan, "seeds = [0, 1]\nwidths = [16]", "seeds = [0, 1, 2, 3, 4, 5, 6, 7]\nmin_seeds = 2\nwidths = [16]", 1)
	text = strings.Replace(text, "[[tier]]\nname = \"long\"", "[[tier]]\nname = \"short40\"\nminutes = 40\n"+short+"[[tier]]\nname = \"short60\"\nminutes = 60\n"+short+"[[tier]]\nname = \"long\"", 1)
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	const tps = 300 // tokens/s: slow enough that the budget binds
	var last int
	for _, budget := range []time.Duration{30 * time.Minute, 40 * time.Minute, 60 * time.Minute} {
		var log strings.Builder
		d, err := Describe(p, Options{Out: t.TempDir(), Budget: budget, Log: &log}, tps)
		if err != nil {
			t.Fatal(err)
		}
		n := len(d.Seeds)
		if n < 2 || n > 8 || n < last || d.Estimate.Wall > budget && n != 2 {
			t.Errorf("%s: %d seeds, expected wall time %s", budget, n, d.Estimate.Wall)
		}
		if n < 8 {
			// One more seed would not have fitted.
			more := Options{Out: t.TempDir(), Budget: budget, Seeds: SeedRange(n + 1)}
			if e, err := Describe(p, more, tps); err != nil || e.Estimate.Wall <= budget {
				t.Errorf("%s: %d seeds chosen, but %d fit (%v, %s)", budget, n, n+1, err, e.Estimate.Wall)
			}
		}
		last = n
	}
	if last == 2 {
		t.Fatal("the budgets never bought more than the fewest seeds: the test does not test the choice")
	}
	// A sizing on record (another process's, or the run being resumed) decides.
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, budget.SizingFile), []byte(`{"budget":"30m0s","seeds":5,"steps":4,"probe_tokens_per_s":300}`), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Describe(p, Options{Out: out, Budget: 30 * time.Minute}, tps)
	if err != nil || len(d.Seeds) != 5 {
		t.Errorf("with a sizing of 5 seeds on record: %d seeds, %v", len(d.Seeds), err)
	}
	// Run's sizing: the seed count is part of it. A job-array task finding none on record is refused (tasks
	// that chose apart would index different runs); with one on record every process runs its seeds.
	tier := p.TierNamed("short")
	task := Options{Out: t.TempDir(), Budget: 30 * time.Minute, Task: true, Seeds: tier.Seeds}
	if _, err := size(context.Background(), p, &Outcome{Plan: p, Tier: tier}, &task, true); err == nil || !strings.Contains(err.Error(), "no sizing of 30m0s is on record") {
		t.Errorf("a task without a sizing on record: %v", err)
	}
	later := Options{Out: out, Budget: 30 * time.Minute, Seeds: tier.Seeds}
	if steps, err := size(context.Background(), p, &Outcome{Plan: p, Tier: tier}, &later, true); err != nil || steps != 4 || len(later.Seeds) != 5 {
		t.Errorf("with a sizing of 5 seeds on record: %d steps, seeds %v, %v", steps, later.Seeds, err)
	}
}
