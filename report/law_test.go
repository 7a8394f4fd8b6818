package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
