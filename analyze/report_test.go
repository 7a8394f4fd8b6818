package analyze

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/model/modeltest"
	"github.com/smallinit/smallinit/report"
)

// TestParseComparison: "A=DIR,B=DIR" in either order gives the two directories, a value without "=" a compare
// file and "" none; a missing side, an unknown side or an empty directory is an error.
func TestParseComparison(t *testing.T) {
	for _, spec := range []string{"A=x", "A=x,C=y", "A=,B=y", "x=y"} {
		if _, err := ParseComparison(spec); err == nil {
			t.Errorf("ParseComparison(%q) accepted", spec)
		}
	}
	for _, c := range []struct {
		spec string
		want Comparison
	}{
		{"B=runs/two,A=runs/one", Comparison{A: "runs/one", B: "runs/two"}},
		{"a=x, b=y", Comparison{A: "x", B: "y"}},
		{"cmp.json", Comparison{File: "cmp.json"}},
		{"", Comparison{}},
	} {
		if got, err := ParseComparison(c.spec); err != nil || got != c.want {
			t.Errorf("ParseComparison(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
	}
}

// savedModel writes modeltest's random two-layer model (seed seed) to a model directory under root.
func savedModel(t *testing.T, root, name string, seed uint64) string {
	t.Helper()
	m := modeltest.Model(t, 64, 8, 1, seed)
	dir := filepath.Join(root, name)
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHeatmapsPickTheNamedTensor: Heatmaps computes, for each panel of a source, the row cosines of the first
// matrix whose name contains the tensor asked for (a unit diagonal), and turns an unknown name into a problem
// naming the run rather than a failure.
func TestHeatmapsPickTheNamedTensor(t *testing.T) {
	root := t.TempDir()
	src := report.HeatmapSource{Run: &report.Run{ID: "r"}, Panels: []report.HeatmapPanelSource{
		{Dir: savedModel(t, root, "init", 1), Label: "step 0 (init)", Problem: "init", Step: 0},
		{Dir: savedModel(t, root, "final", 2), Label: "step 60 (final)", Problem: "late", Step: 60},
	}}
	sets, problems := Heatmaps([]report.HeatmapSource{src}, "layers.1.mlp.down_proj")
	if len(problems) > 0 || len(sets) != 1 || sets[0].Tensor != "model.layers.1.mlp.down_proj.weight" || len(sets[0].Panels) != 2 {
		t.Fatalf("sets %+v, problems %v", sets, problems)
	}
	if s := sets[0]; s.Panels[1].Step != 60 || s.Run != src.Run || s.Shape != [2]int{32, 64} {
		t.Errorf("set: run %v, shape %v, panels %+v", s.Run, s.Shape, s.Panels)
	}
	p := sets[0].Panels[0]
	for i := 0; i < p.Rows; i++ {
		if v := p.C[i*p.Rows+i]; math.Abs(float64(v)-1) > 1e-5 {
			t.Fatalf("cosine diagonal %d = %g", i, v)
		}
	}
	if _, problems = Heatmaps([]report.HeatmapSource{src}, "no_such_tensor"); len(problems) != 1 ||
		!strings.HasPrefix(problems[0], "r: ") || !strings.Contains(problems[0], "no matrix named") {
		t.Errorf("problems %v", problems)
	}
}

// TestMakeReportComparisonFailure: a comparison that cannot be made (side A holds no model) is an
// InputError naming Compare; with CompareNote it is not (it becomes a note, and the report goes on: here to
// "nothing to report", the directory holding no run).
func TestMakeReportComparisonFailure(t *testing.T) {
	root := t.TempDir()
	m := savedModel(t, root, "lonely", 3)
	out := filepath.Join(root, "r.html")
	in := ReportInputs{Compare: Comparison{A: filepath.Join(root, "nope"), B: m}, NoHeatmaps: true}
	var ie *report.InputError
	if _, _, err := MakeReport(report.Request{Dirs: []string{root}, Out: out}, in); !errors.As(err, &ie) || ie.Input != "Compare" {
		t.Errorf("MakeReport: %v, want an InputError for Compare", err)
	}
	in.CompareNote = true
	_, _, err := MakeReport(report.Request{Dirs: []string{root}, Out: out}, in)
	if errors.As(err, &ie) || err == nil || !strings.Contains(err.Error(), "nothing to report") {
		t.Errorf("MakeReport with CompareNote: %v, want nothing to report (the comparison noted, not failed)", err)
	}
}
