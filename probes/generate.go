package probes

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/eval"
)

// probeGen writes one random probe payload, its answer and the answer's chance level (see eval.Probe.Chance).
type probeGen struct {
	kind, keyword string
	gen           func(r *rand.Rand) (payload, answer string, chance float64)
}

// DefaultAddDigits is the most digits of an addition operand unless Config.AddDigits says otherwise.
const DefaultAddDigits = 3

// maxAddDigits keeps sums well inside an int.
const maxAddDigits = 9

// probeGens returns the generators of every reasoning kind, in a fixed order.
func probeGens(addDigits int) []probeGen {
	return []probeGen{
		{"add", "add", addGen(addDigits)},
		{"mod", "mod", genMod},
		{"hop", "hop", genHop},
		{"brackets", "brk", genBrackets},
		{"copy", "copy", genCopy},
		{"reverse", "rev", genReverse},
	}
}

// Kinds lists every probe kind: the reasoning kinds, then their memorisation counterparts.
func Kinds() []string {
	gens := probeGens(DefaultAddDigits)
	var ks []string
	for _, g := range gens {
		ks = append(ks, g.kind)
	}
	for _, g := range gens {
		ks = append(ks, g.kind+"_mem")
	}
	return ks
}

// spaced writes the characters of s separated by spaces.
func spaced(s string) string { return strings.Join(strings.Split(s, ""), " ") }

