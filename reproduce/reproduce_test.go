package reproduce

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// tinyPlan is the built-in reproduce plan shrunk to seconds: one layer, widths 16 to 40, a 32-token context,
// a 512-token vocabulary and LR-sweep trials of a few steps. Everything else (groups, tiers, the sweep's γ
// grid and rules) is the built-in plan's.
func tinyPlan(t *testing.T) *experiment.Plan {
	t.Helper()
	p, err := Plan()
	if err != nil {
		t.Fatal(err)
	}
	text := string(p.Text)
	for _, r := range [][2]string{
		// The 30m tier as it was before it got a horizon of its own (every γ, both LR-sweep widths, 3 seeds):
		// this test holds the wiring of every arm and grid; TestThirtyMinuteTier holds the tier itself.
		{"seeds = [0, 1]\nwidths = [64, 96, 160]\ntune_widths = [128]\ngammas = [0.5, 1]\ntokens_per_param = 0.1\n" +
			"tune_lrs = { \"0.5\" = [2e-3, 4e-3], \"1\" = [2e-3, 4e-3] }\nanchor_steps = 50\nscore_windows = 16\nood_windows = 16\n",
			"seeds = [0, 1, 2]\nwidths = [64, 96, 160]\nanchor_steps = 100\n"},
		{`"model.max_position_embeddings" = 128`, `"model.max_position_embeddings" = 32` + "\n" + `"model.hidden_size" = 32` + "\n" + `"model.num_hidden_layers" = 1`},
		{`"train.batch_size" = 16`, `"train.batch_size" = 4`},
		{`vocab = 4096`, `vocab = 512`},
		{`widths = [64, 96, 160]`, `widths = [16, 24, 40]`},
		{`widths = [128, 64]`, `widths = [32, 16]`},
		{`widths = [48, 64, 96]`, `widths = [16, 24, 40]`},
		{`tune_widths = [128, 48]`, `tune_widths = [32, 16]`},
		// The anchor grid at a tiny shape, 2 steps per cell at the 30m tier (its wiring, not its phases).
		{`anchor_steps = 100`, `anchor_steps = 2`},
		{`dim = 128`, `dim = 16`},
		{`ffn = 384`, `ffn = 32`},
		{`head_dim = 64`, `head_dim = 8`},
		{`batch = 128`, `batch = 8`},
		{`examples = 100000`, `examples = 64`},
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("built-in plan lacks %q", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	tiny, err := experiment.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return tiny
}

// TestReproduceEndToEnd runs the tiny plan for 4 steps per run and 3 seeds under the 30m tier: the LR sweep
// ran for every γ at both widths, the Evidence has the shape the verdicts need (3 seeds per arm, ≥ 4 widths,
// each arm at its own tuned LR, the no-fix arms at their own γ's emulated ε, a reference model for claim 4, a
// pilot), every number reaches claims.json, the figures are written, and a second call (as after an
// interruption) trains and scores nothing new and gives the same claims.
func TestReproduceEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 64 tiny runs and 10 LR sweeps")
	}
	out := t.TempDir()
	var log bytes.Buffer
	o := Options{Out: out, Budget: 30 * time.Minute, Steps: 4, CompareWindows: 4, ProbeTest: 4, OODWindows: 2, Plan: tinyPlan(t), Log: &log}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "SMOKE TEST") || !strings.Contains(log.String(), "expected wall time") {
		t.Errorf("the plan was not printed before running:\n%.2000s", log.String())
	}
	if res.Tier != "30m" || res.Smoke == "" || res.Seeds != 3 {
		t.Errorf("tier %q smoke %q seeds %d, want the 30m smoke-test tier with 3 seeds", res.Tier, res.Smoke, res.Seeds)
	}
	ev := res.Inputs
	if len(res.Tuned) != 10 {
		t.Fatalf("%d LR sweeps, want 5 γ × 2 widths", len(res.Tuned))
	}
	lrAt := map[float64]float64{}
	for _, tr := range res.Tuned {
		if len(tr.Result.Curve) < 4 || !(tr.Result.LR > 0) {
			t.Errorf("sweep γ=%g d=%d: %d trials, LR %g", tr.Gamma, tr.Width, len(tr.Result.Curve), tr.Result.LR)
		}
		if tr.Width == ev.Width {
			lrAt[tr.Gamma] = tr.Result.LR
		}
	}
	if ev.Width != 32 || len(ev.Gamma) != 5 {
		t.Fatalf("γ grid at width %d with %d arms, want width 32 and 5 arms", ev.Width, len(ev.Gamma))
	}
	for _, g := range ev.Gamma {
		if len(g.Seeds) != 3 || g.LR != lrAt[g.Gamma] {
			t.Errorf("γ=%g: %d seeds at LR %g, want 3 at its tuned LR %g", g.Gamma, len(g.Seeds), g.LR, lrAt[g.Gamma])
		}
		for s, l := range g.Seeds {
			if !(l.Overall > 0) || len(l.ByLanguage) != 2 || len(g.OOD[s]) != 3 {
				t.Errorf("γ=%g seed %d: loss %+v, OOD %v; want overall, en and zh, and 3 OOD texts", g.Gamma, s, l, g.OOD[s])
			}
		}
	}
	if len(ev.SharedLR) != 2 || ev.SharedLR[0].LR != 2e-3 || len(ev.SharedLR[0].Seeds) != 3 {
		t.Errorf("shared-LR arms %+v, want γ 0.5 and 1 at 2e-3 with 3 seeds", ev.SharedLR)
	}
	for _, a := range []*ArmEvidence{ev.NoFix05, ev.NoFix1} {
		if a == nil || len(a.Seeds) != 3 {
			t.Fatalf("no-fix arm %+v, want 3 seeds", a)
		}
	}
	for _, r := range res.RunScores {
		if r.Role == RoleEmulated {
			want, _ := arch.EmulatedEps(1e-5, r.Gamma, r.Width, 2048)
			if math.Abs(r.Eps-want) > 1e-12*want {
				t.Errorf("%s: ε %g, want ε_eq %g of its own γ", r.Dir, r.Eps, want)
			}
		}
	}
	if len(ev.Ladder) < MinWidths {
		t.Fatalf("ladder of %d widths, want ≥ %d", len(ev.Ladder), MinWidths)
	}
	var ws []int
	for _, r := range ev.Ladder {
		ws = append(ws, r.Width)
		if len(r.G05.Seeds) != 3 || len(r.G1.Seeds) != 3 || !(r.G05.LR > 0) || !(r.N > 0) {
			t.Errorf("rung %d: %d and %d seeds, LR %g, N %g", r.Width, len(r.G05.Seeds), len(r.G1.Seeds), r.G05.LR, r.N)
		}
	}
	if !slices.Equal(ws, []int{16, 24, 32, 40}) {
		t.Errorf("ladder widths %v, want 16 24 32 40", ws)
	}
	if len(ev.Tokens) != 3 || ev.TokenRef == "" {
		t.Fatalf("claim 4: %d seeds of per-token losses, reference %q; want 3 and a reference model", len(ev.Tokens), ev.TokenRef)
	}
	for _, tl := range ev.Tokens {
		if len(tl.A) == 0 || len(tl.A) != len(tl.Ref) || len(tl.B) != len(tl.Ref) {
			t.Errorf("seed %d: %d, %d, %d per-token losses", tl.Seed, len(tl.A), len(tl.B), len(tl.Ref))
		}
	}
	if ev.Probes == nil || ev.Probes.Pilot == nil || len(ev.Probes.G05) != 3 {
		t.Errorf("probes %+v, want a pilot and 3 seeds per arm", ev.Probes)
	}
	// H1, H2 (the primaries), then claims 1 (probes), 2, 3, 4, 1 (anchor) and 5.
	if len(res.Claims) != 8 {
		t.Fatalf("%d claims, want 8", len(res.Claims))
	}
	if res.Claims[0].ID != "H1" || res.Claims[1].ID != "H2" || !strings.Contains(res.Primaries, "H1:") {
		t.Errorf("the primaries are not first: %q, %q; statement %q", res.Claims[0].ID, res.Claims[1].ID, res.Primaries)
	}
	if an := res.Claims[6]; an.N != 1 || !strings.Contains(an.Text, "anchor-function") || an.Evidence == "" || an.Detail == nil {
		t.Errorf("claim 7 is not the anchor claim: %+v", an)
	}
	if a := ev.Anchor; a == nil || len(a.Cells) != 2*2*3 || len(a.Phase) != 2 || a.Grid.Budget.Steps != 2 {
		t.Errorf("anchor evidence %+v, want 12 cells (γ 0.5, 1 × 2 LRs × 3 seeds) of 2 steps in 2 phase cells", a)
	}
	for _, c := range res.Claims[:7] {
		if !strings.Contains(c.Reason, "smoke-test budget") {
			t.Errorf("claim %d: reason %q does not say the budget is a smoke test", c.N, c.Reason)
		}
	}
	for _, a := range res.Arms {
		if a.Seeds < 1 || math.IsNaN(a.NormSaturation) || math.IsNaN(a.SinkRate) {
			t.Errorf("arm %s/%s: %+v, want saturation and sink rate from its final diagnostics", a.Group, a.Arm, a)
		}
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil || !strings.Contains(text.String(), "sink rate") {
		t.Errorf("terminal output: %v\n%s", err, text.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "claims.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"claims", "inputs", "lr_sweeps", "arms", "runs_scored", "tier", "smoke_test"} {
		if back[k] == nil {
			t.Errorf("claims.json lacks %q", k)
		}
	}
	fig, err := os.ReadFile(filepath.Join(out, FiguresFile))
	if err != nil || strings.Count(string(fig), `data-figure="lr-curves-`) != 2 || strings.Count(string(fig), `data-figure="gain-vs-size"`) != 1 ||
		!strings.Contains(string(fig), `data-figure="loss-curves-`) || !strings.Contains(string(fig), "sink rate") {
		t.Errorf("figures: %v, %d plots (want 2 LR-curve plots, the gain figure and loss curves per arm)", err, strings.Count(string(fig), "<svg"))
	}
	// Resume: nothing is trained, swept or scored again (a finished run resumed re-saves its final model and
	// rewrites its metrics unchanged; its lines and the cached scores stay).
	stamp := func() map[string]string {
		m := map[string]string{}
		filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			switch {
			case fi.Name() == "metrics.jsonl":
				b, _ := os.ReadFile(p)
				m[p] = fmt.Sprint(bytes.Count(b, []byte("\n")), " lines")
			case fi.Name() == string(train.VerdictScore) || fi.Name() == string(train.SelectionScore) || filepath.Base(filepath.Dir(p)) == experiment.TuneDir:
				m[p] = fi.ModTime().String()
			}
			return nil
		})
		return m
	}
	if len(res.RunTimes) != res.Runs {
		t.Errorf("%d run times, want one per run of the plan (%d)", len(res.RunTimes), res.Runs)
	}
	for _, rt := range res.RunTimes {
		if rt.Started == nil || rt.Finished == nil || rt.Finished.Before(*rt.Started) {
			t.Errorf("%s: started %v, finished %v; want both, in order", rt.Dir, rt.Started, rt.Finished)
		}
	}
	if res.Amendments != nil {
		t.Errorf("amendments %+v before any was written", res.Amendments)
	}
	// An amendment written after the plan was printed reaches claims.json and the verdicts' header.
	amended := "Amendment of 2026-12-04 11:51 UTC: the grid may extend 3 rates past an edge.\n"
	if err := os.WriteFile(filepath.Join(out, "plan-amendment.txt"), []byte(amended), 0o644); err != nil {
		t.Fatal(err)
	}
	before := stamp()
	log.Reset()
	again, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	if len(again.Amendments) != 1 || again.Amendments[0].Text != amended || again.WriteText(&text) != nil || !strings.Contains(text.String(), "AMENDED after the plan was printed: 2026-12-04 11:51 UTC") {
		t.Errorf("amendments %+v; verdicts:\n%.600s", again.Amendments, text.String())
	}
	if len(again.RunTimes) != len(res.RunTimes) || *again.RunTimes[0].Finished != *res.RunTimes[0].Finished {
		t.Errorf("resume changed the run times: %+v, were %+v", again.RunTimes[0], res.RunTimes[0])
	}
	after := stamp()
	if len(after) != len(before) {
		t.Errorf("resume: %d files, had %d", len(after), len(before))
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("resume changed %s: %s, was %s", p, after[p], v)
		}
	}
	if strings.Contains(log.String(), "trial lr") {
		t.Error("resume ran LR-sweep trials again")
	}
	for i := range res.Claims {
		if again.Claims[i].Verdict != res.Claims[i].Verdict || again.Claims[i].Evidence != res.Claims[i].Evidence {
			t.Errorf("claim %d changed on resume", res.Claims[i].N)
		}
	}
}

