package reproduce

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/experiment"
)

// studyPlan is a small plan with [primaries] and two tiers, to which a test adds keys (the plan's own text).
const studyPlan = `
name = "p"
seeds = [0, 1, 2]
[budget]
minutes = 30
efficiency = 0.8
min_steps = 1
[[tier]]
name = "short"
minutes = 30
[[tier]]
name = "long"
minutes = 120
[data]
corpus = "embedded"
vocab = 512
[base]
"model.preset" = "tiny"
[[group]]
name = "g"
axes = { "init.gamma" = [0.5, 1] }
[primaries]
h1 = "gain at 128"
h2 = "slope of the gain"
width = 128
`

// parseStudy parses studyPlan with extra appended and reads its design.
func parseStudy(extra string) (*experiment.Plan, design, error) {
	p, err := experiment.Parse([]byte(studyPlan + extra))
	if err != nil {
		return nil, design{}, err
	}
	d, err := designOf(p)
	return p, d, err
}

// designOfText parses a plan text and reads its design, failing the test on an error.
func designOfText(t *testing.T, text string) (*experiment.Plan, design) {
	t.Helper()
	p, err := experiment.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	d, err := designOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, d
}

// reproduceDesign is the reproduction's own plan (plan.toml) and its design.
func reproduceDesign(t *testing.T) (*experiment.Plan, design) {
	t.Helper()
	p, err := Plan()
	if err != nil {
		t.Fatal(err)
	}
	d, err := designOf(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, d
}

// TestPrimariesParse: [primaries]'s study keys are checked and defaulted here, with the horizon keys
// experiment read, and δ is the plan's or derived from the prior ladder slope.
func TestPrimariesParse(t *testing.T) {
	noH2 := strings.Replace(studyPlan, `h2 = "slope of the gain"`, "", 1)
	for _, c := range []struct {
		name, plan, extra, err string
	}{
		{"derived δ", studyPlan, "effective_size = 0.44\nprior_ladder_slope = -0.053\n", ""},
		{"explicit δ", studyPlan, "delta = 0.02\n", ""},
		{"no δ", studyPlan, "", "give delta, or effective_size and prior_ladder_slope"},
		{"bad α", studyPlan, "delta = 0.02\nalpha = 0.7\n", "primaries.alpha = 0.7"},
		{"positive slope", studyPlan, "effective_size = 0.44\nprior_ladder_slope = 0.05\n", "primaries.prior_ladder_slope"},
		{"nan horizon", studyPlan, "delta = 0.02\ntokens_per_param = nan\n", "primaries.tokens_per_param"},
		{"unknown key", studyPlan, "delta = 0.02\ndelat = 1\n", "unknown key primaries.delat"},
		{"no h2", noH2, "delta = 0.02\n", "h1 and h2"},
	} {
		p, err := experiment.Parse([]byte(c.plan + c.extra))
		var d design
		if err == nil {
			d, err = designOf(p)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		pr := d.primaries
		if pr.Alpha != 0.05 || pr.MinWidths != 4 || pr.MinSpan != 2.5 || pr.PlateauTolerance != 0.05 || pr.Width != 128 {
			t.Errorf("%s: defaults %+v", c.name, pr)
		}
		want := 0.02
		if pr.Delta == 0 {
			want = 0.053 * math.Log(1.44)
		}
		if math.Abs(pr.DeltaH1()-want) > 1e-12 || math.Abs(pr.DeltaH2(2)-want/2) > 1e-12 {
			t.Errorf("%s: δ %g, δ_H2(2) %g; want %g, %g", c.name, pr.DeltaH1(), pr.DeltaH2(2), want, want/2)
		}
	}
}

// The power block says when δ cannot be reached, and how many seeds would reach it.
func TestPrimariesPowerStatesReachability(t *testing.T) {
	_, d, err := parseStudy("delta = 0.02\nprior_sd_h1 = 0.01\nprior_sd_h2 = 0.5\n")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	d.primaries.Write(&b, 8, 2)
	out := b.String()
	pw := d.primaries.PowerOf(8, 2)
	if pw[0].SeedsNeeded < 2 || pw[0].SeedsNeeded > 8 || pw[0].MDE > 0.02 {
		t.Errorf("H1 with SD 0.01 at 8 seeds: %+v, want δ 0.02 reached", pw[0])
	}
	if pw[1].SeedsNeeded != 0 {
		t.Errorf("H2 with SD 0.5: needs %d seeds, want unreachable (0)", pw[1].SeedsNeeded)
	}
	for _, want := range []string{"H1: gain at 128", "H2: slope of the gain", "reached (", "NOT REACHABLE"} {
		if !strings.Contains(out, want) {
			t.Errorf("power block lacks %q:\n%s", want, out)
		}
	}
}

// TestPrimariesFollowTheTier: a tier's tokens_per_param is the primaries' horizon under that tier only.
func TestPrimariesFollowTheTier(t *testing.T) {
	text := strings.Replace(studyPlan, "name = \"long\"", "name = \"long\"\ntokens_per_param = 20", 1) + "delta = 0.02\ntokens_per_param = 5\n"
	p, d := designOfText(t, text)
	short, long := d.primaries.at(p.Tiered(p.TierFor(30*time.Minute))), d.primaries.at(p.Tiered(p.TierFor(2*time.Hour)))
	if short.TokensPerParam != 5 || long.TokensPerParam != 20 || d.primaries.TokensPerParam != 5 {
		t.Errorf("tokens per parameter %g (short), %g (long), %g (plan); want 5, 20, 5", short.TokensPerParam, long.TokensPerParam, d.primaries.TokensPerParam)
	}
}

// TestAnchorSpec: [anchor] is read whole, and a tier's anchor_steps replace its steps under that tier only
// (anchor = false leaves the grid out).
func TestAnchorSpec(t *testing.T) {
	text := strings.Replace(studyPlan, "[data]", "[anchor]\ngammas = [0.5, 1]\ndepth = 2\nlrs = [3e-4, 1e-3]\ndim = 128\nffn = 384\nhead_dim = 64\nbatch = 128\nexamples = 100000\nsteps = 300\n\n[data]", 1)
	text = strings.Replace(text, "name = \"long\"", "name = \"long\"\nanchor_steps = 1000", 1)
	p, d := designOfText(t, text+"delta = 0.02\n")
	want := AnchorSpec{Gammas: []float64{0.5, 1}, Depth: 2, LRs: []float64{3e-4, 1e-3}, Dim: 128, FFN: 384, HeadDim: 64, Batch: 128, Examples: 100000, Steps: 300}
	if d.anchor == nil || fmt.Sprint(*d.anchor) != fmt.Sprint(want) {
		t.Fatalf("anchor %+v, want %+v", d.anchor, want)
	}
	if s, l := d.anchor.steps(d.keys(p.TierFor(30*time.Minute))), d.anchor.steps(d.keys(p.TierFor(2*time.Hour))); s != 300 || l != 1000 {
		t.Errorf("anchor steps %d (short), %d (long); want 300, 1000", s, l)
	}
	if n := d.anchor.steps(tierKeys{NoAnchor: true, AnchorSteps: 1000}); n != 0 {
		t.Errorf("a tier with anchor = false: %d steps, want none", n)
	}
	_, none, err := parseStudy("delta = 0.02\n")
	if err != nil || none.anchor != nil || none.anchor.steps(tierKeys{}) != 0 {
		t.Errorf("a plan without [anchor]: %+v, %v", none.anchor, err)
	}
	for _, c := range []struct{ anchor, want string }{
		{"gammas = [0.5]\ndepth = 2\nlrs = [1e-3]\ndim = 16\nffn = 32\nhead_dim = 8\nbatch = 8\nexamples = 64\nsteps = 2\n", "anchor: want ≥ 2 gammas"},
		{"gammas = [0.5, 1]\ndepth = 2\nlrs = [-1e-3]\ndim = 16\nffn = 32\nhead_dim = 8\nbatch = 8\nexamples = 64\nsteps = 2\n", "anchor: lr -0.001"},
		{"gammas = [0.5, 1]\ndepht = 2\n", "unknown key anchor.depht"},
	} {
		if _, _, err := parseStudy("delta = 0.02\n[anchor]\n" + c.anchor); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("[anchor] %q: %v, want an error containing %q", c.anchor, err, c.want)
		}
	}
}

// TestThirtyMinuteTier: the reproduce plan's 30 min tier has a horizon of its own (not the primaries'), a scoring
// subsample (the design's tier keys) and the smoke-test statement, and runs every group.
func TestThirtyMinuteTier(t *testing.T) {
	p, d := reproduceDesign(t)
	tr := p.TierNamed("30m")
	if tr == nil {
		t.Fatal("no 30m tier")
	}
	k := d.keys(tr)
	if !(tr.TokensPerParam > 0) || tr.TokensPerParam >= p.Horizon.TokensPerParam || k.ScoreWindows < 1 || k.OODWindows < 1 || tr.Smoke == "" || tr.Groups != nil {
		t.Errorf("30m tier: %+v, keys %+v", *tr, k)
	}
	if q := p.Tiered(tr); q.Horizon.TokensPerParam != tr.TokensPerParam || len(q.Groups) != len(p.Groups) {
		t.Errorf("tiered: horizon %g, %d of %d groups", q.Horizon.TokensPerParam, len(q.Groups), len(p.Groups))
	}
}

// TestTierKeys: the design reads its keys of each [[tier]] by tier name (anchor = false, anchor_steps,
// score_windows, ood_windows); a negative count or a tier key neither the design nor experiment reads is an
// error naming it.
func TestTierKeys(t *testing.T) {
	text := strings.Replace(studyPlan, "name = \"long\"", "name = \"long\"\nanchor = false\nscore_windows = 4\nood_windows = 2", 1) + "delta = 0.02\n"
	p, d := designOfText(t, text)
	if k := d.keys(p.TierNamed("long")); k != (tierKeys{NoAnchor: true, ScoreWindows: 4, OODWindows: 2}) {
		t.Errorf("long tier keys %+v", k)
	}
	if k := d.keys(nil); k != (tierKeys{}) {
		t.Errorf("no tier: keys %+v", k)
	}
	for _, c := range []struct{ key, want string }{
		{"anchor_steps = -1", "anchor_steps -1: want ≥ 0"},
		{"score_windows = -2", "score_windows -2"},
		{"anchor_stpes = 5", "unknown key tier.anchor_stpes"},
	} {
		bad := strings.Replace(studyPlan, "name = \"long\"", "name = \"long\"\n"+c.key, 1) + "delta = 0.02\n"
		p, err := experiment.Parse([]byte(bad))
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		if _, err := designOf(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.key, err, c.want)
		}
	}
}
