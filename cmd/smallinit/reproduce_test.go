package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReproducePrintPlan: `smallinit reproduce --budget B --print-plan` prints each budget's plan (tier,
// seeds, arms, the LR sweep, the anchor grid, the time arithmetic from a throughput probe) and trains nothing.
func TestReproducePrintPlan(t *testing.T) {
	for _, tc := range []struct {
		budget time.Duration
		want   []string
	}{
		{30 * time.Minute, []string{"(tier 30m)", "SMOKE TEST", "3 seeds"}},
		{2 * time.Hour, []string{"(tier 2h)", "3 seeds"}},
		{8 * time.Hour, []string{"(tier 8h)", "4 seeds"}},
		{24 * time.Hour, []string{"(tier 24h)", "5 seeds", "hidden_size256"}},
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
		for _, want := range append(tc.want, "LR sweep (package tune)", "throughput probe", "expected wall time", "emulated-eps", "shared-lr", "probe-pilot", "anchor: claim 1 (reasoning)") {
			if !strings.Contains(s, want) {
				t.Errorf("%s: plan lacks %q:\n%s", tc.budget, want, s)
			}
		}
		if entries, _ := os.ReadDir(out); len(entries) != 0 {
			t.Errorf("%s: --print-plan wrote %d entries into %s", tc.budget, len(entries), out)
		}
	}
}
