package fit

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// syntheticTable is a sweep-like table: γ ∈ {0.5, 1} × sizes × budgets × 3 seeds, done, with losses from
// the law truth (in N at every budget, plus a data term) and Gaussian noise sd (PCG seed 3). The γ = 1 arm's
// loss at N is the baseline's at gainN·N: an effective-size gain of gainN − 1.
func syntheticTable(sizes, budgets []float64, gainN, sd float64) *Table {
	truth := PowerLaw{E: 1.7, A: 400, Alpha: 0.3}
	dataTerm := PowerLaw{E: 0, A: 30, Alpha: 0.25}
	rng := rand.New(rand.NewPCG(3, 3))
	t := &Table{Columns: []string{"id", "state", "init.gamma", "seed", "N", "tokens", "val_loss"}, Axes: []string{"init.gamma", "seed"}}
	for _, g := range []float64{0.5, 1} {
		for _, n := range sizes {
			for _, d := range budgets {
				for s := range 3 {
					eff := n
					if g == 1 {
						eff = gainN * n
					}
					loss := truth.Eval(eff) + dataTerm.Eval(d) + sd*rng.NormFloat64()
					t.Rows = append(t.Rows, map[string]string{
						"id": fmt.Sprintf("%03d", len(t.Rows)), "state": "done", "init.gamma": fmt.Sprint(g), "seed": fmt.Sprint(s),
						"N": fmt.Sprint(n), "tokens": fmt.Sprint(d), "val_loss": strconv.FormatFloat(loss, 'g', -1, 64),
					})
				}
			}
		}
	}
	return t
}