// TestPrintPlans: every budget's printed plan (at a given throughput, no probe) states the primaries first, lists
// its tier's seeds and widths, the LR sweep, the anchor grid with its cost and the time arithmetic; 30m says it is
// a smoke test; 24h reaches width 256; every tier trains the horizon's steps and says when that is over budget.
func TestPrintPlans(t *testing.T) {
	for _, tc := range []struct {
		budget time.Duration
		tier   string
		seeds  int
		widest int
		smoke  bool
		// anchorSteps are the anchor grid's steps per cell (≥ 1000 from 2h, where the phases appear).
		anchorSteps int
	}{
		{30 * time.Minute, "30m", 2, 160, true, 50},
		{2 * time.Hour, "2h", 0, 128, false, 0},      // the primaries only: no anchor grid; seeds chosen within the budget
		{8 * time.Hour, "8h", 0, 128, false, 0},      // H1 at 20 tokens per parameter: width 128 only, no anchor grid
		{24 * time.Hour, "24h", 0, 240, false, 1500}, // H1 at 20 and the ladder 96-240 at its own horizon, 5
	} {
		d, err := Describe(Options{Out: t.TempDir(), Budget: tc.budget}, 20000)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := d.Write(&b); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		if tc.seeds == 0 { // chosen: the most that fit, or the tier's fewest
			lo, hi := d.Tier.MinSeeds, len(d.Tier.Seeds)
			if n := len(d.Seeds); n < lo || n > hi || d.Estimate.Wall > tc.budget && n != lo {
				t.Errorf("%s: %d seeds (tier %d … %d), expected wall time %s", tc.budget, n, lo, hi, d.Estimate.Wall)
			}
			tc.seeds = len(d.Seeds)
		}
		if d.Tier.Name != tc.tier || len(d.Seeds) != tc.seeds || strings.Contains(s, "SMOKE TEST") != tc.smoke {
			t.Errorf("%s: tier %s, %d seeds, smoke %v:\n%s", tc.budget, d.Tier.Name, len(d.Seeds), strings.Contains(s, "SMOKE TEST"), s)
		}
		widest, widths := 0, map[int]bool{}
		for _, a := range d.Arms {
			widest = max(widest, a.Width)
			if a.Group == "sizes" || a.Group == "gamma" { // the built-in plan's ladder and γ grid groups
				widths[a.Width] = true
			}
			if a.Group != "probe-pilot" && len(a.Seeds) != tc.seeds {
				t.Errorf("%s: arm %s/%s has %d seeds", tc.budget, a.Group, a.Arm, len(a.Seeds))
			}
		}
		if widest != tc.widest || len(widths) < MinWidths && tc.tier != "8h" {
			t.Errorf("%s: widest %d (want %d), ladder widths %v", tc.budget, widest, tc.widest, widths)
		}
		wants := []string{"LR grid (package tune, at the full horizon)", "throughput probe 20000 tokens/s", "expected wall time"}
		anchorLine := fmt.Sprintf("anchor: claim 1 (reasoning) on the anchor-function tasks: γ [0.5 1] × depth [2] × LR [0.0003 0.001] = 4 cells per seed × %d steps × 128 sequences, width 128, one head (anchor), on seeds %v", tc.anchorSteps, d.Seeds)
		if tc.tier == "24h" { // H2's ladder at its own horizon, every rung ≥ 1,000 steps, tuned at both ends
			wants = append(wants, "ladder at its own horizon: 5 tokens per non-embedding parameter", "rung width 96: N = 480096, 1173 steps",
				"rung width 240: N = 2997360, 7319 steps", "at both ends (widths [96 240])")
		}
		if tc.anchorSteps > 0 {
			wants = append(wants, anchorLine, "(taken from the budget)")
		} else if strings.Contains(s, "anchor:") {
			t.Errorf("%s: the tier runs the anchor grid:\n%s", tc.budget, s)
		}
		for _, want := range wants {
			if !strings.Contains(s, want) {
				t.Errorf("%s: plan lacks %q:\n%s", tc.budget, want, s)
			}
		}
		// Horizon before breadth: every tier trains the primaries' horizon, and a plan that does not fit its
		// budget at that horizon says so instead of shortening the runs.
		if d.Estimate.HorizonParams == 0 || d.Estimate.Steps != firstSteps(t, d) {
			t.Errorf("%s: %d steps, horizon N %d: not sized by the horizon", tc.budget, d.Estimate.Steps, d.Estimate.HorizonParams)
		}
		if over := d.Estimate.Wall > tc.budget; over != strings.Contains(s, "OVER BUDGET") {
			t.Errorf("%s: expected wall time %s, and the plan says over budget: %v", tc.budget, d.Estimate.Wall, !over)
		}
		if !strings.Contains(s, "primary comparisons (pre-registered") || strings.Index(s, "H1:") > strings.Index(s, "plan reproduce") {
			t.Errorf("%s: the primaries are not stated before the plan's numbers:\n%s", tc.budget, s)
		}
	}
}

