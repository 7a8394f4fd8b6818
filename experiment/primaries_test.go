package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/train"
)

const primariesPlan = `
name = "p"
seeds = [0, 1, 2]
[budget]
minutes = 1
efficiency = 0.8
min_steps = 1
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

func TestPrimariesParse(t *testing.T) {
	for _, c := range []struct {
		name, extra, err string
	}{
		{"derived δ", "effective_size = 0.44\nprior_ladder_slope = -0.053\n", ""},
		{"explicit δ", "delta = 0.02\n", ""},
		{"no δ", "", "give delta, or effective_size and prior_ladder_slope"},
		{"bad α", "delta = 0.02\nalpha = 0.7\n", "primaries.alpha = 0.7"},
		{"positive slope", "effective_size = 0.44\nprior_ladder_slope = 0.05\n", "primaries.prior_ladder_slope"},
		{"nan horizon", "delta = 0.02\ntokens_per_param = nan\n", "primaries.tokens_per_param"},
		{"unknown key", "delta = 0.02\ndelat = 1\n", "unknown key primaries.delat"},
	} {
		p, err := Parse([]byte(primariesPlan + c.extra))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		pr := p.Primaries
		if pr.Alpha != 0.05 || pr.MinWidths != 4 || pr.MinSpan != 2.5 || pr.PlateauTolerance != 0.05 {
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
	if _, err := Parse([]byte(strings.Replace(primariesPlan, `h2 = "slope of the gain"`, "", 1) + "delta = 0.02\n")); err == nil || !strings.Contains(err.Error(), "h1 and h2") {
		t.Errorf("a plan without h2: %v", err)
	}
}

// The power block says when δ cannot be reached, and how many seeds would reach it.
func TestPrimariesPowerStatesReachability(t *testing.T) {
	p, err := Parse([]byte(primariesPlan + "delta = 0.02\nprior_sd_h1 = 0.01\nprior_sd_h2 = 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p.Primaries.Write(&b, 8, 2)
	out := b.String()
	pw := p.Primaries.PowerOf(8, 2)
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

// An LR trial whose training loss rises more than spike_threshold over its running minimum is vetoed.
func TestSpikeVetoOfALearningRateTrial(t *testing.T) {
	p, err := Parse([]byte(primariesPlan + "delta = 0.02\nspike_threshold = 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		losses []float64
		veto   bool
	}{
		{"smooth", []float64{8, 7, 6.5, 6.2, 6.1}, false},
		{"a spike that recovers", []float64{8, 6, 6.9, 5.9, 5.8}, true},
		{"a rise below the threshold", []float64{8, 6, 6.4, 5.9}, false},
	} {
		dir := t.TempDir()
		var b strings.Builder
		for i, l := range c.losses {
			fmt.Fprintf(&b, `{"step":%d,"tokens":%d,"loss":%g}`+"\n", 10*(i+1), 1000*(i+1), l)
		}
		if err := os.WriteFile(filepath.Join(dir, train.MetricsFile), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		spike, err := (&Outcome{}).spikeOf(p, dir)
		if veto := vetoed(p, spike); err != nil || veto != c.veto {
			t.Errorf("%s: spike %.3f, veto %v, err %v; want veto %v", c.name, spike, veto, err, c.veto)
		}
	}
}
