package diag

import (
	"math"
	"testing"
)

// The bigram's conditional distributions are normalised, follow the counts, and fall back to the unigram for an
// unseen context.
func TestBigramIsADistributionThatFollowsTheCounts(t *testing.T) {
	toks := []int32{0, 1, 0, 1, 0, 2, 0, 1, 3, 3}
	b, err := FitBigram(toks, 5)
	if err != nil {
		t.Fatal(err)
	}
	for y := range int32(5) {
		var sum float64
		for x := range int32(5) {
			sum += math.Exp(-b.Loss(y, x))
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("context %d: probabilities sum to %.15f", y, sum)
		}
	}
	if !(b.Loss(0, 1) < b.Loss(0, 2) && b.Loss(0, 2) < b.Loss(0, 4)) {
		t.Errorf("after 0: losses of 1, 2, 4 are %.3f, %.3f, %.3f; want the seen-most token easiest", b.Loss(0, 1), b.Loss(0, 2), b.Loss(0, 4))
	}
	// Token 4 never appears: its context is empty, so p(x | 4) is the unigram.
	if got, want := b.Loss(4, 0), -math.Log((4.0+1)/(10+5)); math.Abs(got-want) > 1e-12 {
		t.Errorf("unseen context: loss %.6f, want the unigram's %.6f", got, want)
	}
	if _, err := FitBigram([]int32{0, 7}, 5); err == nil {
		t.Error("a token outside the vocabulary was counted")
	}
}
