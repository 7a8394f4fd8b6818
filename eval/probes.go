package eval

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Reasoning probes: tasks small enough that a tiny model trained for minutes can learn them when they are
// mixed into its training text, each with a "memorisation" counterpart of the same surface form whose answers
// are a fixed random function of the prompt, so they can only be memorised. Comparing the two separates
// learning an algorithm (held-out prompts of a reasoning kind are answered) from memorising a table (only
// prompts seen in training are answered).
//
// Every prompt is "KEYWORD: PAYLOAD =" and the training line is the prompt, a space and the answer. Symbols are
// separated by spaces so that any byte-level BPE gives each digit, letter or bracket its own token. The
// memorisation counterpart of a kind writes its keyword with a "~" (add~) and is named kind + "_mem".

// Probe is one probe: the JSONL record of KindProbe.
type Probe struct {
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
	Kind   string `json:"kind"`
}

// Text is the probe as one training line (without the line break).
func (p Probe) Text() string { return p.Prompt + " " + p.Answer }

// Probe classes.
const (
	ProbeReasoning    = "reasoning"
	ProbeMemorisation = "memorisation"
)

// ProbeClass is ProbeMemorisation for kinds ending in "_mem" and ProbeReasoning otherwise.
func ProbeClass(kind string) string {
	if strings.HasSuffix(kind, "_mem") {
		return ProbeMemorisation
	}
	return ProbeReasoning
}

// probeGen writes one random probe payload and its answer.
type probeGen struct {
	kind, keyword string
	gen           func(r *rand.Rand) (payload, answer string)
}

var probeGens = []probeGen{
	{"add", "add", genAdd},
	{"mod", "mod", genMod},
	{"hop", "hop", genHop},
	{"brackets", "brk", genBrackets},
	{"copy", "copy", genCopy},
	{"reverse", "rev", genReverse},
}

// ProbeKinds lists every probe kind: the reasoning kinds, then their memorisation counterparts.
func ProbeKinds() []string {
	var ks []string
	for _, g := range probeGens {
		ks = append(ks, g.kind)
	}
	for _, g := range probeGens {
		ks = append(ks, g.kind+"_mem")
	}
	return ks
}

// spaced writes the characters of s separated by spaces.
func spaced(s string) string { return strings.Join(strings.Split(s, ""), " ") }

// genAdd: "add: 4 8 2 + 9 3 7 =" → "1 4 1 9"; operands of 1 to 3 digits.
func genAdd(r *rand.Rand) (string, string) {
	a, b := randDigits(r, 1+r.IntN(3)), randDigits(r, 1+r.IntN(3))
	return spaced(strconv.Itoa(a)) + " + " + spaced(strconv.Itoa(b)), spaced(strconv.Itoa(a + b))
}

func randDigits(r *rand.Rand, n int) int {
	if n == 1 {
		return r.IntN(10)
	}
	lo := 1
	for i := 1; i < n; i++ {
		lo *= 10
	}
	return lo + r.IntN(9*lo)
}

var moduli = []int{7, 11, 13, 17, 19, 23}

// genMod: "mod: ( 4 5 + 1 2 ) % 1 3 =" → "5"; a, b < 100, modulus from a fixed set of primes.
func genMod(r *rand.Rand) (string, string) {
	a, b, m := r.IntN(100), r.IntN(100), moduli[r.IntN(len(moduli))]
	return "( " + spaced(strconv.Itoa(a)) + " + " + spaced(strconv.Itoa(b)) + " ) % " + spaced(strconv.Itoa(m)),
		spaced(strconv.Itoa((a + b) % m))
}

// genHop: "hop: c>a b>e a>f f>b e>d d>c ; b 2 =" → "d": six facts x>f(x) where f runs through six random
// letters in one cycle (so every hop moves), listed in random order; the answer is f applied 2 or 3 times to
// the query letter.
func genHop(r *rand.Rand) (string, string) {
	letters := r.Perm(26)[:6] // the cycle letters[0] > letters[1] > ... > letters[5] > letters[0]
	name := func(i int) string { return string(rune('a' + letters[i%6])) }
	facts := make([]string, 6)
	for i, j := range r.Perm(6) {
		facts[i] = name(j) + ">" + name(j+1)
	}
	start, hops := r.IntN(6), 2+r.IntN(2)
	return strings.Join(facts, " ") + " ; " + name(start) + " " + strconv.Itoa(hops), name(start + hops)
}

// genBrackets: "brk: ( [ ] { ( =" → ") } )": a random prefix of a bracket sequence with 1 to 4 brackets left
// open; the answer closes them.
func genBrackets(r *rand.Rand) (string, string) {
	const open, close = "([{", ")]}"
	n := 4 + r.IntN(7)
	var seq []byte
	var stack []int
	for len(seq) < n || len(stack) == 0 {
		if len(stack) > 0 && (len(stack) >= 4 || r.IntN(5) < 2) {
			seq = append(seq, close[stack[len(stack)-1]])
			stack = stack[:len(stack)-1]
			continue
		}
		k := r.IntN(3)
		seq = append(seq, open[k])
		stack = append(stack, k)
	}
	ans := make([]byte, 0, len(stack))
	for i := len(stack) - 1; i >= 0; i-- {
		ans = append(ans, close[stack[i]])
	}
	return spaced(string(seq)), spaced(string(ans))
}

