package reproduce

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/smallinit/smallinit/stats"
)

// The language family of a study verdict (issue 44's family C, docs/results/2026-12-07-verdict-20tpp-plan.md
// "Family C", fixed before anything trained): H1's gain and H2's slope read on each language's validation split
// alone, one family of pre-registered secondaries, Bonferroni over its members at the primaries' α; beside them,
// reported and not judged, the gain in bits per byte on each source of the corpus's held-out text (the family's
// out-of-distribution text, docs/data.md "Held-out text") and on each embedded text of corpus/ood.

// LanguageFamily is that family's readout.
type LanguageFamily struct {
	// Alpha is the family-wise level; each member's interval and test are at Alpha/M (Bonferroni), so that the M
	// intervals hold together at 1 − Alpha.
	Alpha float64 `json:"alpha"`
	M     int     `json:"m"`
	// Tests are H1 on each language, then H2 on each language (languages sorted). A member whose evidence is not
	// there yet (H2 before the ladder has its widths) is in the family all the same, decision "inconclusive", with
	// Waiting saying why: the family's size is fixed by the plan, not by what has finished.
	Tests   []Test   `json:"tests"`
	Waiting []string `json:"waiting,omitempty"`
	// OOD is the paired gain of the primaries' width on each out-of-distribution text, bits per byte, a t-interval
	// at 95% unadjusted; OODWindows the windows of the model's context each text was scored on (0: whole).
	OOD        []Test `json:"ood,omitempty"`
	OODWindows int    `json:"ood_windows"`
	// HeldOut is the same for each source of the corpus's held-out text (HeldOutText), every document whole.
	HeldOut []Test `json:"held_out,omitempty"`
	// Rungs are the ladder's gains on each language, rung by rung (what H2's slopes summarise), t-intervals at
	// 95% unadjusted, reported; none for a ladder of one rung (its gain is H1's).
	Rungs []Test `json:"rungs,omitempty"`
}

// inLanguage is arm a with each seed's overall loss replaced by its loss on lang (a seed without it left out), so
// that a reading of the overall loss (gain, slopesOver) reads lang.
func inLanguage(a ArmEvidence, lang string) ArmEvidence {
	out := a
	out.Seeds = map[int]Loss{}
	for s, v := range a.Language(lang) {
		out.Seeds[s] = Loss{Overall: v}
	}
	return out
}

