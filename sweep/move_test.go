package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareMovedSweep: a sweep directory moved together with the data its inline base names (a study's
// sweep group under a renamed --out) is prepared again, and its plan.json then names the data where they are
// now; a base that differs in any other key, or data under another name, is still another sweep.
func TestPrepareMovedSweep(t *testing.T) {
	grid := func(root, extra, val string) (*Grid, *Plan) {
		text := fmt.Sprintf("[base]\n\"data.train\" = %q\n\"data.val\" = %q\n\"model.preset\" = \"tiny\"\n%s[axes]\n\"init.gamma\" = [0.5, 1]\n",
			filepath.Join(root, "data", "train.tok"), filepath.Join(root, "data", val), extra)
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		g, err := ParseGrid(writeFile(t, root, "grid.toml", text))
		if err != nil {
			t.Fatal(err)
		}
		p, err := g.Expand()
		if err != nil {
			t.Fatal(err)
		}
		return g, p
	}
	for _, tc := range []struct {
		name       string
		extra, val string // the moved grid's extra base keys and validation file
		refuse     bool
	}{
		{"moved", "", "val.tok", false},
		{"moved and lr edited", "\"schedule.lr\" = 0.5\n", "val.tok", true},
		{"moved, other validation file", "", "val2.tok", true},
	} {
		base := t.TempDir()
		old := filepath.Join(base, "study")
		g, p := grid(old, "", "val.tok")
		if err := Prepare(filepath.Join(old, "grid"), g, p); err != nil {
			t.Fatal(err)
		}
		moved := filepath.Join(base, "moved")
		if err := os.Rename(old, moved); err != nil {
			t.Fatal(err)
		}
		g, p = grid(moved, tc.extra, tc.val)
		err := Prepare(filepath.Join(moved, "grid"), g, p)
		switch {
		case tc.refuse && (err == nil || !strings.Contains(err.Error(), "another sweep")):
			t.Errorf("%s: %v, want another sweep refused", tc.name, err)
		case !tc.refuse && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.refuse:
			np, err := ReadPlan(filepath.Join(moved, "grid"))
			if err != nil || np.Fingerprint != p.Fingerprint || !strings.Contains(strings.Join(np.Base, " "), moved) {
				t.Errorf("%s: plan.json after the move: %+v, %v; want the moved grid's", tc.name, np, err)
			}
		}
	}
}