func randLetters(r *rand.Rand) string {
	b := make([]byte, 4+r.IntN(5))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// genCopy: "copy: q w e r t =" → "q w e r t"; 4 to 8 letters.
func genCopy(r *rand.Rand) (string, string) {
	s := spaced(randLetters(r))
	return s, s
}

// genReverse: "rev: q w e r t =" → "t r e w q"; 4 to 8 letters.
func genReverse(r *rand.Rand) (string, string) {
	b := []byte(randLetters(r))
	s := spaced(string(b))
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return s, spaced(string(b))
}

// memAnswer is the memorisation answer of prompt: the reasoning answer's shape (each digit, letter or closing
// bracket replaced by a random one of its class, no leading zero), never equal to the reasoning answer, drawn
// from a generator seeded by the seed and the prompt, so the same prompt always gets the same answer and
// nothing but memory predicts it.
func memAnswer(seed uint64, prompt, shape string) string {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	r := rand.New(rand.NewPCG(seed^0x6d656d6f, h.Sum64()))
	b := []byte(shape)
	for try := 0; try < 100; try++ {
		for i, c := range shape {
			switch {
			case c >= '0' && c <= '9':
				lo := 0
				if i == 0 && len(b) > 1 {
					lo = 1
				}
				b[i] = byte('0' + lo + r.IntN(10-lo))
			case c >= 'a' && c <= 'z':
				b[i] = byte('a' + r.IntN(26))
			case c == ')' || c == ']' || c == '}':
				b[i] = ")]}"[r.IntN(3)]
			}
		}
		if string(b) != shape {
			break // never the reasoning answer, so the two kinds cannot be confused
		}
	}
	return string(b)
}

// ProbeConfig sizes a probe set. Counts are per kind.
type ProbeConfig struct {
	Seed  uint64
	Train int // training examples per kind
	Test  int // held-out test probes per kind (and recall probes per kind)
	Table int // distinct prompts of each memorisation kind's table
}

// ProbeSet is what MakeProbes makes.
type ProbeSet struct {
	// Train is the training text, every kind mixed and shuffled. Each memorisation table entry occurs about
	// Train/Table times.
	Train []Probe
	// Test holds prompts that occur nowhere in Train. Reasoning kinds measure generalisation; memorisation kinds
	// are at chance by construction (their answers are random), a control that they cannot be reasoned out.
	Test []Probe
	// Recall holds prompts taken from Train: memorisation kinds measure memorisation; reasoning kinds give the
	// training-set accuracy to compare Test with.
	Recall []Probe
}

// MakeProbes makes a probe set. It is deterministic: the same config gives the same probes, in the same order,
// and each kind draws from its own stream, so adding kinds does not change the others.
func MakeProbes(c ProbeConfig) (*ProbeSet, error) {
	if c.Train < 1 || c.Test < 1 || c.Table < 1 {
		return nil, fmt.Errorf("probes: train %d, test %d and table %d must all be positive", c.Train, c.Test, c.Table)
	}
	ps := &ProbeSet{}
	for _, g := range probeGens {
		// Reasoning kind: distinct test prompts not in training.
		r := kindRand(c.Seed, g.kind)
		seen := map[string]bool{}
		for i := 0; i < c.Train; i++ {
			p, a := g.gen(r)
			pr := g.keyword + ": " + p + " ="
			seen[pr] = true
			ps.Train = append(ps.Train, Probe{pr, a, g.kind})
		}
		start := len(ps.Train) - c.Train
		test, err := freshProbes(r, g, c.Test, seen, func(pr, a string) Probe { return Probe{pr, a, g.kind} }, "")
		if err != nil {
			return nil, err
		}
		ps.Test = append(ps.Test, test...)
		for _, i := range r.Perm(c.Train)[:min(c.Test, c.Train)] {
			ps.Recall = append(ps.Recall, ps.Train[start+i])
		}

		// Memorisation kind: a table of distinct prompts with random answers.
		mk := g.kind + "_mem"
		r = kindRand(c.Seed, mk)
		mem := func(pr, a string) Probe { return Probe{pr, memAnswer(c.Seed, pr, a), mk} }
		table, err := freshProbes(r, g, c.Table, map[string]bool{}, mem, "~")
		if err != nil {
			return nil, err
		}
		inTable := map[string]bool{}
		for _, p := range table {
			inTable[p.Prompt] = true
		}
		for i := 0; i < c.Train; i++ {
			if i < len(table) {
				ps.Train = append(ps.Train, table[i]) // every entry at least once
			} else {
				ps.Train = append(ps.Train, table[r.IntN(len(table))])
			}
		}
		test, err = freshProbes(r, g, c.Test, inTable, mem, "~")
		if err != nil {
			return nil, err
		}
		ps.Test = append(ps.Test, test...)
		for _, i := range r.Perm(len(table))[:min(c.Test, len(table), c.Train)] {
			ps.Recall = append(ps.Recall, table[i])
		}
	}
	r := kindRand(c.Seed, "shuffle")
	for _, s := range [][]Probe{ps.Train, ps.Test, ps.Recall} {
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	}
	return ps, nil
}

// kindRand is the random stream of one kind.
func kindRand(seed uint64, kind string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(kind))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// freshProbes draws n distinct probes whose prompts are not in avoid (g's keyword + mark).
func freshProbes(r *rand.Rand, g probeGen, n int, avoid map[string]bool, mk func(prompt, answer string) Probe, mark string) ([]Probe, error) {
	var out []Probe
	taken := map[string]bool{}
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("probes: kind %s: found only %d of %d distinct new prompts", g.kind, len(out), n)
		}
		p, a := g.gen(r)
		pr := g.keyword + mark + ": " + p + " ="
		if avoid[pr] || taken[pr] {
			continue
		}
		taken[pr] = true
		out = append(out, mk(pr, a))
	}
	return out, nil
}