// reversed returns s with its bytes in reverse order.
func reversed(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// addGen returns the addition generator with operands of up to digits digits: each operand's number of
// digits is uniform in 1..digits, then its value uniform among the integers of that many digits; every number
// is written least-significant digit first and zero-padded, the operands to digits digits and the sum to
// digits+1 (with 2 digits, "add: 6 7 + 1 6 =" → "7 3 1" is 76 + 61 = 137, "add: 6 7 + 5 0 =" → "1 8 0" is
// 76 + 5 = 81). Every answer digit then sits the same number of tokens after the operand digits of its place,
// and right after the digit below it, which decides its carry. Short operands, whose padding zeros make an
// answer digit a copy of the other operand's digit (plus the carry), give a model the first clue of where to
// look; a sum digit of two uniform digits is independent of either alone.
func addGen(digits int) func(r *rand.Rand) (string, string, float64) {
	return func(r *rand.Rand) (string, string, float64) {
		da, db := 1+r.IntN(digits), 1+r.IntN(digits)
		a, b := randDigits(r, da), randDigits(r, db)
		// a takes n_a values and b n_b, each uniformly, in two ranges of consecutive integers: the most common sum
		// is made by min(n_a, n_b) of the n_a·n_b pairs.
		chance := 1 / float64(max(numDigitValues(da), numDigitValues(db)))
		return lsdFirst(a, digits) + " + " + lsdFirst(b, digits), lsdFirst(a+b, digits+1), chance
	}
}

// numDigitValues is how many integers have n digits (0 counts as a one-digit number).
func numDigitValues(n int) int {
	lo, hi := digitRange(n)
	return hi - lo + 1
}

// randDigits draws an integer of n digits uniformly.
func randDigits(r *rand.Rand, n int) int {
	lo, hi := digitRange(n)
	return lo + r.IntN(hi-lo+1)
}

// lsdFirst writes x zero-padded to width digits, least-significant digit first, spaced.
func lsdFirst(x, width int) string { return spaced(reversed(fmt.Sprintf("%0*d", width, x))) }

// digitRange is the smallest and largest integer of n digits (0 to 9 for one digit).
func digitRange(n int) (lo, hi int) {
	if n == 1 {
		return 0, 9
	}
	lo = 1
	for i := 1; i < n; i++ {
		lo *= 10
	}
	return lo, 10*lo - 1
}

var moduli = []int{7, 11, 13, 17, 19, 23}

// genMod: "mod: ( 4 5 + 1 2 ) % 1 3 =" → "5"; a, b < 100, modulus from a fixed set of primes.
func genMod(r *rand.Rand) (string, string, float64) {
	a, b, m := r.IntN(100), r.IntN(100), moduli[r.IntN(len(moduli))]
	return "( " + spaced(strconv.Itoa(a)) + " + " + spaced(strconv.Itoa(b)) + " ) % " + spaced(strconv.Itoa(m)),
		spaced(strconv.Itoa((a + b) % m)), modChance(len(strconv.Itoa(a)), len(strconv.Itoa(b)), m)
}

// modChance is the probability of the most common residue modulo m of a + b, with a and b uniform among the
// integers of da and db digits.
func modChance(da, db, m int) float64 {
	alo, ahi := digitRange(da)
	blo, bhi := digitRange(db)
	count := make([]int, m)
	for a := alo; a <= ahi; a++ {
		for b := blo; b <= bhi; b++ {
			count[(a+b)%m]++
		}
	}
	return float64(slices.Max(count)) / float64((ahi-alo+1)*(bhi-blo+1))
}

// genHop: "hop: c>a b>e a>f f>b e>d d>c ; b 2 =" → "d": six facts x>f(x) where f runs through six random
// letters in one cycle (so every hop moves), listed in random order; the answer is f applied 2 or 3 times to
// the query letter, one of the five cycle letters other than the query.
func genHop(r *rand.Rand) (string, string, float64) {
	letters := r.Perm(26)[:6] // the cycle letters[0] > letters[1] > ... > letters[5] > letters[0]
	name := func(i int) string { return string(rune('a' + letters[i%6])) }
	facts := make([]string, 6)
	for i, j := range r.Perm(6) {
		facts[i] = name(j) + ">" + name(j+1)
	}
	start, hops := r.IntN(6), 2+r.IntN(2)
	return strings.Join(facts, " ") + " ; " + name(start) + " " + strconv.Itoa(hops), name(start + hops), 1.0 / 5
}

// genBrackets: "brk: ( [ ] { ( =" → ") } )": a random prefix of a bracket sequence with 1 to 4 brackets left
// open; the answer closes them.
func genBrackets(r *rand.Rand) (string, string, float64) {
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
	return spaced(string(seq)), spaced(string(ans)), math.Pow(3, -float64(len(ans)))
}

func randLetters(r *rand.Rand) string {
	b := make([]byte, 4+r.IntN(5))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// genCopy: "copy: q w e r t =" → "q w e r t"; 4 to 8 letters.
func genCopy(r *rand.Rand) (string, string, float64) {
	b := randLetters(r)
	return spaced(b), spaced(b), math.Pow(26, -float64(len(b)))
}

// genReverse: "rev: q w e r t =" → "t r e w q"; 4 to 8 letters.
func genReverse(r *rand.Rand) (string, string, float64) {
	b := randLetters(r)
	return spaced(b), spaced(reversed(b)), math.Pow(26, -float64(len(b)))
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

// memChance is the chance level of a memorisation answer drawn by memAnswer for the reasoning answer shape: one
// over the number of answers memAnswer can give (every string of the shape's classes, no leading zero, but not
// the shape itself).
func memChance(shape string) float64 {
	n, inSpace := 1.0, true
	for i, c := range shape {
		switch {
		case c >= '0' && c <= '9':
			if i == 0 && len(shape) > 1 {
				n *= 9
				inSpace = c != '0'
			} else {
				n *= 10
			}
		case c >= 'a' && c <= 'z':
			n *= 26
		case c == ')' || c == ']' || c == '}':
			n *= 3
		}
	}
	if inSpace {
		n--
	}
	return 1 / n
}

// Config sizes a probe set. Counts are per kind.
type Config struct {
	Seed  uint64
	Train int // training examples per kind
	Test  int // held-out test probes per kind (and recall probes per kind)
	Table int // distinct prompts of each memorisation kind's table
	// Kinds selects the kinds to make, reasoning ("add") and memorisation ("add_mem") alike; empty means every
	// kind of Kinds. Each kind draws from its own stream, so a kind's probes do not depend on the others
	// selected (only the shuffled order of the mixed sets does).
	Kinds []string
	// AddDigits is the most digits of an addition operand (1 to 9; 0 means DefaultAddDigits). Fewer digits make
	// addition quicker to learn.
	AddDigits int
}

// MaxProbes is the most probes of one kind Make makes for each set (train, test, table): ten million
// (about 1 GB of training text per kind), so a mistyped count fails at once instead of after minutes.
const MaxProbes = 10_000_000

// Set is what Make makes.
type Set struct {
	// Kinds are the kinds made, in Kinds order.
	Kinds []string
	// Train is the training text, every kind mixed and shuffled. Each memorisation table entry occurs about
	// Train/Table times.
	Train []eval.Probe
	// Test holds prompts that occur nowhere in Train. Reasoning kinds measure generalisation; memorisation kinds
	// are at chance by construction (their answers are random), a control that they cannot be reasoned out.
	Test []eval.Probe
	// Recall holds prompts taken from Train: memorisation kinds measure memorisation; reasoning kinds give the
	// training-set accuracy to compare Test with.
	Recall []eval.Probe
}

// Make makes a probe set. It is deterministic: the same config gives the same probes, in the same order,
// and each kind draws from its own stream, so adding kinds does not change the others.
func Make(c Config) (*Set, error) {
	if c.Train < 1 || c.Test < 1 || c.Table < 1 {
		return nil, fmt.Errorf("probes: train %d, test %d and table %d must all be positive", c.Train, c.Test, c.Table)
	}
	if c.Train > MaxProbes || c.Test > MaxProbes || c.Table > MaxProbes {
		return nil, fmt.Errorf("probes: train %d, test %d, table %d: each at most %d per kind", c.Train, c.Test, c.Table, MaxProbes)
	}
	digits := c.AddDigits
	if digits == 0 {
		digits = DefaultAddDigits
	}
	if digits < 1 || digits > maxAddDigits {
		return nil, fmt.Errorf("probes: %d addition digits: want 1 to %d", c.AddDigits, maxAddDigits)
	}
	want := map[string]bool{}
	for _, k := range c.Kinds {
		if !slices.Contains(Kinds(), k) {
			return nil, fmt.Errorf("probes: unknown kind %q (kinds: %s)", k, strings.Join(Kinds(), ", "))
		}
		want[k] = true
	}
	selected := func(k string) bool { return len(want) == 0 || want[k] }
	ps := &Set{}
	for _, k := range Kinds() {
		if selected(k) {
			ps.Kinds = append(ps.Kinds, k)
		}
	}
	for _, g := range probeGens(digits) {
		if selected(g.kind) {
			// Reasoning kind: distinct test prompts not in training.
			r := kindRand(c.Seed, g.kind)
			seen := map[string]bool{}
			for i := 0; i < c.Train; i++ {
				p, a, ch := g.gen(r)
				pr := g.keyword + ": " + p + " ="
				seen[pr] = true
				ps.Train = append(ps.Train, eval.Probe{Prompt: pr, Answer: a, Kind: g.kind, Chance: ch})
			}
			start := len(ps.Train) - c.Train
			test, err := freshProbes(r, g, c.Test, seen, func(pr, a string, ch float64) eval.Probe {
				return eval.Probe{Prompt: pr, Answer: a, Kind: g.kind, Chance: ch}
			}, "")
			if err != nil {
				return nil, err
			}
			ps.Test = append(ps.Test, test...)
			for _, i := range r.Perm(c.Train)[:min(c.Test, c.Train)] {
				ps.Recall = append(ps.Recall, ps.Train[start+i])
			}
		}

		// Memorisation kind: a table of distinct prompts with random answers.
		mk := g.kind + "_mem"
		if !selected(mk) {
			continue
		}
		r := kindRand(c.Seed, mk)
		mem := func(pr, a string, _ float64) eval.Probe {
			return eval.Probe{Prompt: pr, Answer: memAnswer(c.Seed, pr, a), Kind: mk, Chance: memChance(a)}
		}
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
		test, err := freshProbes(r, g, c.Test, inTable, mem, "~")
		if err != nil {
			return nil, err
		}
		ps.Test = append(ps.Test, test...)
		// Recall only entries that training holds: table[:c.Train] when the table is the larger.
		trained := min(len(table), c.Train)
		for _, i := range r.Perm(trained)[:min(c.Test, trained)] {
			ps.Recall = append(ps.Recall, table[i])
		}
	}
	r := kindRand(c.Seed, "shuffle")
	for _, s := range [][]eval.Probe{ps.Train, ps.Test, ps.Recall} {
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
func freshProbes(r *rand.Rand, g probeGen, n int, avoid map[string]bool, mk func(prompt, answer string, chance float64) eval.Probe, mark string) ([]eval.Probe, error) {
	var out []eval.Probe
	taken := map[string]bool{}
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("probes: kind %s: found only %d of %d distinct new prompts", g.kind, len(out), n)
		}
		p, a, ch := g.gen(r)
		pr := g.keyword + mark + ": " + p + " ="
		if avoid[pr] || taken[pr] {
			continue
		}
		taken[pr] = true
		out = append(out, mk(pr, a, ch))
	}
	return out, nil
}
