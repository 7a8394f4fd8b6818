package anchor

import (
	"fmt"
	"math/rand/v2"
)

// The composite task of 2405.05409 §3.1-3.2 and App. B.
const (
	// SeqLen is n, the input length: "each input sequence having a length of 9 tokens" (App. A).
	SeqLen = 9
	// KeyPositions is n − 2, the positions (0-indexed, 0 … 6) the key item can take with the anchor pair after
	// it, and the modulus of the train/test split (App. C: mod(x, n − 2)).
	KeyPositions = SeqLen - 2
	// ItemMin and ItemMax bound the key and noise items, 20-99 (§3.2).
	ItemMin, ItemMax = 20, 99
	// CompositeVocab covers the anchors 1-4, the items 20-99 and every target: the smallest is 20 − 10 = 10
	// (the inferential (4,3) answer), the largest 99 + 10 = 109 ((1,1)); 112 rounds it up to a multiple of 8.
	CompositeVocab = 112
)

// anchorShift is g(x; a) − x for the anchors 1-4: g(x;1) = x+5, g(x;2) = x+1, g(x;3) = x−2, g(x;4) = x−8
// (Eq. 2).
var anchorShift = [5]int{0, 5, 1, -2, -8}

// G is the single-anchor function g(x; a) of Eq. 2 for a in 1-4.
func G(x, a int) int { return x + anchorShift[a] }

// Pair is an anchor pair (a1, a2).
type Pair struct{ A1, A2 int }

// Held-out and non-inferential pairs of §4's set-up.
var (
	Unseen       = Pair{4, 3} // held out of training
	NonInferable = Pair{3, 4} // trained with x − 6 instead of its inferential x − 10
)

// SymmetricShift is M_(3,4)(x) − x = −6, the designated non-inferential mapping of (3,4) (§4), which a
// symmetric solution also gives (4,3).
const SymmetricShift = -6

// InferentialShift is f(x; a1, a2) − x = g(g(x; a1); a2) − x, the two-anchor composite function (Eq. 1).
func InferentialShift(p Pair) int { return anchorShift[p.A1] + anchorShift[p.A2] }

// Target is the designated target M_(a1,a2)(x) of the training set-up of §4: inferential for 14 pairs,
// x − 6 for (3,4); (4,3), which has no designated target, gets its inferential one (x − 10) so that test
// sets can score it either way.
func Target(x int, p Pair) int {
	if p == NonInferable {
		return x + SymmetricShift
	}
	return x + InferentialShift(p)
}

// SeenPairs are the 15 anchor pairs of the training set: all 16 but (4,3), in (a1, a2) order.
func SeenPairs() []Pair {
	var ps []Pair
	for a1 := 1; a1 <= 4; a1++ {
		for a2 := 1; a2 <= 4; a2++ {
			if p := (Pair{a1, a2}); p != Unseen {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// Example is one sequence: its input tokens, the key item's value and 0-indexed position (the anchor pair
// sits at Pos+1, Pos+2), the pair and the answer token.
type Example struct {
	Tokens []int32
	Key    int
	Pos    int
	Pair   Pair
	Answer int32
}

// TrainSplit reports whether item x may sit at 0-indexed position pos of a training sequence: App. C's rule
// mod(x, n−2) ≠ pos. Positions n−2 and n−1 (which no key can take) accept every item. A test sequence's key
// satisfies the opposite, mod(x, n−2) = pos, so a (key value, key position) of the test split never occurs
// at that position in any training sequence, not even as noise.
func TrainSplit(x, pos int) bool { return x%KeyPositions != pos }

// CompositeTrain draws n training sequences from the stream seeded by seed (§4 set-up): the pair uniform over
// the 15 seen pairs, the key position uniform over 0 … n−3, every item (key and noise) uniform over the items
// 20-99 the split rule allows at its position, the answer the pair's designated target of the key.
func CompositeTrain(n int, seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 0xa1c0de01))
	pairs := SeenPairs()
	out := make([]Example, n)
	for i := range out {
		p := pairs[rng.IntN(len(pairs))]
		pos := rng.IntN(KeyPositions)
		toks := make([]int32, SeqLen)
		for j := range toks {
			switch j {
			case pos + 1:
				toks[j] = int32(p.A1)
			case pos + 2:
				toks[j] = int32(p.A2)
			default:
				toks[j] = int32(drawItem(rng, func(x int) bool { return TrainSplit(x, j) }))
			}
		}
		key := int(toks[pos])
		out[i] = Example{Tokens: toks, Key: key, Pos: pos, Pair: p, Answer: int32(Target(key, p))}
	}
	return out
}

// drawItem draws an item of 20-99 uniformly among those ok accepts (at least 68 of the 80 do).
func drawItem(rng *rand.Rand, ok func(int) bool) int {
	for {
		if x := ItemMin + rng.IntN(ItemMax-ItemMin+1); ok(x) {
			return x
		}
	}
}

// CompositeTest is the test split of pair p (App. C, "generalization on data"): for every key item x, one
// sequence with the key at the position pos = mod(x, n−2), noise uniform over 20-99 from the stream seeded
// by seed: 80 sequences.
func CompositeTest(p Pair, seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 0xa1c0de02+uint64(p.A1*8+p.A2)))
	var out []Example
	for x := ItemMin; x <= ItemMax; x++ {
		out = append(out, compositeAt(rng, x, x%KeyPositions, p))
	}
	return out
}

