package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/fit"
)

// TestReportChromium renders a full synthetic report in headless Chromium: it must load without console
// errors, build every figure into the DOM, and screenshot to a PNG. Set SMALLINIT_REPORT_KEEP=DIR to keep
// the page and the screenshot.
func TestReportChromium(t *testing.T) {
	if _, err := FindChromium(); err != nil {
		t.Skip("no chromium: /usr/bin/chromium is absent (apt-get install -y chromium)")
	}
	root := t.TempDir()
	runs := append(corners(0, true, finalReal, []int{20, 60}), corners(1, true, finalDummy, nil)...)
	for _, r := range runs {
		r.write(t, filepath.Join(root, "runs"))
	}
	d, err := Gather([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	sets, problems := synthHeatmaps(d, 8)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	pg, err := Build(d, Options{Title: "smallinit report (synthetic runs)", Heatmaps: sets,
		Compare:     &CompareData{A: "g1-fixed", B: "g0.5-default", Tokens: "val.tok", Cmp: synthComparison(10)},
		Coordchecks: []*Coordcheck{synthCoordcheck(1)}, Law: &Law{PowerLaw: fit.PowerLaw{E: 2, A: 30, Alpha: 0.3}, Source: "fit.json"}})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if keep := os.Getenv("SMALLINIT_REPORT_KEEP"); keep != "" {
		out = keep
	}
	page := filepath.Join(out, "report.html")
	if err := writePage(page, pg.HTML); err != nil {
		t.Fatal(err)
	}
	dom, log, err := DumpDOM(page)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, log)
	}
	for _, line := range strings.Split(log, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "uncaught") || strings.Contains(l, "console error") || (strings.Contains(l, "console(") && strings.Contains(l, "error")) {
			t.Errorf("chromium console: %s", line)
		}
	}
	if len(pg.Figures) < 9 {
		t.Errorf("%d figures drawn, want all but loss against N (omitted: %+v)", len(pg.Figures), pg.Omitted)
	}
	for _, f := range pg.Figures {
		if !strings.Contains(dom, `id="`+f.ID+`"`) {
			t.Errorf("figure %s is not in Chromium's DOM", f.ID)
		}
	}
	if n := strings.Count(dom, "<svg"); n != len(pg.Figures) {
		t.Errorf("Chromium's DOM holds %d svg elements, want %d", n, len(pg.Figures))
	}
	shot := filepath.Join(out, "report.png")
	if err := Screenshot(page, shot, 1200, pg.HeightPx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if sz := img.Bounds().Size(); sz.X != 1200 || sz.Y < 1000 {
		t.Errorf("screenshot is %v", sz)
	}
}
