package anchor

import "math/rand/v2"

// The reasoning/memory mix of 2502.04375 ("Reasoning Bias in Transformer with Composite Anchor Functions"):
// q = 2 anchors, L = 9, keys Z = {21, …, 120}, memory anchors A_mem = {1, …, 10}, reasoning anchors
// A_rsn = {11, …, 20}, M = {(11,13), (13,11)}, 200,000 sequences with an equal number per anchor combination.
const (
	MixKeyMin, MixKeyMax = 21, 120
	MemAnchorMin         = 1
	MemAnchorMax         = 10
	RsnAnchorMin         = 11
	RsnAnchorMax         = 20
	// MixSize is the paper's dataset size: 200 anchor combinations (100 memory, 100 reasoning) × 1000.
	MixSize = 200000
	// MixVocab covers the keys, the anchors and the largest reasoning target 120 + 20 + 20 = 160.
	MixVocab = 168
)

// MixHeldOut is M, the reasoning pairs kept out of training: their sequences are D_rsn,test (our reading; the
// stored text names M with the data sets but does not spell out its role).
var MixHeldOut = []Pair{{11, 13}, {13, 11}}

// MixKind says which mapping a mix sequence follows.
type MixKind int

// Kinds of mix sequences: memory (both anchors in A_mem), reasoning seen in training, reasoning held out (M).
const (
	Memory MixKind = iota
	ReasoningTrain
	ReasoningTest
)

func (k MixKind) String() string {
	return [...]string{"memory", "reasoning-train", "reasoning-test"}[k]
}

// MixExample is a mix sequence with its kind.
type MixExample struct {
	Example
	Kind MixKind
}

// MemoryLabels are the memory mapping's labels y_(z, a1, a2), one per key and memory-anchor pair, drawn
// uniformly from Z once per seed: the label of every sequence holding that key-anchor combination, whatever
// its noise and position.
type MemoryLabels struct{ y []int32 }

// NewMemoryLabels draws the labels of seed.
func NewMemoryLabels(seed uint64) MemoryLabels {
	rng := rand.New(rand.NewPCG(seed, 0x3e3011ab))
	nk, na := MixKeyMax-MixKeyMin+1, MemAnchorMax-MemAnchorMin+1
	y := make([]int32, nk*na*na)
	for i := range y {
		y[i] = int32(MixKeyMin + rng.IntN(nk))
	}
	return MemoryLabels{y}
}

// Label is y_(z, a1, a2) for a key z in Z and memory anchors a1, a2.
func (m MemoryLabels) Label(z int, p Pair) int32 {
	na := MemAnchorMax - MemAnchorMin + 1
	return m.y[((z-MixKeyMin)*na+(p.A1-MemAnchorMin))*na+(p.A2-MemAnchorMin)]
}

// ReasoningTarget is F_rsn = z + a1 + a2.
func ReasoningTarget(z int, p Pair) int32 { return int32(z + p.A1 + p.A2) }

// mixPairs lists the 100 memory pairs and the 100 reasoning pairs.
func mixPairs() (mem, rsn []Pair) {
	for a1 := MemAnchorMin; a1 <= MemAnchorMax; a1++ {
		for a2 := MemAnchorMin; a2 <= MemAnchorMax; a2++ {
			mem = append(mem, Pair{a1, a2})
		}
	}
	for a1 := RsnAnchorMin; a1 <= RsnAnchorMax; a1++ {
		for a2 := RsnAnchorMin; a2 <= RsnAnchorMax; a2++ {
			rsn = append(rsn, Pair{a1, a2})
		}
	}
	return mem, rsn
}

func heldOut(p Pair) bool {
	for _, h := range MixHeldOut {
		if p == h {
			return true
		}
	}
	return false
}

// Mix draws the data set: perCombo sequences for each of the 200 anchor combinations (the paper's 1000 gives
// 200,000), each with a uniform key from Z at a uniform position 0 … 6 and noise uniform over Z. It returns
// the training sequences (memory and reasoning pairs outside M, shuffled) and D_rsn,test (the 2·perCombo
// sequences of M).
func Mix(perCombo int, labels MemoryLabels, seed uint64) (train, test []MixExample) {
	rng := rand.New(rand.NewPCG(seed, 0x3e3011ac))
	mem, rsn := mixPairs()
	for _, p := range mem {
		for range perCombo {
			train = append(train, mixAt(rng, rng.IntN(MixKeyMax-MixKeyMin+1)+MixKeyMin, rng.IntN(KeyPositions), p, labels))
		}
	}
	for _, p := range rsn {
		for range perCombo {
			e := mixAt(rng, rng.IntN(MixKeyMax-MixKeyMin+1)+MixKeyMin, rng.IntN(KeyPositions), p, labels)
			if heldOut(p) {
				test = append(test, e)
			} else {
				train = append(train, e)
			}
		}
	}
	rng.Shuffle(len(train), func(i, j int) { train[i], train[j] = train[j], train[i] })
	return train, test
}

// MixMemoryEval is one sequence for every memory key-anchor combination (100 keys × 100 pairs), at a random
// position with random noise: the memory accuracy is scored on the whole memory mapping, which is all in the
// training set (there is no memory test set).
func MixMemoryEval(labels MemoryLabels, seed uint64) []MixExample {
	rng := rand.New(rand.NewPCG(seed, 0x3e3011ad))
	mem, _ := mixPairs()
	var out []MixExample
	for _, p := range mem {
		for z := MixKeyMin; z <= MixKeyMax; z++ {
			out = append(out, mixAt(rng, z, rng.IntN(KeyPositions), p, labels))
		}
	}
	return out
}

func mixAt(rng *rand.Rand, z, pos int, p Pair, labels MemoryLabels) MixExample {
	toks := make([]int32, SeqLen)
	for j := range toks {
		switch j {
		case pos:
			toks[j] = int32(z)
		case pos + 1:
			toks[j] = int32(p.A1)
		case pos + 2:
			toks[j] = int32(p.A2)
		default:
			toks[j] = int32(MixKeyMin + rng.IntN(MixKeyMax-MixKeyMin+1))
		}
	}
	e := MixExample{Example: Example{Tokens: toks, Key: z, Pos: pos, Pair: p}}
	switch {
	case p.A1 <= MemAnchorMax:
		e.Kind, e.Answer = Memory, labels.Label(z, p)
	case heldOut(p):
		e.Kind, e.Answer = ReasoningTest, ReasoningTarget(z, p)
	default:
		e.Kind, e.Answer = ReasoningTrain, ReasoningTarget(z, p)
	}
	return e
}