// CompositeUnseen is the evaluation set of the held-out pair (4,3) ("generalization on task" is scored on
// test or training data, App. C): every key item at every key position, 80 × 7 = 560 sequences, noise from
// the stream seeded by seed. The Answer field holds the inferential target x − 10.
func CompositeUnseen(seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 0xa1c0de03))
	var out []Example
	for x := ItemMin; x <= ItemMax; x++ {
		for pos := 0; pos < KeyPositions; pos++ {
			out = append(out, compositeAt(rng, x, pos, Unseen))
		}
	}
	return out
}

func compositeAt(rng *rand.Rand, x, pos int, p Pair) Example {
	toks := make([]int32, SeqLen)
	for j := range toks {
		switch j {
		case pos:
			toks[j] = int32(x)
		case pos + 1:
			toks[j] = int32(p.A1)
		case pos + 2:
			toks[j] = int32(p.A2)
		default:
			toks[j] = int32(drawItem(rng, func(int) bool { return true }))
		}
	}
	return Example{Tokens: toks, Key: x, Pos: pos, Pair: p, Answer: int32(Target(x, p))}
}

// ParseExample reads a composite sequence back: the single anchor pair, the key before it and the answer of
// the designated mapping. It is the check that a hand-written sequence (such as App. B's worked examples)
// means what the generator means.
func ParseExample(toks []int32) (Example, error) {
	if len(toks) != SeqLen {
		return Example{}, fmt.Errorf("anchor sequence of %d tokens, want %d", len(toks), SeqLen)
	}
	pos := -1
	for j := 0; j+1 < len(toks); j++ {
		if isAnchor(toks[j]) && isAnchor(toks[j+1]) {
			if j == 0 {
				return Example{}, fmt.Errorf("anchor sequence %v: the anchor pair has no key item before it", toks)
			}
			if pos >= 0 {
				return Example{}, fmt.Errorf("anchor sequence %v: more than one anchor pair", toks)
			}
			pos = j - 1
		}
	}
	if pos < 0 {
		return Example{}, fmt.Errorf("anchor sequence %v: no anchor pair after a key item", toks)
	}
	for j, t := range toks {
		if j != pos+1 && j != pos+2 && (t < ItemMin || t > ItemMax) {
			return Example{}, fmt.Errorf("anchor sequence %v: token %d at %d is neither an item nor the pair", toks, t, j)
		}
	}
	p := Pair{int(toks[pos+1]), int(toks[pos+2])}
	key := int(toks[pos])
	return Example{Tokens: append([]int32(nil), toks...), Key: key, Pos: pos, Pair: p, Answer: int32(Target(key, p))}, nil
}

func isAnchor(t int32) bool { return t >= 1 && t <= 4 }
