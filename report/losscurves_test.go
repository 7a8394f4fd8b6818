package report

import (
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
)

// TestArmLossCurves: one arm's runs give a chart of training and validation loss against step with one named
// line per seed, and a set of directories without a run is an error naming the arm.
func TestArmLossCurves(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for seed := uint64(0); seed < 2; seed++ {
		dirs = append(dirs, synthRun{name: "s" + string(rune('0'+seed)), gamma: 1, eps: 1e-12, gate: arch.GateElementwise, seed: seed}.write(t, root))
	}
	ch, err := ArmLossCurves("lc-1", "γ=1", dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Rows) != 1 || len(ch.Rows[0]) != 2 || ch.ID != "lc-1" || !strings.Contains(ch.Title, "γ=1") {
		t.Fatalf("chart %+v", ch)
	}
	for _, pn := range ch.Rows[0] {
		if len(pn.Series) != 2 || pn.Series[0].Name != "seed 0" || pn.Series[1].Name != "seed 1" || len(pn.Series[0].X) < 2 {
			t.Errorf("panel %q: series %+v", pn.Title, pn.Series)
		}
	}
	f, err := DrawChart(ch)
	if err != nil || f.Series != 4 || len(f.Legend) != 2 {
		t.Errorf("drawn: %+v, %v", f, err)
	}
	if _, err := ArmLossCurves("lc-2", "empty arm", []string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "empty arm") {
		t.Errorf("an arm without runs: %v", err)
	}
}
