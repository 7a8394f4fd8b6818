package experiment

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/arch"
)

const tierPlan = `name = "t"
seeds = [0]
[budget]
minutes = 30
efficiency = 1
min_steps = 1
[[tier]]
name = "short"
minutes = 30
seeds = [0, 1, 2]
widths = [16, 24]
smoke = "too short"
[[tier]]
name = "long"
minutes = 120
seeds = [0, 1, 2, 3]
widths = [16, 24, 48]
tune_widths = [16, 48]
[tune]
gammas = [0.5, 1]
widths = [16, 32]
center = 4e-3
values = 4
steps_div = 2
min_steps = 2
[data]
corpus = "embedded"
vocab = 512
[base]
"model.preset" = "tiny"
"model.hidden_size" = 32
[[group]]
name = "emu"
lr = "tuned"
emulate_eps = 2048
axes = { "init.gamma" = [0.5, 1] }
[[group]]
name = "ladder"
lr = "tuned"
ladder = true
axes = { "init.gamma" = [1], "model.hidden_size" = [64] }
[[group]]
name = "pilot"
seeds = [100]
axes = { "init.gamma" = [0.5] }
`

// TestTiers: a budget selects its tier (seeds, ladder widths, LR-sweep widths, smoke test); derived groups
// run as arms with the emulated ε of each arm's own γ and width, the tuned LR of its γ (tune.AtWidth between
// the swept widths) and a group's own seeds.
func TestTiers(t *testing.T) {
	p, err := Parse([]byte(tierPlan))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		budget time.Duration
		tier   string
		seeds  int
	}{{10 * time.Minute, "short", 3}, {30 * time.Minute, "short", 3}, {119 * time.Minute, "short", 3}, {2 * time.Hour, "long", 4}, {48 * time.Hour, "long", 4}} {
		if got := p.TierFor(tc.budget); got == nil || got.Name != tc.tier || len(p.SeedsFor(tc.budget)) != tc.seeds {
			t.Errorf("%s: tier %+v, seeds %v; want %s with %d seeds", tc.budget, got, p.SeedsFor(tc.budget), tc.tier, tc.seeds)
		}
	}
	d, err := Describe(p, Options{Out: t.TempDir(), Budget: 2 * time.Hour}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	var ladder []int
	for _, a := range d.Arms {
		switch a.Group {
		case "emu":
			want, _ := arch.EmulatedEps(arch.DefaultNormEps, a.Gamma, 32, 2048)
			if math.Abs(a.Eps-want) > 1e-9*want || a.LR != "tuned" {
				t.Errorf("emu γ=%g: ε %g LR %s, want ε_eq %g, tuned", a.Gamma, a.Eps, a.LR, want)
			}
		case "ladder":
			ladder = append(ladder, a.Width)
		case "pilot":
			if !slices.Equal(a.Seeds, []uint64{100}) || a.LR == "tuned" {
				t.Errorf("pilot seeds %v LR %s", a.Seeds, a.LR)
			}
		}
		if a.Group != "pilot" && len(a.Seeds) != 4 {
			t.Errorf("%s/%s: seeds %v, want the long tier's 4", a.Group, a.Arm, a.Seeds)
		}
	}
	if !slices.Equal(ladder, []int{16, 24, 48}) || !slices.Equal(d.TuneWidths, []int{16, 48}) {
		t.Errorf("ladder %v, sweep widths %v; want the long tier's 16 24 48 and 16 48", ladder, d.TuneWidths)
	}
	short, err := Describe(p, Options{Out: t.TempDir(), Budget: 30 * time.Minute}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := short.Write(&b); err != nil || !strings.Contains(b.String(), "SMOKE TEST: too short") || !slices.Equal(short.TuneWidths, []int{16, 32}) ||
		!strings.Contains(b.String(), "matmul precision: f32 in every arm") {
		t.Errorf("short tier: %v, sweep widths %v\n%s", err, short.TuneWidths, b.String())
	}
	// The tuned LR of a width between or beyond the swept ones.
	out := &Outcome{Tier: p.TierFor(2 * time.Hour), Tuned: map[string]Tuned{}}
	for _, w := range []int{16, 48} {
		for _, g := range []float64{0.5, 1} {
			tr := Tuned{Gamma: g, Width: w}
			tr.Result.LR = 8e-3 * 16 / float64(w) * g
			out.Tuned[tuneKey(g, w)] = tr
		}
	}
	if lr, err := out.TunedLR(p, 1, 48); err != nil || lr != 8e-3/3 {
		t.Errorf("LR at a swept width: %g, %v", lr, err)
	}
	if lr, err := out.TunedLR(p, 1, 24); err != nil || math.Abs(lr-8e-3*16/24) > 1e-12 {
		t.Errorf("LR between swept widths: %g, %v; want the log-log line's %g", lr, err, 8e-3*16/24)
	}
	if _, err := out.TunedLR(p, 0.75, 24); err == nil {
		t.Error("an unswept γ got a learning rate")
	}
}

// TestTierRefusals: bad tiers and tune sections are refused naming what is wrong.
func TestTierRefusals(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`minutes = 120`, `minutes = 20`, "increasing minutes"},
		{`tune_widths = [16, 48]`, `tune_widths = [16]`, "two widths"},
		{`values = 4`, `values = 3`, "values ≥ 4"},
		{`lr = "tuned"
emulate_eps`, `lr = "fast"
emulate_eps`, `lr "fast"`},
	} {
		_, err := Parse([]byte(strings.Replace(tierPlan, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: %v, want an error with %q", tc.from, tc.to, err, tc.want)
		}
	}
	noTune := tierPlan[:strings.Index(tierPlan, "[tune]")] + tierPlan[strings.Index(tierPlan, "[data]"):]
	if _, err := Parse([]byte(noTune)); err == nil || !strings.Contains(err.Error(), "no [tune]") {
		t.Errorf("tuned group without [tune]: %v", err)
	}
}