// TestPlanGroups: the reproduce plan's groups declare the roles the claims read, in that order; a misspelt role is refused, and its γ
// grid and LR sweep are the gammas the claims compare.
func TestPlanGroups(t *testing.T) {
	p, err := Plan()
	if err != nil {
		t.Fatal(err)
	}
	var roles []Role
	for _, g := range p.Groups {
		roles = append(roles, Role(g.Role))
	}
	if want := []Role{RoleGamma, RoleSharedLR, RoleEmulated, RoleEpsOnly, RoleLadder, RolePilot, RoleProbes}; !slices.Equal(roles, want) {
		t.Errorf("plan group roles %v, want %v", roles, want)
	}
	if err := checkRoles(p); err != nil {
		t.Error(err)
	}
	q := *p
	q.Groups = append(slices.Clip(p.Groups), experiment.Group{Name: "x", Role: "gama-grid"})
	if err := checkRoles(&q); err == nil || !strings.Contains(err.Error(), `role "gama-grid"`) {
		t.Errorf("a misspelt role: %v", err)
	}
	var got []float64
	for _, v := range p.Groups[0].Axes[0].Values {
		switch x := v.(type) {
		case int64:
			got = append(got, float64(x))
		case float64:
			got = append(got, x)
		}
	}
	if p.Groups[0].Axes[0].Key != "init.gamma" || !slices.Equal(got, gammas) || !slices.Equal(p.Tune.Gammas, gammas) {
		t.Errorf("γ grid %+v and LR sweep %v, want init.gamma over %v", p.Groups[0].Axes, p.Tune.Gammas, gammas)
	}
}

