package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusReportsUnreadableMetrics: `sweep status` of a run whose metrics.jsonl has a line it cannot read
// says so in the run's note, with the step of what it could read; a run without metrics has no such note.
func TestStatusReportsUnreadableMetrics(t *testing.T) {
	src := t.TempDir()
	g := microGrid(t, src, "")
	p, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, metrics string // "": no metrics.jsonl
		step          int
		note          string // a part of the note; "": no note about metrics
	}{
		{"no metrics", "", 0, ""},
		{"readable", `{"step":2,"tokens":64,"loss":5}` + "\n", 2, ""},
		{"a bad line", `{"step":2,"tokens":64,"loss":5}` + "\nnot json\n" + `{"step":4,"tokens":128,"loss":4}` + "\n", 4, "metrics unreadable"},
	} {
		dir := filepath.Join(t.TempDir(), "sweep")
		if err := Prepare(dir, g, p); err != nil {
			t.Fatal(err)
		}
		if tc.metrics != "" {
			rd := RunDir(dir, p.Runs[0])
			os.MkdirAll(rd, 0o755)
			if err := os.WriteFile(filepath.Join(rd, "metrics.jsonl"), []byte(tc.metrics), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, sts, err := Status(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := sts[0]
		if s.Step != tc.step || (tc.note == "") != !strings.Contains(s.Note, "metrics") || tc.note != "" && !strings.Contains(s.Note, tc.note) {
			t.Errorf("%s: step %d, note %q; want step %d and a note saying %q", tc.name, s.Step, s.Note, tc.step, tc.note)
		}
	}
}
