package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReproducePrintPlan: `smallinit reproduce --budget B --print-plan` prints each budget's plan (tier,
// seeds, arms, the LR grid, the anchor grid where the tier runs it, the time arithmetic from a throughput probe)
// and trains nothing.
func TestReproducePrintPlan(t *testing.T) {
	for _, tc := range []struct {
		budget time.Duration
		want   []string
	}{
		{30 * time.Minute, []string{"(tier 30m)", "SMOKE TEST", "2 seeds per verdict arm", "emulated-eps", "shared-lr", "probe-pilot", "anchor: claim 1 (reasoning)"}},
		// The 2 h tier runs the primaries' arms only, on the seeds that fit the budget.
		{2 * time.Hour, []string{"(tier 2h)", "hidden_size48", "seeds per verdict arm"}},
		// The 8 h tier is H1 at 20 tokens per parameter with the horizon series from WSD branches.
		{8 * time.Hour, []string{"(tier 8h)", "8972 steps", "horizon series [5 10 20]", "LR grid rates for γ = 0.5: [0.002 0.004]", "H2 is not tested", "corpus: embedded"}},
		// The 24 h tier adds the ladder at its own horizon (widths 96-240) and the anchor grid.
		{24 * time.Hour, []string{"(tier 24h)", "hidden_size240", "anchor: claim 1 (reasoning)"}},
	} {
		out := t.TempDir()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout := os.Stdout
		os.Stdout = w
		runErr := (&reproduceCmd{Budget: tc.budget, Out: out, Jobs: 1, PrintPlan: true}).Run()
		os.Stdout = stdout
		w.Close()
		b, _ := io.ReadAll(r)
		if runErr != nil {
			t.Fatalf("%s: %v", tc.budget, runErr)
		}
		s := string(b)
		for _, want := range append(tc.want, "LR grid (package tune, at the full horizon)", "throughput probe", "expected wall time") {
			if !strings.Contains(s, want) {
				t.Errorf("%s: plan lacks %q:\n%s", tc.budget, want, s)
			}
		}
		if (tc.budget == 2*time.Hour || tc.budget == 8*time.Hour) && (strings.Contains(s, "emulated-eps") || strings.Contains(s, "anchor:")) {
			t.Errorf("the 2 h tier runs arms beyond the primaries':\n%s", s)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("%s: --print-plan wrote %d entries into %s", tc.budget, len(entries), out)
		}
	}
}
