package reproduce

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHorizonFigureFromTheRecord draws the gain-against-horizon figure from the committed 8 h record: three
// horizons, a line per seed, the mean, and every matched rate of the grid; a record without a series (the 2 h
// one) has no such figure.
func TestHorizonFigureFromTheRecord(t *testing.T) {
	for _, tc := range []struct {
		file  string
		want  bool
		seeds int
		lrs   int
	}{
		{"2026-12-04-h1-20tpp-claims.json", true, 7, 3},
		{"2026-12-02-reproduce-2h-claims.json", false, 0, 0},
	} {
		b, err := os.ReadFile(filepath.Join("..", "docs", "results", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var res Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		ch, ok := horizonFigure(&res)
		if ok != tc.want {
			t.Fatalf("%s: horizon figure %v, want %v", tc.file, ok, tc.want)
		}
		if !ok {
			continue
		}
		if len(ch.Rows) != 1 || len(ch.Rows[0]) != 2 {
			t.Fatalf("%s: want one row of two panels (tuned, matched), got %d rows", tc.file, len(ch.Rows))
		}
		tuned, matched := ch.Rows[0][0], ch.Rows[0][1]
		lines, mean := 0, -1
		for i, s := range tuned.Series {
			switch {
			case s.Black:
			case strings.HasPrefix(s.Name, "mean"):
				mean = i
			default:
				lines++
				if len(s.X) != 3 {
					t.Errorf("%s: a seed's line has %d horizons, want 3", tc.file, len(s.X))
				}
			}
		}
		if lines != tc.seeds || mean < 0 {
			t.Fatalf("%s: %d seed lines and mean at %d; want %d lines and a mean", tc.file, lines, mean, tc.seeds)
		}
		m := tuned.Series[mean]
		// The record's H1 (+0.0230 at 20) and its branches (−0.0605 at 5, −0.0058 at 10).
		for i, want := range []float64{-0.0605, -0.0058, 0.0230} {
			if d := m.Y[i] - want; d > 5e-5 || d < -5e-5 || !(m.Lo[i] < m.Y[i] && m.Y[i] < m.Hi[i]) {
				t.Errorf("%s: mean gain at %g is %.4f [%.4f, %.4f], want %.4f inside its interval", tc.file, m.X[i], m.Y[i], m.Lo[i], m.Hi[i], want)
			}
		}
		named := 0
		for _, s := range matched.Series {
			if strings.HasPrefix(s.Name, "LR ") {
				named++
				if len(s.X) != 3 {
					t.Errorf("%s: %s has %d horizons, want 3", tc.file, s.Name, len(s.X))
				}
			}
		}
		if named != tc.lrs {
			t.Errorf("%s: %d matched rates, want %d", tc.file, named, tc.lrs)
		}
		out := filepath.Join(t.TempDir(), FiguresFile)
		if err := writeFigures(out, &res); err != nil {
			t.Fatal(err)
		}
		page, _ := os.ReadFile(out)
		if !strings.Contains(string(page), "γ = 1 gain against the horizon") || !strings.Contains(string(page), "<svg") {
			t.Errorf("%s: the figures page lacks the horizon figure", tc.file)
		}
	}
}