// TestPrecision: the option reaches every run through the plan's base as train.precision ("auto" when not
// given: experiment.Run times it on the base model); it is resolved once, by experiment, which refuses a
// precision train's table does not know and one this CPU does not run in hardware before anything is sized.
func TestPrecision(t *testing.T) {
	auto, f32, bf16 := train.PrecisionAuto, kernel.F32.String(), kernel.BF16.String()
	for _, tc := range []struct {
		in, want string
		wantErr  bool
	}{
		{"", auto, false},
		{auto, auto, false},
		{f32, f32, false},
		{bf16, bf16, !kernel.BF16.Native()},
		{"fp16", "fp16", true},
	} {
		o := Options{Precision: tc.in, Out: t.TempDir(), Budget: 2 * time.Hour}
		p, _, err := o.plan()
		if err != nil {
			t.Fatalf("precision %q: %v", tc.in, err)
		}
		last := p.Base[len(p.Base)-1]
		if last.Key != recipe.KeyPrecision || last.Value != tc.want {
			t.Errorf("precision %q: the plan's last base set is %v = %v, want %s = %s", tc.in, last.Key, last.Value, recipe.KeyPrecision, tc.want)
		}
		if orig, _ := Plan(); len(orig.Base) != len(p.Base)-1 {
			t.Errorf("precision %q: the built-in plan's base changed (%d sets, %d with the precision)", tc.in, len(orig.Base), len(p.Base))
		}
		if !tc.wantErr {
			continue
		}
		if _, err := Describe(o, 20000); err == nil || !strings.Contains(err.Error(), "precision") {
			t.Errorf("precision %q: Describe gives %v, want an error naming the precision", tc.in, err)
		}
	}
}

