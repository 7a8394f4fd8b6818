package probes

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/eval"
)

// TestProbesDeterministic: the same config gives the same probes; another seed gives others.
func TestProbesDeterministic(t *testing.T) {
	c := Config{Seed: 1, Train: 300, Test: 40, Table: 50}
	a, err := Make(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Make(c)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	c.Seed = 2
	d, err := Make(c)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Train[:20], d.Train[:20]) {
		t.Error("seeds 1 and 2 gave the same probes")
	}
	nk := len(Kinds())
	if len(a.Train) != nk*c.Train || len(a.Test) != nk*c.Test || len(a.Recall) != nk*c.Test {
		t.Errorf("%d train, %d test, %d recall probes for %d kinds", len(a.Train), len(a.Test), len(a.Recall), nk)
	}
}

// TestProbesDisjointAndConsistent: no test prompt occurs in training; recall prompts all do, with the same
// answers; each prompt has one answer everywhere, and recall prompts are training prompts even when the table is
// larger than training; memorisation kinds train on Table prompts (at most Train) whose answers differ from the
// reasoning answer of the same payload.
func TestProbesDisjointAndConsistent(t *testing.T) {
	for _, c := range []Config{
		{Seed: 7, Train: 500, Test: 100, Table: 64},
		{Seed: 7, Train: 10, Test: 10, Table: 100}, // a table larger than training: recall only what was trained
	} {
		t.Run(fmt.Sprintf("train%d_table%d", c.Train, c.Table), func(t *testing.T) { checkProbesDisjoint(t, c) })
	}
}

func checkProbesDisjoint(t *testing.T, c Config) {
	ps, err := Make(c)
	if err != nil {
		t.Fatal(err)
	}
	answer := map[string]string{}
	table := map[string]map[string]bool{}
	for _, p := range ps.Train {
		if a, ok := answer[p.Prompt]; ok && a != p.Answer {
			t.Fatalf("%q has answers %q and %q in training", p.Prompt, a, p.Answer)
		}
		answer[p.Prompt] = p.Answer
		if table[p.Kind] == nil {
			table[p.Kind] = map[string]bool{}
		}
		table[p.Kind][p.Prompt] = true
	}
	for _, p := range ps.Test {
		if _, ok := answer[p.Prompt]; ok {
			t.Errorf("test prompt %q (%s) is in training", p.Prompt, p.Kind)
		}
	}
	for _, p := range ps.Recall {
		if a, ok := answer[p.Prompt]; !ok || a != p.Answer {
			t.Errorf("recall prompt %q (%s): training answer %q, recall %q", p.Prompt, p.Kind, a, p.Answer)
		}
	}
	for _, k := range Kinds() {
		if want := min(c.Table, c.Train); eval.ProbeClass(k) == eval.ProbeMemorisation && len(table[k]) != want {
			t.Errorf("%s: %d distinct training prompts, want %d", k, len(table[k]), want)
		}
	}
	for _, p := range append(append([]eval.Probe{}, ps.Train...), ps.Test...) {
		if p.Kind == "add" {
			checkAdd(t, p)
		}
		if p.Kind == "add_mem" {
			real := strings.Replace(p.Prompt, "add~:", "add:", 1)
			if checkAddAnswer(real) == p.Answer {
				t.Errorf("memorisation answer of %q equals the sum", p.Prompt)
			}
		}
	}
}

// checkAddAnswer computes the answer of an "add" prompt: operands and sum are written least-significant digit
// first, the sum one digit wider than the operands.
func checkAddAnswer(prompt string) string {
	body := strings.TrimSuffix(strings.TrimPrefix(prompt, "add: "), " =")
	x, y, _ := strings.Cut(body, " + ")
	value := func(lsdFirst string) int {
		n, _ := strconv.Atoi(string(reverse([]rune(strings.ReplaceAll(lsdFirst, " ", "")))))
		return n
	}
	width := len(strings.Fields(x)) + 1
	sum := fmt.Sprintf("%0*d", width, value(x)+value(y))
	return spaced(string(reverse([]rune(sum))))
}

func checkAdd(t *testing.T, p eval.Probe) {
	t.Helper()
	if want := checkAddAnswer(p.Prompt); p.Answer != want {
		t.Errorf("%q: answer %q, want %q", p.Prompt, p.Answer, want)
	}
}

