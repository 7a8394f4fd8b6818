package report

import (
	"strconv"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/fit"
	"github.com/smallinit/smallinit/model"
)

// TestLossSizeLawIsFitFit: the loss-against-N figure draws, for a line with fit.MinSizes sizes, the law that
// fit.Fit gives for the line's points (the report has no fitter of its own), and says so in its caption.
func TestLossSizeLawIsFitFit(t *testing.T) {
	root := t.TempDir()
	for _, dim := range []int{16, 32, 48, 64} {
		synthRun{name: "d" + strconv.Itoa(dim), gamma: 1, eps: 1e-12, gate: model.GateElementwise, dim: dim, final: finalDummy}.write(t, root)
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
