package report

import "testing"

// TestFigureTableIDsAreUniqueAndTitled: every row of the figure table has an ID used once and a title (the
// page's list of figures not drawn names each by its title).
func TestFigureTableIDsAreUniqueAndTitled(t *testing.T) {
	seen := map[string]bool{}
	for _, row := range figureTable() {
		if row.id == "" || row.title == "" || row.draw == nil || seen[row.id] {
			t.Errorf("row %q (%q): empty, without a drawer, or repeated", row.id, row.title)
		}
		seen[row.id] = true
	}
}