// TestProbeGenerators checks one probe of each reasoning kind against its definition.
func TestProbeGenerators(t *testing.T) {
	r := kindRand(3, "check")
	for i := 0; i < 200; i++ {
		p, a, _ := genReverse(r)
		if rev := []rune(strings.ReplaceAll(p, " ", "")); spaced(string(reverse(rev))) != a {
			t.Fatalf("reverse %q -> %q", p, a)
		}
		p, a, _ = genCopy(r)
		if p != a {
			t.Fatalf("copy %q -> %q", p, a)
		}
		p, a, _ = genBrackets(r)
		if !balanced(strings.ReplaceAll(p+a, " ", "")) || a == "" {
			t.Fatalf("brackets %q + %q is not balanced", p, a)
		}
		p, a, _ = genHop(r)
		facts, q, _ := strings.Cut(p, " ; ")
		next := map[string]string{}
		for _, f := range strings.Fields(facts) {
			x, y, _ := strings.Cut(f, ">")
			next[x] = y
		}
		start, hs, _ := strings.Cut(q, " ")
		h, _ := strconv.Atoi(hs)
		x := start
		for k := 0; k < h; k++ {
			x = next[x]
		}
		if x != a || len(next) != 6 || h < 2 || h > 3 {
			t.Fatalf("hop %q -> %q, want %q", p, a, x)
		}
		p, a, _ = genMod(r)
		parts := strings.Split(strings.NewReplacer("( ", "", " ) % ", "|", " + ", "|").Replace(p), "|")
		nums := make([]int, 3)
		for k, s := range parts {
			nums[k], _ = strconv.Atoi(strings.ReplaceAll(s, " ", ""))
		}
		if spaced(strconv.Itoa((nums[0]+nums[1])%nums[2])) != a {
			t.Fatalf("mod %q -> %q", p, a)
		}
	}
}

func reverse(r []rune) []rune {
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return r
}

func balanced(s string) bool {
	var st []byte
	pair := map[byte]byte{')': '(', ']': '[', '}': '{'}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			st = append(st, c)
		default:
			if len(st) == 0 || st[len(st)-1] != pair[c] {
				return false
			}
			st = st[:len(st)-1]
		}
	}
	return len(st) == 0
}

