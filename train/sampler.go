package train

import (
	"fmt"
	"math/rand/v2"

	"github.com/smallinit/smallinit/data"
)

// Sampler hands out training windows of T+1 tokens (window k starts at token k·T, as in data.Window) in a
// seeded random order without replacement per epoch. Its whole state is (Epoch, Pos), so a resumed run draws
// exactly the batches the uninterrupted run would have.
type Sampler struct {
	Epoch, Pos int // current epoch and position in its permutation

	toks []int32
	T    int
	seed uint64
	perm []int32 // the current epoch's window order
}

// NewSampler prepares a sampler over toks at the given position.
func NewSampler(toks []int32, T int, seed uint64, epoch, pos int) (*Sampler, error) {
	nw := data.NumWindows(len(toks), T)
	if nw == 0 {
		return nil, fmt.Errorf("%d training tokens: need at least %d for one window of T=%d", len(toks), T+1, T)
	}
	if pos < 0 || pos > nw || epoch < 0 {
		return nil, fmt.Errorf("sampler position epoch %d, window %d: out of range (%d windows)", epoch, pos, nw)
	}
	s := &Sampler{Epoch: epoch, Pos: pos, toks: toks, T: T, seed: seed, perm: make([]int32, nw)}
	s.shuffle()
	return s, nil
}

// Windows is the number of windows per epoch.
func (s *Sampler) Windows() int { return len(s.perm) }

// shuffle fills perm with the epoch's permutation (Fisher-Yates from a PCG stream keyed by seed and epoch).
func (s *Sampler) shuffle() {
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	rng := rand.New(rand.NewPCG(s.seed, 0x5eed0000+uint64(s.Epoch)))
	for i := len(s.perm) - 1; i > 0; i-- {
		j := rng.IntN(i + 1)
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
	}
}

// Next fills one batch: len(inputs)/T windows into inputs and targets.
func (s *Sampler) Next(inputs, targets []int32) {
	for b := 0; b < len(inputs)/s.T; b++ {
		if s.Pos == len(s.perm) {
			s.Epoch++
			s.Pos = 0
			s.shuffle()
		}
		data.Window(s.toks, int(s.perm[s.Pos]), inputs[b*s.T:(b+1)*s.T], targets[b*s.T:(b+1)*s.T])
		s.Pos++
	}
}
