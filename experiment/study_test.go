package experiment

import (
	"math"
	"strings"
	"testing"
)

// TestStudyWorkJoinsThePlan: a study design's statement (Description.Statement) opens the printed plan, its
// extra work (Options.Extra, per seed) is priced on the plan's seeds in base-model steps and listed with them,
// and its scoring tokens (Options.ScoreTokens) enter the wall-time estimate once per run; without them there is
// none of it. The design hands all of it over as data: experiment calls nothing of it.
func TestStudyWorkJoinsThePlan(t *testing.T) {
	p, err := Parse([]byte(primariesPlan + "tokens_per_param = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Describe(p, Options{Out: t.TempDir()}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	work := []ExtraWork{{Name: "fake", Text: "the fake design's own training", FLOPsPerSeed: 1e12}}
	d, err := Describe(p, Options{Out: t.TempDir(), Extra: work, ScoreTokens: 1000}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	one, err := Describe(p, Options{Out: t.TempDir(), Extra: work, ScoreTokens: 1000, Seeds: []uint64{7}}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	d.Statement = []byte("H: the fake design's statement\n")
	var b strings.Builder
	if err := d.Write(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, "H: the fake design's statement\n") {
		t.Errorf("the statement does not open the plan:\n%s", text)
	}
	if !strings.Contains(text, "fake: the fake design's own training, on seeds [0 1 2]") || len(d.Extra) != 1 || len(d.Estimate.ExtraCost) != 1 || !(d.Estimate.ExtraCost[0] > 0) {
		t.Errorf("extra work %+v, cost %v:\n%s", d.Extra, d.Estimate.ExtraCost, text)
	}
	if len(p.Seeds) != 3 || len(one.Estimate.ExtraCost) != 1 || math.Abs(3*one.Estimate.ExtraCost[0]/d.Estimate.ExtraCost[0]-1) > 1e-12 {
		t.Errorf("extra cost on seeds %v: %v; on one seed: %v, want a third", p.Seeds, d.Estimate.ExtraCost, one.Estimate.ExtraCost)
	}
	if d.Estimate.ScoreTokens != int64(d.Estimate.Runs)*1000 {
		t.Errorf("score tokens %d for %d runs, want 1000 per run", d.Estimate.ScoreTokens, d.Estimate.Runs)
	}
	var pb strings.Builder
	if err := plain.Write(&pb); err != nil {
		t.Fatal(err)
	}
	if plain.Estimate.ExtraCost != nil || plain.Estimate.ScoreTokens != 0 || strings.Contains(pb.String(), "fake") {
		t.Errorf("a plan without a study's work: extra %v, score tokens %d", plain.Estimate.ExtraCost, plain.Estimate.ScoreTokens)
	}
}
