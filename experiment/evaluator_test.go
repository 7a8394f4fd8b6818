package experiment

import (
	"context"
	"io"
	"strings"
	"testing"
)

// fakeEvaluator is a study design that records what experiment hands it.
type fakeEvaluator struct {
	seeds  []uint64
	flops  float64
	tokens int64
}

func (f *fakeEvaluator) Statement(w io.Writer, d *Description) error {
	_, err := io.WriteString(w, "H: the fake design's statement\n")
	return err
}

func (f *fakeEvaluator) Extra(p *Plan, t *Tier, seeds []uint64) ([]ExtraWork, error) {
	f.seeds = seeds
	return []ExtraWork{{Name: "fake", Text: "the fake design's own training", FLOPs: f.flops}}, nil
}

func (f *fakeEvaluator) ScoreTokens(p *Plan, t *Tier) int64 { return f.tokens }

func (f *fakeEvaluator) Evaluate(ctx context.Context, out *Outcome) error { return nil }

// TestEvaluatorJoinsThePlan: a study design's statement opens the printed plan, its extra work on the plan's
// seeds is priced in base-model steps and listed, and its scoring
// tokens enter the wall-time estimate once per run; without an evaluator there is none of it.
func TestEvaluatorJoinsThePlan(t *testing.T) {
	p, err := Parse([]byte(primariesPlan + "tokens_per_param = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Describe(p, Options{Out: t.TempDir()}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	ev := &fakeEvaluator{tokens: 1000, flops: 1e12}
	d, err := Describe(p, Options{Out: t.TempDir(), Evaluator: ev}, 1e4)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := d.Write(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, "H: the fake design's statement\n") {
		t.Errorf("the statement does not open the plan:\n%s", text)
	}
	if !strings.Contains(text, "fake: the fake design's own training") || len(d.Extra) != 1 || len(d.Estimate.ExtraCost) != 1 || !(d.Estimate.ExtraCost[0] > 0) {
		t.Errorf("extra work %+v, cost %v:\n%s", d.Extra, d.Estimate.ExtraCost, text)
	}
	if len(ev.seeds) != len(p.Seeds) || d.Estimate.ScoreTokens != int64(d.Estimate.Runs)*1000 {
		t.Errorf("seeds %v (plan %v), score tokens %d for %d runs, want 1000 per run", ev.seeds, p.Seeds, d.Estimate.ScoreTokens, d.Estimate.Runs)
	}
	var pb strings.Builder
	if err := plain.Write(&pb); err != nil {
		t.Fatal(err)
	}
	if plain.Estimate.ExtraCost != nil || plain.Estimate.ScoreTokens != 0 || strings.Contains(pb.String(), "fake") {
		t.Errorf("a plan without an evaluator: extra %v, score tokens %d", plain.Estimate.ExtraCost, plain.Estimate.ScoreTokens)
	}
}
