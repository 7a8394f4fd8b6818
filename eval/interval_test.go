package eval

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestWilsonMatchesPublishedValues: the 95% Wilson score interval against values computed apart from this code
// (in Python) with the closed form (p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²))/(1 + z²/n), z = 1.959964; 0 of 20
// gives the textbook [0, 0.161]. It is never empty at 0 and 1, where p ± z·SE collapses to a point, and stays
// inside [0, 1].
func TestWilsonMatchesPublishedValues(t *testing.T) {
	for _, c := range []struct {
		hits, n int
		lo, hi  float64
	}{
		{0, 20, 0, 0.16113},
		{20, 20, 0.83887, 1},
		{5, 10, 0.23659, 0.76341},
		{1, 4, 0.04559, 0.69936},
		{0, 200, 0, 0.01885},
		{83, 200, 0.34894, 0.48426},
	} {
		lo, hi := Wilson(c.hits, c.n)
		if math.Abs(lo-c.lo) > 5e-5 || math.Abs(hi-c.hi) > 5e-5 {
			t.Errorf("Wilson(%d, %d) = [%.5f, %.5f], want [%.5f, %.5f]", c.hits, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := Wilson(0, 0); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("Wilson(0, 0) = [%v, %v], want NaN", lo, hi)
	}
}

// TestAccuracyAtEdgesShowsAnInterval: an accuracy of 0 or 1 is printed and marshalled with its interval, not
// as "± 0.0000"; a mean keeps its ± standard error and has no interval.
func TestAccuracyAtEdgesShowsAnInterval(t *testing.T) {
	var zero, all accuracy
	for range 20 {
		zero.add(false)
		all.add(true)
	}
	var loss mean
	loss.add(1)
	loss.add(2)
	res := &TaskResult{Task: "gsm8k", Kind: KindGSM8K, File: "g.jsonl", Docs: 20,
		Metrics: Metrics{zero.metric("exact_match_strict"), all.metric("exact_match_flexible"), loss.metric("gold_loss_per_token")}}
	var b strings.Builder
	res.WriteText(&b)
	out := b.String()
	for _, want := range []string{"exact_match_strict    0.0000  [0.0000, 0.1611]", "exact_match_flexible  1.0000  [0.8389, 1.0000]",
		"gold_loss_per_token   1.5000  ± 0.5000", "95% interval"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "± 0.0000") {
		t.Errorf("text shows a zero standard error:\n%s", out)
	}
	js, err := json.Marshal(res.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]struct {
		CI95 []float64 `json:"ci95"`
	}
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	if ci := got["exact_match_strict"].CI95; len(ci) != 2 || ci[0] != 0 || math.Abs(ci[1]-0.16113) > 5e-5 {
		t.Errorf("JSON ci95 of exact_match_strict %v: %s", ci, js)
	}
	if got["gold_loss_per_token"].CI95 != nil || !bytes.Contains(js, []byte(`"stderr":0.5`)) {
		t.Errorf("JSON of a mean: %s", js)
	}
}

// TestSubjectMeanOfPerfectSubjectsIsNotCertain: a subject mean over subjects that all scored 1 (or 0) has a
// standard error above 0 and an interval below 1, and says how many of the kind's subjects it averages.
func TestSubjectMeanOfPerfectSubjectsIsNotCertain(t *testing.T) {
	by := map[string]*accuracy{"agronomy": {hits: 3, n: 3}, "anatomy": {hits: 2, n: 2}}
	m := subjectMean(by, 67)
	if m.Value != 1 || !(m.StdErr > 0.05) || !(m.Lo < 0.9) || m.Hi != 1 || m.N != 2 || m.Note != "over 2 of the 67 subjects" {
		t.Errorf("subject mean %+v", m)
	}
	by = map[string]*accuracy{"agronomy": {hits: 0, n: 3}}
	if m := subjectMean(by, 1); m.Value != 0 || !(m.Hi > 0.1) || m.Note != "" {
		t.Errorf("subject mean of one subject of one %+v", m)
	}
}

// TestEveryKindRowExplainsItself: every kind's table row says what scoring a record means (eval-tasks --help),
// and a kind whose report has acc_norm_bytes carries the footnote that explains it, printed
// under its metrics: a new kind is one row, with no second list to update.
func TestEveryKindRowExplainsItself(t *testing.T) {
	for k, ks := range kindSpecs {
		if ks.grading == "" {
			t.Errorf("kind %s: no grading text", k)
		}
		if k == KindLM {
			continue
		}
		ms := newAggregate(k).metrics()
		if _, has := ms.Get("acc_norm_bytes"); has && !strings.Contains(ks.footnote, "acc_norm_bytes:") {
			t.Errorf("kind %s reports acc_norm_bytes without the footnote explaining it", k)
		}
		if ks.footnote != "" {
			var b strings.Builder
			(&TaskResult{Task: string(k), Kind: k, Metrics: ms}).WriteText(&b)
			if !strings.Contains(b.String(), ks.footnote) {
				t.Errorf("kind %s: footnote not printed:\n%s", k, b.String())
			}
		}
	}
	if !strings.Contains(KindHelp(), "gsm8k (gsm8k_cot): ") {
		t.Errorf("KindHelp:\n%s", KindHelp())
	}
}