// judgeLanguages reads ev's family of language secondaries: for each language of the primaries' γ arms, H1's
// paired gain L(γ=0.5) − L(γ=1) and H2's per-seed slope of that gain against ln N over the ladder (at least
// spec.MinWidths widths spanning spec.MinSpan, as H2 itself), each decided at α/M on its Bonferroni-adjusted p
// (and TOST against the primary's δ), M = 2 × the languages; and the OOD texts' gains (reported).
func judgeLanguages(ev *Evidence, oodWindows int) *LanguageFamily {
	spec := ev.Primaries
	g05, g1 := ev.gammaArm(0.5), ev.gammaArm(1)
	langs := languages(g05, g1)
	if spec == nil || len(langs) < 2 {
		return nil
	}
	f := &LanguageFamily{Alpha: spec.Alpha, M: 2 * len(langs), OODWindows: oodWindows}
	lnSpan, widths := ladderSpan(ev.Ladder)
	short := len(widths) < spec.MinWidths || (len(widths) > 0 && float64(widths[len(widths)-1]) < spec.MinSpan*float64(widths[0]))
	for _, lang := range langs {
		d := gain(g05.Language(lang), g1.Language(lang))
		f.Tests = append(f.Tests, Test{Name: "H1 on " + lang + ": L(γ=0.5) − L(γ=1)", Decisive: true, Delta: spec.DeltaH1(),
			Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}})
	}
	for _, lang := range langs {
		t := Test{Name: "H2 on " + lang + ": slope of the gain against ln N", Decisive: true, Delta: spec.DeltaH2(lnSpan)}
		if short {
			f.Waiting = append(f.Waiting, fmt.Sprintf("%s: the ladder has widths %v; H2 needs ≥ %d widths spanning ≥ %gx", t.Name, widths, spec.MinWidths, spec.MinSpan))
		} else {
			ladder := make([]Rung, len(ev.Ladder))
			for i, r := range ev.Ladder {
				ladder[i] = Rung{Width: r.Width, N: r.N, G05: inLanguage(r.G05, lang), G1: inLanguage(r.G1, lang)}
			}
			d, _ := ladderSlopes(ladder)
			t.Estimate = stats.Estimate{Seeds: d.Seeds, Values: d.Values}
		}
		f.Tests = append(f.Tests, t)
	}
	alpha := f.Alpha / float64(f.M)
	for i := range f.Tests {
		t := &f.Tests[i]
		t.measure(alpha)
		t.Decision = Inconclusive
		if t.Estimate.N < MinSeeds {
			continue
		}
		p := math.Min(1, float64(f.M)*t.Estimate.P)
		t.PBonferroni = &p
		if t.PTOST != nil {
			q := math.Min(1, float64(f.M)**t.PTOST)
			t.PTOST = &q
		}
		t.Decision = decide(t.Estimate, t.Delta, pOr1(t.PTOST), p, p, f.Alpha)
		t.Result = resultOf(t.Decision)
		t.RestsOnOneSeed = t.fragile(t.Decision, alpha)
	}
	reported := func(name string, d stats.Diff) Test {
		t := Test{Name: "gain on " + name + " (bits per byte)", Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}}
		t.measure(FamilyAlpha)
		return t
	}
	if len(ev.Ladder) >= 2 {
		for _, r := range ev.Ladder {
			for _, lang := range langs {
				d := gain(r.G05.Language(lang), r.G1.Language(lang))
				t := Test{Name: fmt.Sprintf("gain on %s at width %d (N = %.0f)", lang, r.Width, r.N), Delta: spec.DeltaH1(),
					Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}}
				t.measure(FamilyAlpha)
				f.Rungs = append(f.Rungs, t)
			}
		}
	}
	for _, text := range heldOutSources(g05, g1) {
		f.HeldOut = append(f.HeldOut, reported("held-out "+text, gain(g05.HeldOutSource(text), g1.HeldOutSource(text))))
	}
	for _, text := range oodTexts(g05, g1) {
		f.OOD = append(f.OOD, reported(text, gain(g05.OODText(text), g1.OODText(text))))
	}
	return f
}

// WriteText prints the family: its members with their decisions, what waits, and the OOD texts.
func (f *LanguageFamily) WriteText(w io.Writer) {
	fmt.Fprintf(w, "Each language on its own (pre-registered secondaries: one family of %d, Bonferroni at α = %g, each interval at %.4g%%):\n",
		f.M, f.Alpha, 100*(1-f.Alpha/float64(f.M)))
	for _, t := range f.Tests {
		fmt.Fprintf(w, "  %s — %s\n", (&claimTests{tests: []Test{t}}).text(), t.Decision)
	}
	for _, s := range f.Waiting {
		fmt.Fprintf(w, "  waiting: %s\n", s)
	}
	if len(f.Rungs) > 0 {
		fmt.Fprintf(w, "The ladder's gains on each language, rung by rung (reported, not judged):\n")
		for _, t := range f.Rungs {
			fmt.Fprintf(w, "  %s\n", strings.TrimSuffix((&claimTests{tests: []Test{t}}).text(), " [reported]"))
		}
	}
	if len(f.HeldOut) > 0 {
		fmt.Fprintf(w, "The corpus's held-out text by source, each document whole (reported, not judged; positive: γ = 1 lower):\n")
		for _, t := range f.HeldOut {
			fmt.Fprintf(w, "  %s\n", strings.TrimSuffix((&claimTests{tests: []Test{t}}).text(), " [reported]"))
		}
	}
	if len(f.OOD) > 0 {
		how := "each text whole"
		if f.OODWindows > 0 {
			how = fmt.Sprintf("each text's first %d windows", f.OODWindows)
		}
		fmt.Fprintf(w, "Out-of-distribution texts, %s (reported, not judged; positive: γ = 1 lower):\n", how)
		for _, t := range f.OOD {
			fmt.Fprintf(w, "  %s\n", strings.TrimSuffix((&claimTests{tests: []Test{t}}).text(), " [reported]"))
		}
	}
	fmt.Fprintln(w)
}
