package diag

import (
	"fmt"
	"math"
)

// Bigram is a smoothed bigram model of a token stream: a reference for token difficulty that belongs to no
// trained run, so binning two runs' tokens by it favours neither γ and ties no seed's contrast to another's
// (docs/definitions.md §4, "Token difficulty"). p(x | y) = (c(y, x) + β·p₁(x)) / (c(y) + β), with the unigram
// p₁(x) = (c(x) + 1)/(N + V) (add-one) and β = BigramPrior (Dirichlet smoothing toward the unigram).
type Bigram struct {
	vocab  int
	n      float64
	uni    []float64         // c(x)
	ctx    []float64         // c(y) as a context (tokens followed by another)
	counts map[uint64]uint32 // c(y, x), keyed y·vocab + x
}

// BigramPrior is β, the weight of the unigram in a context's distribution (choice: 10 pseudo-counts).
const BigramPrior = 10

// FitBigram counts toks (ids in [0, vocab)).
func FitBigram(toks []int32, vocab int) (*Bigram, error) {
	if vocab < 1 {
		return nil, fmt.Errorf("bigram: vocabulary %d", vocab)
	}
	b := &Bigram{vocab: vocab, n: float64(len(toks)), uni: make([]float64, vocab), ctx: make([]float64, vocab), counts: map[uint64]uint32{}}
	for i, x := range toks {
		if x < 0 || int(x) >= vocab {
			return nil, fmt.Errorf("bigram: token %d at %d outside the vocabulary of %d", x, i, vocab)
		}
		b.uni[x]++
		if i > 0 {
			y := toks[i-1]
			b.ctx[y]++
			b.counts[uint64(y)*uint64(vocab)+uint64(x)]++
		}
	}
	return b, nil
}

// Loss is −ln p(x | y) in nats.
func (b *Bigram) Loss(y, x int32) float64 {
	p1 := (b.uni[x] + 1) / (b.n + float64(b.vocab))
	c := float64(b.counts[uint64(y)*uint64(b.vocab)+uint64(x)])
	return -math.Log((c + BigramPrior*p1) / (b.ctx[y] + BigramPrior))
}
