package report

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/fit"
)

// TestReadLawRefusesLawsNoFitMakes: a law file whose size law does not fall with N (α ≤ 0, A ≤ 0), has a
// negative floor or a non-finite number (docs/definitions.md §7) is refused naming the file and the key,
// instead of being drawn on the loss-against-N figure without a word.
func TestReadLawRefusesLawsNoFitMakes(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"negative alpha", `{"laws": [{"kind": "size", "law": {"E": 1, "A": 2, "alpha": -0.3}}]}`, "alpha = -0.3"},
		{"zero alpha (bare)", `{"E": 1, "A": 2, "alpha": 0}`, "alpha = 0"},
		{"negative A", `{"E": 1, "A": -2, "alpha": 0.3}`, "A = -2"},
		{"negative E", `{"E": -1, "A": 2, "alpha": 0.3}`, "E = -1"},
		{"huge alpha overflowing", `{"E": 1, "A": 2, "alpha": 1e400}`, "law.json"},
	} {
		p := filepath.Join(t.TempDir(), "law.json")
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := ReadLaw(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %+v, %v; want an error naming %s and %q", tc.name, l, err, p, tc.want)
		}
	}
}

// TestLossSizeLawIsFitFit: the loss-against-N figure draws, for a line with fit.MinSizes sizes, the law that
// fit.Fit gives for the line's points (the report has no fitter of its own), and says so in its caption.
func TestLossSizeLawIsFitFit(t *testing.T) {
	root := t.TempDir()
	for _, dim := range []int{16, 32, 48, 64} {
		synthRun{name: "d" + strconv.Itoa(dim), gamma: 1, eps: 1e-12, gate: arch.GateElementwise, dim: dim, final: finalDummy}.write(t, root)
	}
	d, err := Gather([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	var points []fit.Point
	for _, a := range d.Arms {
		points = append(points, fit.Point{X: float64(a.N), Y: a.Runs[0].ValLoss()})
	}
	want, err := fit.Fit(points)
	if err != nil {
		t.Fatalf("fit.Fit on the synthetic sizes: %v", err)
	}
	f, why := d.figLossSize(nil)
	if f == nil {
		t.Fatalf("figure not drawn: %s", why)
	}
	law := Law{PowerLaw: want.PowerLaw}
	found := false
	for _, l := range f.Legend {
		found = found || strings.HasSuffix(l.Label, ": "+law.String())
	}
	if !found || !strings.Contains(f.Caption, "fit.Fit") {
		t.Errorf("legend %+v and caption %q: want the law %s of fit.Fit", f.Legend, f.Caption, law)
	}
}
