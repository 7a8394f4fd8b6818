package reproduce

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smallinit/smallinit/stats"
)

// TestWriteTextReadable: the printed verdicts of each committed reproduction wrap at TextWidth (no claim is one
// 500-character line) and end with the claim table (a row per claim, the decisive comparison's estimate and n),
// which prints no NaN even for the 8 h tier's claims without paired seeds. (The records' evidence strings were
// written by older builds, some with "+NaN"; TestEvidenceNoNaN checks what this build writes.)
func TestWriteTextReadable(t *testing.T) {
	for _, rc := range recorded {
		b, err := os.ReadFile(filepath.Join("..", "docs", "results", rc.claims))
		if err != nil {
			t.Fatal(err)
		}
		var res Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("%s: %v", rc.claims, err)
		}
		var out bytes.Buffer
		if err := res.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		_, table, ok := strings.Cut(text, "\nclaims\nclaim ")
		if !ok {
			t.Fatalf("%s: no claim table:\n%s", rc.claims, text)
		}
		if strings.Contains(table, "NaN") {
			t.Errorf("%s: the claim table contains NaN:\n%s", rc.claims, table)
		}
		table, _, _ = strings.Cut(table, "\nevery number")
		rows := strings.Split(strings.TrimSpace(table), "\n")
		if got := len(rows) - 1; got != len(res.Claims) { // the header's rest
			t.Errorf("%s: claim table has %d rows, want %d:\n%s", rc.claims, got, len(res.Claims), table)
		}
		inVerdicts := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "primary H") || strings.HasPrefix(line, "claim ") {
				inVerdicts = true
			}
			if line == "claims" {
				inVerdicts = false
			}
			if strings.HasPrefix(line, "every number") {
				inVerdicts = true
			}
			if inVerdicts && utf8.RuneCountInString(line) > TextWidth && strings.Contains(strings.TrimSpace(line), " ") {
				t.Errorf("%s: verdict line of %d columns: %q", rc.claims, utf8.RuneCountInString(line), line)
			}
		}
		for _, c := range res.Claims {
			if c.ID == "H1" && c.Verdict == Supported && !strings.Contains(table, "supported") {
				t.Errorf("%s: H1's row does not say supported:\n%s", rc.claims, table)
			}
		}
	}
}

// TestClaimEstimate: the table's estimate is the first decisive test's mean and interval; fewer than 3 seeds give
// the mean alone, no seed gives "—" (never +NaN).
func TestClaimEstimate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tests  []Test
		est, n string
	}{
		{"none", nil, "—", "—"},
		{"no seeds", []Test{{Decisive: true, Estimate: stats.Estimate{N: 0, Mean: math.NaN()}}}, "—", "—"},
		{"two seeds", []Test{{Decisive: true, Estimate: stats.Estimate{N: 2, Mean: 0.01, Lo: -1, Hi: 1}}}, "+0.0100 (no interval)", "2"},
		{"decisive first", []Test{{Estimate: stats.Estimate{N: 5, Mean: 9}}, {Decisive: true, Estimate: stats.Estimate{N: 7, Mean: 0.023, Lo: 0.012, Hi: 0.034}}},
			"+0.0230 [+0.0120, +0.0340]", "7"},
	} {
		est, n := claimEstimate(Claim{Tests: tc.tests})
		if est != tc.est || n != tc.n {
			t.Errorf("%s: got %q, %q; want %q, %q", tc.name, est, n, tc.est, tc.n)
		}
	}
}

// TestWrapText: lines break at spaces within the width, later lines indented; a long word stays whole.
func TestWrapText(t *testing.T) {
	got := wrapText("aaa bbb ccc ddd", 8, "  ")
	if want := "aaa bbb\n  ccc\n  ddd\n"; got != want {
		t.Errorf("wrapText = %q, want %q", got, want)
	}
	if got := wrapText("abcdefghij k", 4, ""); got != "abcdefghij\nk\n" {
		t.Errorf("long word: %q", got)
	}
}

// TestEvidenceNoNaN: a comparison without a paired seed is "not measured", never "+NaN"; one seed prints its
// value without an interval.
func TestEvidenceNoNaN(t *testing.T) {
	c := &claimTests{tests: []Test{
		{Name: "L(γ=0.75) − L(γ=1)", Estimate: stats.Estimate{N: 0, Mean: math.NaN()}},
		{Name: "one", Estimate: stats.Estimate{N: 1, Mean: 0.5, Seeds: []int{3}, Values: []float64{0.5}}},
	}}
	got := c.text()
	if strings.Contains(got, "NaN") || !strings.Contains(got, "L(γ=0.75) − L(γ=1): not measured (no paired seeds)") ||
		!strings.Contains(got, "one: +0.5000 (1 seed: no interval)") {
		t.Errorf("evidence %q", got)
	}
}
