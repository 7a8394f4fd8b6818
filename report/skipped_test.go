package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/summary"
)

// TestSkippedItemsAreReported: what a report leaves out is said, with the item and the reason: a summary.json
// it cannot read (Data.Skipped, and a warning from Make), arms past --max-arms and an arm with no model to draw
// (the heatmaps' problems).
func TestSkippedItemsAreReported(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string)
		check func(t *testing.T, root string, d *Data, warned string) // warned: Make's warnings and WriteSummary
	}{
		{"unreadable summary.json", func(t *testing.T, root string) {
			synthRun{name: "r", gamma: 1, eps: 1e-5, gate: arch.GateNone, final: finalDummy}.write(t, root)
			if err := os.WriteFile(filepath.Join(root, summary.File), []byte("{not json"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, root string, d *Data, warned string) {
			path := filepath.Join(root, summary.File)
			if len(d.Skipped) != 1 || d.Skipped[0].Path != path || !strings.Contains(warned, "skipped "+path) ||
				!strings.Contains(warned, "1 path(s) skipped") {
				t.Errorf("skipped %+v, warned %q; want %s skipped with its reason", d.Skipped, warned, path)
			}
		}},
		{"arms past max-arms, and an arm without a model", func(t *testing.T, root string) {
			synthRun{name: "a", gamma: 1, eps: 1e-12, gate: arch.GateElementwise, final: finalReal}.write(t, root)
			synthRun{name: "b", gamma: 0.5, eps: 1e-12, gate: arch.GateElementwise, final: finalReal}.write(t, root)
			synthRun{name: "c", gamma: 0.75, eps: 1e-12, gate: arch.GateElementwise}.write(t, root)
		}, func(t *testing.T, root string, d *Data, _ string) {
			_, problems := HeatmapSources(d, 1)
			joined := strings.Join(problems, "\n")
			if !strings.Contains(joined, "more arm(s) not drawn") {
				t.Errorf("max arms 1 of 3: problems %q, want the arms not drawn counted", joined)
			}
			_, problems = HeatmapSources(d, 8)
			if joined = strings.Join(problems, "\n"); !strings.Contains(joined, "γ=0.75") || !strings.Contains(joined, "no run of the arm has a final model") {
				t.Errorf("problems %q, want the γ = 0.75 arm named as having no model", joined)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.setup(t, root)
			var warn strings.Builder
			out := filepath.Join(t.TempDir(), "r.html")
			pg, d, err := Make(Request{Dirs: []string{root}, Out: out, Warn: &warn})
			if err != nil {
				t.Fatal(err)
			}
			WriteSummary(&warn, out, pg, d)
			tc.check(t, root, d, warn.String())
		})
	}
}