// firstSteps is the horizon's steps per run: tokens_per_param · N at the primaries' width over the step's tokens.
func firstSteps(t *testing.T, d *experiment.Description) int {
	t.Helper()
	pr := d.Plan.Horizon
	return int(math.Ceil(pr.TokensPerParam * float64(d.Estimate.HorizonParams) / float64(d.Estimate.StepTokens)))
}

// The library bounds the seed count as the command line does: a huge or negative count is an error, not an
// allocation.
func TestSeedCountIsBounded(t *testing.T) {
	for _, n := range []int{-1, 1 << 40} {
		if _, err := Describe(Options{Out: t.TempDir(), Budget: 2 * time.Hour, Seeds: n, Precision: "f32"}, 20000); err == nil || !strings.Contains(err.Error(), "seeds") {
			t.Errorf("%d seeds: %v, want an error naming the seeds", n, err)
		}
	}
}

// TestPrimariesOnlyTier: the 2 h tier runs only the primaries' groups (γ ∈ {0.5, 1} at the γ grid's width and
// the ladder) and no anchor grid; the claims whose arms it does not run come back inconclusive with a reason,
// the primaries are judged, and H1 is reported at every matched rate of the LR grid.
func TestPrimariesOnlyTier(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the LR grid and 16 tiny runs")
	}
	out := t.TempDir()
	var log bytes.Buffer
	o := Options{Out: out, Budget: 2 * time.Hour, Steps: 4, Seeds: 3, CompareWindows: 4, ProbeTest: 4, OODWindows: 2, Plan: tinyPlan(t), Log: &log}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if res.Tier != "2h" || res.Inputs.Anchor != nil || len(res.Tuned) != 4 {
		t.Fatalf("tier %s, anchor %v, %d LR grids; want 2h, none, 2 γ × 2 widths", res.Tier, res.Inputs.Anchor, len(res.Tuned))
	}
	groups := map[string]bool{}
	for _, r := range res.RunScores {
		groups[r.Group] = true
		if r.Gamma != 0.5 && r.Gamma != 1 {
			t.Errorf("%s: γ %g outside the tier's", r.Dir, r.Gamma)
		}
	}
	if len(groups) != 2 || !groups["gamma"] || !groups["sizes"] {
		t.Errorf("groups run %v, want gamma and sizes", groups)
	}
	var matched int
	for _, c := range res.Claims {
		if c.ID == "" && c.Verdict != Inconclusive && c.Verdict != Untestable && c.Verdict != UntestableHorizon {
			t.Errorf("claim %d: %s without its arms", c.N, c.Verdict)
		}
		if c.ID == "H1" {
			for _, x := range c.Tests {
				if strings.Contains(x.Name, "matched LR") {
					matched++
				}
			}
		}
	}
	if matched < 3 {
		t.Errorf("H1 at %d matched rates, want the grid's 3 or more", matched)
	}
}