func mustSelector(t *testing.T, s string) Selector {
	t.Helper()
	sel, err := ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestFitAnalyzeGain checks the whole analysis on a table built with a 44% effective-size gain: one size law,
// its parameters, N_eff/N = 1.44 per treated size, and a bootstrap interval over seeds that covers 0.44.
func TestFitAnalyzeGain(t *testing.T) {
	tab := syntheticTable([]float64{1e5, 3e5, 1e6, 3e6, 1e7}, []float64{1e9}, 1.44, 0.001)
	rep, err := Analyze(tab, Options{Baseline: mustSelector(t, "init.gamma=0.5"), Treated: mustSelector(t, "init.gamma=1.0"), Bootstrap: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Laws) != 1 || rep.Laws[0].Kind != "size" || rep.Laws[0].Law == nil {
		t.Fatalf("laws: %+v", rep.Laws)
	}
	l := rep.Laws[0]
	if math.Abs(l.Law.Alpha/0.3-1) > 0.02 || len(l.Treated) != 5 || len(l.Params) != 3 {
		t.Errorf("law %v, %d treated points, %d parameter intervals", l.Law.PowerLaw, len(l.Treated), len(l.Params))
	}
	for _, g := range l.Treated {
		if math.Abs(g.Gain-0.44) > 0.03 || g.CI == nil || !(g.CI.Lo < 0.44 && 0.44 < g.CI.Hi) || len(g.Runs) != 3 {
			t.Errorf("N = %g: gain %.4f, interval %+v, %d runs; want 0.44 inside", g.X, g.Gain, g.CI, len(g.Runs))
		}
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"size law L(N)", "N_eff", "+44.", "95% percentile, 200 bootstrap"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("JSON: %v", err)
	}
}

// TestFitAnalyzeDataLaw checks that a table varying the token budget gets a data law L(D) per size and a
// size law per budget.
func TestFitAnalyzeDataLaw(t *testing.T) {
	tab := syntheticTable([]float64{1e5, 1e6, 1e7, 1e8}, []float64{1e7, 1e8, 1e9, 1e10}, 1.44, 0)
	rep, err := Analyze(tab, Options{Baseline: mustSelector(t, "init.gamma=0.5")})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, l := range rep.Laws {
		kinds[l.Kind]++
		if l.Law == nil {
			t.Errorf("%s law at %g: %s", l.Kind, l.Fixed, l.Error)
			continue
		}
		want := 0.3
		if l.Kind == "data" {
			want = 0.25
		}
		if math.Abs(l.Law.Alpha/want-1) > 1e-4 {
			t.Errorf("%s law at %g: exponent %g, want %g", l.Kind, l.Fixed, l.Law.Alpha, want)
		}
	}
	if kinds["size"] != 4 || kinds["data"] != 4 {
		t.Errorf("laws by kind: %v", kinds)
	}
}

// TestFitAnalyzeRefusals checks Analyze's refusals: 3 sizes, flat losses, an ambiguous baseline, a treated
// point below E, and an unknown column.
func TestFitAnalyzeRefusals(t *testing.T) {
	three := syntheticTable([]float64{1e5, 1e6, 1e7}, []float64{1e9}, 1.44, 0.001)
	_, err := Analyze(three, Options{Baseline: mustSelector(t, "init.gamma=0.5")})
	if err == nil || !strings.Contains(err.Error(), "3 distinct sizes, need at least 4") {
		t.Errorf("3 sizes: %v", err)
	}
	flat := syntheticTable([]float64{1e5, 1e6, 1e7, 1e8}, []float64{1e9}, 1, 0)
	for _, r := range flat.Rows {
		r["val_loss"] = "3.5"
	}
	if _, err := Analyze(flat, Options{Baseline: mustSelector(t, "init.gamma=0.5")}); err == nil || !strings.Contains(err.Error(), "does not decrease") {
		t.Errorf("flat: %v", err)
	}
	both := syntheticTable([]float64{1e5, 1e6, 1e7, 1e8}, []float64{1e9}, 1.44, 0)
	if _, err := Analyze(both, Options{}); err == nil || !strings.Contains(err.Error(), "differ in init.gamma") {
		t.Errorf("ambiguous baseline: %v", err)
	}
	below := syntheticTable([]float64{1e5, 1e6, 1e7, 1e8}, []float64{1e9}, 1.44, 0)
	for _, r := range below.Rows {
		if r["init.gamma"] == "1" && r["N"] == "1e+08" {
			r["val_loss"] = "1.5"
		}
	}
	rep, err := Analyze(below, Options{Baseline: mustSelector(t, "init.gamma=0.5"), Treated: mustSelector(t, "init.gamma=1"), Bootstrap: 50})
	if err == nil || !strings.Contains(err.Error(), "≤ E") || rep == nil || rep.Laws[0].Treated[3].Error == "" {
		t.Errorf("treated point below E: %v", err)
	} else if _, err := json.Marshal(rep); err != nil {
		t.Errorf("JSON of a report with an unbounded N_eff: %v", err)
	}
	if _, err := Analyze(both, Options{Baseline: mustSelector(t, "init.gama=0.5")}); err == nil || !strings.Contains(err.Error(), `no column "init.gama"`) {
		t.Errorf("unknown column: %v", err)
	}
}

// TestFitReadTable checks that CSV and JSON tables (sweep collect's shape) read to the same rows, unfinished
// rows are skipped, and CSV axes are what the caller says.
func TestFitReadTable(t *testing.T) {
	tab := syntheticTable([]float64{1e5, 3e5, 1e6, 3e6}, []float64{1e9}, 1.44, 0.001)
	tab.Rows[0]["state"] = "running"
	dir := t.TempDir()
	var cb bytes.Buffer
	w := csv.NewWriter(&cb)
	w.Write(tab.Columns)
	for _, r := range tab.Rows {
		rec := make([]string, len(tab.Columns))
		for i, c := range tab.Columns {
			rec[i] = r[c]
		}
		w.Write(rec)
	}
	w.Flush()
	os.WriteFile(filepath.Join(dir, "t.csv"), cb.Bytes(), 0o644)
	rows := make([]map[string]any, len(tab.Rows))
	for i, r := range tab.Rows {
		rows[i] = map[string]any{}
		for k, v := range r {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				rows[i][k] = f
			} else {
				rows[i][k] = v
			}
		}
	}
	jb, _ := json.Marshal(map[string]any{"axes": tab.Axes, "columns": tab.Columns, "rows": rows})
	os.WriteFile(filepath.Join(dir, "t.json"), jb, 0o644)
	var reps []*Report
	for _, name := range []string{"t.csv", "t.json"} {
		rt, err := ReadTable(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if rt.Axes == nil {
			rt.Axes = tab.Axes
		}
		rep, err := Analyze(rt, Options{Baseline: mustSelector(t, "init.gamma=0.5"), Treated: mustSelector(t, "init.gamma=1")})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rep.Skipped != 1 {
			t.Errorf("%s: %d skipped, want 1", name, rep.Skipped)
		}
		reps = append(reps, rep)
	}
	if a, b := reps[0].Laws[0].Law.PowerLaw, reps[1].Laws[0].Law.PowerLaw; a != b {
		t.Errorf("CSV law %v, JSON law %v", a, b)
	}
}

// TestFitExtremeTablesEncode feeds Analyze finite values far outside any loss's range (what a corrupt or
// hostile table holds) and checks that the report still encodes as JSON, that means of huge losses do not
// overflow, and that a law whose fit overflows is refused rather than reported with an infinite parameter.
// CI's FuzzReadTable found the first such table (a report with +Inf in it).
func TestFitExtremeTablesEncode(t *testing.T) {
	const big = math.MaxFloat64 / 1.5
	row := func(g, seed, n, loss float64) string { return fmt.Sprintf("%g,%g,%g,1e6,%g,done\n", g, seed, n, loss) }
	base := func(scale, alpha float64) string { // L = scale·(2 + 10·N^(−α)), slightly off the law
		s := ""
		for i, n := range []float64{1, 2, 4, 8, 16} {
			s += row(0.5, 0, n, scale*(2+10*math.Pow(n, -alpha)+float64(i%2)*1e-6))
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		rows    string
		lawNil  bool    // the size law must be refused
		mean    float64 // when non-zero: the first treated cell's mean loss
		fitted0 bool    // the first treated cell's Fitted must be non-finite (extrapolation overflow)
	}{
		{"mean of two near-max losses", base(1, 0.3) + row(1, 0, 1e3, big) + row(1, 1, 1e3, big), false, big, false},
		{"mean of near-max losses of both signs", base(1, 0.3) + row(1, 0, 1e3, big) + row(1, 1, 1e3, -big/2), false, big / 4, false},
		{"treated size far below the baseline's", base(1, 2.5) + row(1, 0, 1e-300, 3), false, 0, true},
		{"baseline losses near 1e300", base(1e300, 0.3) + row(1, 0, 1e3, 3), true, 0, false},
		{"baseline losses near 1e155", base(1e155, 0.3) + row(1, 0, 1e3, 3), true, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.csv")
			if err := os.WriteFile(path, []byte("init.gamma,seed,N,tokens,val_loss,state\n"+tc.rows), 0o644); err != nil {
				t.Fatal(err)
			}
			tab, err := ReadTable(path)
			if err != nil {
				t.Fatal(err)
			}
			// Analyze's error reports a refused law or treated point; the report is filled in regardless.
			rep, err := Analyze(tab, Options{Baseline: mustSelector(t, "init.gamma=0.5"), Treated: mustSelector(t, "init.gamma=1"), Bootstrap: 8})
			if rep == nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(rep)
			if err != nil {
				t.Fatalf("report does not encode: %v", err)
			}
			l := rep.Laws[0]
			if (l.Law == nil) != tc.lawNil {
				t.Fatalf("law %+v (error %q), want refused = %v", l.Law, l.Error, tc.lawNil)
			}
			if tc.lawNil && !strings.Contains(l.Error, "overflows") {
				t.Errorf("refusal %q does not say the fit overflows", l.Error)
			}
			if len(l.Treated) == 0 {
				t.Fatal("no treated cells")
			}
			g := l.Treated[0]
			if math.IsInf(g.Loss, 0) || math.IsNaN(g.Loss) || (tc.mean != 0 && math.Abs(g.Loss/tc.mean-1) > 1e-12) {
				t.Errorf("mean loss %g of %v", g.Loss, g.Losses)
			}
			if tc.fitted0 && !math.IsInf(g.Fitted, 0) {
				t.Errorf("Fitted at x = %g is %g, want the overflow this case is about", g.X, g.Fitted)
			}
			if tc.fitted0 && !strings.Contains(string(b), `"fitted":null`) {
				t.Errorf("JSON lacks the null Fitted: %s", b)
			}
		})
	}
}

// ladderTable is a ladder at constant tokens per parameter: γ ∈ {0.5, 1} × sizes × 3 seeds, each size trained
// on tokens ≈ tpp·N rounded to whole steps of 4096 tokens (so D/N wobbles by well under a percent), losses from
// 1.7 + 400·N^(−0.3) (the data term folded in, as along such a ladder) with Gaussian noise sd (PCG seed 9); γ = 1's
// loss at N is the baseline's at gainN·N.
func ladderTable(sizes []float64, tpp func(n float64) float64, gainN, sd float64) *Table {
	truth := PowerLaw{E: 1.7, A: 400, Alpha: 0.3}
	rng := rand.New(rand.NewPCG(9, 9))
	t := &Table{Columns: []string{"id", "state", "init.gamma", "seed", "N", "tokens", "val_loss"}, Axes: []string{"init.gamma", "seed"}}
	for _, g := range []float64{0.5, 1} {
		for _, n := range sizes {
			d := math.Round(tpp(n)*n/4096) * 4096
			for s := range 3 {
				eff := n
				if g == 1 {
					eff = gainN * n
				}
				t.Rows = append(t.Rows, map[string]string{
					"id": fmt.Sprintf("%03d", len(t.Rows)), "state": "done", "init.gamma": fmt.Sprint(g), "seed": fmt.Sprint(s),
					"N": fmt.Sprint(n), "tokens": fmt.Sprint(d), "val_loss": strconv.FormatFloat(truth.Eval(eff)+sd*rng.NormFloat64(), 'g', -1, 64),
				})
			}
		}
	}
	return t
}

// TestFitAnalyzeLadderAtConstantTokensPerParameter: a ladder where only N varies (every size at 20 tokens per
// parameter, so no budget has two sizes) is fitted along N at D/N ≈ 20 instead of being refused, and the treated
// arm's 44% gain is read through it; a ladder whose D/N drifts (10 to 40) is refused with ErrBudgetFollowsSize,
// naming the ratio's range.
func TestFitAnalyzeLadderAtConstantTokensPerParameter(t *testing.T) {
	sizes := []float64{1e5, 3e5, 1e6, 3e6, 1e7}
	tab := ladderTable(sizes, func(float64) float64 { return 20 }, 1.44, 0.001)
	rep, err := Analyze(tab, Options{Baseline: mustSelector(t, "init.gamma=0.5"), Treated: mustSelector(t, "init.gamma=1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Laws) != 1 || rep.Laws[0].Law == nil {
		t.Fatalf("laws: %+v", rep.Laws)
	}
	l := rep.Laws[0]
	if l.Kind != "size" || l.FixedKey != "tokens/N" || math.Abs(l.Fixed/20-1) > 0.01 || len(l.Baseline) != 5 {
		t.Errorf("law %s at %s = %g on %d sizes; want a size law at tokens/N ≈ 20 on 5", l.Kind, l.FixedKey, l.Fixed, len(l.Baseline))
	}
	if math.Abs(l.Law.Alpha/0.3-1) > 0.05 || len(l.Treated) != 5 {
		t.Errorf("α = %g (want 0.3), %d treated points (want 5)", l.Law.Alpha, len(l.Treated))
	}
	for _, g := range l.Treated {
		if math.Abs(g.Gain-0.44) > 0.05 {
			t.Errorf("N = %g: gain %.4f, want 0.44", g.X, g.Gain)
		}
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "at tokens/N = 19.99") {
		t.Errorf("text report does not name the ladder's ratio:\n%s", text.String())
	}

	drift := ladderTable(sizes, func(n float64) float64 { return 10 * math.Pow(n/1e5, 0.3) }, 1.44, 0.001)
	_, err = Analyze(drift, Options{Baseline: mustSelector(t, "init.gamma=0.5")})
	if !errors.Is(err, ErrBudgetFollowsSize) || !strings.Contains(err.Error(), "tokens/N runs from 9.994 to 39.81") {
		t.Errorf("drifting ratio: %v; want ErrBudgetFollowsSize naming tokens/N from 9.994 to 39.81", err)
	}
}