// TestProbeKindsAndDigits: Kinds selects kinds without changing their probes, AddDigits bounds the operands,
// and bad selections are errors.
func TestProbeKindsAndDigits(t *testing.T) {
	base := Config{Seed: 5, Train: 300, Test: 40, Table: 50}
	all, err := Make(base)
	if err != nil {
		t.Fatal(err)
	}
	byKind := func(ps []eval.Probe, kind string) []string {
		var out []string
		for _, p := range ps {
			if p.Kind == kind {
				out = append(out, p.Text())
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		kinds  []string
		digits int
	}{
		{[]string{"add"}, 0},
		{[]string{"mod", "add"}, 0},
		{[]string{"hop_mem", "copy"}, 0},
		{[]string{"add"}, 2},
		{[]string{"add", "add_mem"}, 1},
	} {
		c := base
		c.Kinds, c.AddDigits = tc.kinds, tc.digits
		if tc.digits == 1 {
			c.Train, c.Test = 30, 10 // one-digit sums have only 100 prompts
		}
		ps, err := Make(c)
		if err != nil {
			t.Fatalf("%v, %d digits: %v", tc.kinds, tc.digits, err)
		}
		want := slices.Clone(tc.kinds)
		slices.SortFunc(want, func(a, b string) int { return slices.Index(Kinds(), a) - slices.Index(Kinds(), b) })
		if !slices.Equal(ps.Kinds, want) {
			t.Errorf("%v: made kinds %v", tc.kinds, ps.Kinds)
		}
		n := len(tc.kinds)
		if len(ps.Train) != n*c.Train || len(ps.Test) != n*c.Test || len(ps.Recall) != n*c.Test {
			t.Errorf("%v: %d train, %d test, %d recall probes", tc.kinds, len(ps.Train), len(ps.Test), len(ps.Recall))
		}
		for _, p := range append(append(slices.Clone(ps.Train), ps.Test...), ps.Recall...) {
			if !slices.Contains(tc.kinds, p.Kind) {
				t.Fatalf("%v: probe of kind %s", tc.kinds, p.Kind)
			}
			if p.Kind == "add" {
				checkAdd(t, p)
				d := tc.digits
				if d == 0 {
					d = DefaultAddDigits
				}
				x, y, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(p.Prompt, "add: "), " ="), " + ")
				if lx, ly := len(strings.Fields(x)), len(strings.Fields(y)); lx != d || ly != d {
					t.Fatalf("%q: operands of %d and %d digits, want %d", p.Prompt, lx, ly, d)
				}
			}
		}
		if tc.digits != 0 {
			continue
		}
		for _, k := range tc.kinds { // a kind's probes do not depend on which others are made
			for _, sets := range [][2][]eval.Probe{{ps.Train, all.Train}, {ps.Test, all.Test}, {ps.Recall, all.Recall}} {
				if !slices.Equal(byKind(sets[0], k), byKind(sets[1], k)) {
					t.Errorf("%v: the %s probes differ from those of the full set", tc.kinds, k)
				}
			}
		}
	}
	for _, c := range []Config{
		{Seed: 1, Train: 10, Test: 5, Table: 5, Kinds: []string{"add", "mul"}},
		{Seed: 1, Train: 10, Test: 5, Table: 5, AddDigits: 10},
		{Seed: 1, Train: 10, Test: 5, Table: 5, AddDigits: -1},
		{Seed: 1, Train: 500, Test: 50, Table: 5, AddDigits: 1, Kinds: []string{"add"}}, // 100 prompts in all
	} {
		if _, err := Make(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestProbeChance checks chance levels against counts by hand and by enumeration.
func TestProbeChance(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		// a, b in 0..9: the residue 2 of a + b modulo 7 comes from the sums 2, 9 and 16: 3 + 10 + 3 of 100 pairs.
		{"mod 1+1 digits % 7", modChance(1, 1, 7), 0.16},
		{"mem of one digit", memChance("5"), 1.0 / 9},
		{"mem of two digits", memChance("1 4"), 1.0 / 89},
		{"mem of a reversed sum with a leading 0", memChance("0 1"), 1.0 / 90},
		{"mem of a letter", memChance("d"), 1.0 / 25},
		{"mem of two brackets", memChance(") ]"), 1.0 / 8},
	} {
		if math.Abs(tc.got-tc.want) > 1e-12 {
			t.Errorf("%s: chance %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	// Addition: the chance stamped on each probe is the largest share of any one sum among all operand pairs of
	// the probe's operand lengths, counted here by enumeration.
	enum := func(da, db int) float64 {
		alo, ahi := digitRange(da)
		blo, bhi := digitRange(db)
		count := map[int]int{}
		for a := alo; a <= ahi; a++ {
			for b := blo; b <= bhi; b++ {
				count[a+b]++
			}
		}
		return float64(slices.Max(slices.Collect(maps.Values(count)))) / float64((ahi-alo+1)*(bhi-blo+1))
	}
	length := func(lsdFirst string) int { // significant digits of an operand written least-significant first
		n, _ := strconv.Atoi(string(reverse([]rune(strings.ReplaceAll(lsdFirst, " ", "")))))
		return len(strconv.Itoa(n))
	}
	gen, r := addGen(3), kindRand(9, "chance")
	lengths := map[[2]int]bool{}
	for i := 0; i < 200; i++ {
		p, _, ch := gen(r)
		x, y, _ := strings.Cut(p, " + ")
		l := [2]int{length(x), length(y)}
		lengths[l] = true
		if want := enum(l[0], l[1]); math.Abs(ch-want) > 1e-12 {
			t.Fatalf("add %q: chance %v, want %v", p, ch, want)
		}
	}
	if len(lengths) != 9 {
		t.Errorf("3-digit addition: operand lengths %v, want all 9 pairs", lengths)
	}
	ps, err := Make(Config{Seed: 3, Train: 100, Test: 20, Table: 30})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(slices.Clone(ps.Train), ps.Test...) {
		if !(p.Chance > 0 && p.Chance < 1) {
			t.Fatalf("%s probe %q: chance %v", p.Kind, p.Prompt, p.Chance)
		}
	}
}

// TestAddFormat: numbers are written least-significant digit first, zero-padded to their width.
func TestAddFormat(t *testing.T) {
	for _, tc := range []struct {
		x, width int
		want     string
	}{
		{482, 3, "2 8 4"},
		{1419, 4, "9 1 4 1"},
		{76, 2, "6 7"},
		{137, 3, "7 3 1"},
		{7, 2, "7 0"},
		{9, 3, "9 0 0"},
		{0, 1, "0"},
	} {
		if got := lsdFirst(tc.x, tc.width); got != tc.want {
			t.Errorf("lsdFirst(%d, %d) = %q, want %q", tc.x, tc.width, got, tc.want)
		}
	}
}
