package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// horizonPlan's tier trains every run and LR trial as a WSD trunk to 0.08 tokens per parameter, with cooldown
// branches at 0.02 and 0.04, and tunes γ = 0.5 (the tier's only γ) on its own rates.
const horizonPlan = `name = "horizons"
seeds = [0]
[budget]
minutes = 30
efficiency = 1
min_steps = 1
[[tier]]
name = "h"
minutes = 30
seeds = [0, 1]
tune_widths = [32]
groups = ["gamma"]
gammas = [0.5]
tokens_per_param = 0.08
horizons = [0.02, 0.04, 0.08]
cooldown = 0.2
tune_lrs = { "0.5" = [3e-3, 4e-3] }
[tune]
mode = "full"
gammas = [0.5, 1]
widths = [32]
lrs = [2e-3, 4e-3]
seeds = [1000, 1001]
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
[primaries]
h1 = "gain at 32"
h2 = "slope of the gain"
width = 32
delta = 0.02
tokens_per_param = 0.02
spike_threshold = 0.5
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
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
"train.checkpoint_interval" = 3
"schedule.warmup_steps" = 5
[[group]]
name = "gamma"
lr = "tuned"
set = { "model.norm_eps" = 1e-12, "model.attn_gate" = "elementwise" }
axes = { "init.gamma" = [0.5, 1] }
`

// TestHorizonSeriesFromOneTrunk: under a horizon series every arm and LR trial trains as a WSD trunk with a
// snapshot per shorter horizon, every branch is trained and recorded (Outcome.Branches, Tuned.Horizons), its
// config is the independent WSD run of its horizon, and a branch's final model is that independent run's, bit
// for bit.
func TestHorizonSeriesFromOneTrunk(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: trains 4-6 trials and 2 runs with their branches")
	}
	p, err := Parse([]byte(horizonPlan))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var log bytes.Buffer
	o := Options{Out: out, Budget: 30 * time.Minute, Steps: 20, Windows: 4, Log: &log, Describe: true}
	res, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{"horizon series [0.02 0.04 0.08]", "LR grid rates for γ = 0.5: [0.003 0.004]", "corpus: embedded:", "epochs"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the printed plan lacks %q", want)
		}
	}
	if len(res.RunList) != 2 || len(res.Branches) != 4 {
		t.Fatalf("%d runs and %d branches, want 2 and 4", len(res.RunList), len(res.Branches))
	}
	for _, r := range res.RunList {
		c := r.Config
		if c.Schedule.Kind != recipe.ScheduleWSD || c.TotalSteps() != 20 || c.Schedule.DecaySteps != 4 || c.Schedule.Warmup != 1 {
			t.Errorf("%s: trunk %s %d steps, decay %d, warmup %d; want wsd 20, 4, 1", r.Dir, c.Schedule.Kind, c.TotalSteps(), c.Schedule.DecaySteps, c.Schedule.Warmup)
		}
		if got := c.Train.SnapshotSteps; len(got) != 2 || got[0] != 4 || got[1] != 8 {
			t.Errorf("%s: snapshots %v, want [4 8]", r.Dir, got)
		}
	}
	steps := map[float64]int{0.02: 5, 0.04: 10}
	for _, b := range res.Branches {
		c := b.Config
		if c.TotalSteps() != steps[b.Horizon] || c.Schedule.Kind != recipe.ScheduleWSD || c.Schedule.Warmup != 1 {
			t.Errorf("%s: horizon %g branch of %d steps (%s, warmup %d)", b.Dir, b.Horizon, c.TotalSteps(), c.Schedule.Kind, c.Schedule.Warmup)
		}
		if run, _ := train.OpenRun(b.Dir); run == nil || !run.Done() {
			t.Errorf("%s: branch not finished", b.Dir)
		}
	}
	// One branch against the independent run of its config.
	b := res.Branches[0]
	ind := filepath.Join(t.TempDir(), "independent")
	if _, err := train.Start(context.Background(), b.Config, ind, train.Options{}); err != nil {
		t.Fatal(err)
	}
	wa, _ := os.ReadFile(filepath.Join(b.Dir, rundir.FinalDir, "model.safetensors"))
	wb, _ := os.ReadFile(filepath.Join(ind, rundir.FinalDir, "model.safetensors"))
	if len(wa) == 0 || !bytes.Equal(wa, wb) {
		t.Errorf("the branch %s differs from the independent run of its config", b.Dir)
	}
	for g, lrs := range map[float64]int{0.5: 2} {
		bs, err := os.ReadFile(filepath.Join(out, TuneDir, tuneKey(g, 32)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var tr Tuned
		if err := json.Unmarshal(bs, &tr); err != nil {
			t.Fatal(err)
		}
		// Every rate (and any extension past an edge) on 2 seeds, at 2 shorter horizons.
		if len(tr.Horizons) != 2*len(tr.Grid.Trials) || len(tr.Grid.Trials) < 2*lrs {
			t.Errorf("γ = %g: %d horizon trials for %d grid trials", g, len(tr.Horizons), len(tr.Grid.Trials))
		}
		for _, h := range tr.Horizons {
			if !(h.Loss > 0) || h.Steps != steps[h.Horizon] {
				t.Errorf("γ = %g: horizon trial %+v", g, h)
			}
		}
	}
}
