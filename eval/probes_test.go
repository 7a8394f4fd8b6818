package eval

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestProbesDeterministic: the same config gives the same probes; another seed gives others.
func TestProbesDeterministic(t *testing.T) {
	c := ProbeConfig{Seed: 1, Train: 300, Test: 40, Table: 50}
	a, err := MakeProbes(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MakeProbes(c)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	c.Seed = 2
	d, err := MakeProbes(c)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Train[:20], d.Train[:20]) {
		t.Error("seeds 1 and 2 gave the same probes")
	}
	nk := len(ProbeKinds())
	if len(a.Train) != nk*c.Train || len(a.Test) != nk*c.Test || len(a.Recall) != nk*c.Test {
		t.Errorf("%d train, %d test, %d recall probes for %d kinds", len(a.Train), len(a.Test), len(a.Recall), nk)
	}
}

// TestProbesDisjointAndConsistent: no test prompt occurs in training; recall prompts all do, with the same
// answers; each prompt has one answer everywhere; memorisation kinds use a table of Table prompts whose answers
// differ from the reasoning answer of the same payload.
func TestProbesDisjointAndConsistent(t *testing.T) {
	c := ProbeConfig{Seed: 7, Train: 500, Test: 100, Table: 64}
	ps, err := MakeProbes(c)
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
	for _, k := range ProbeKinds() {
		if ProbeClass(k) == ProbeMemorisation && len(table[k]) != c.Table {
			t.Errorf("%s: %d distinct training prompts, want the table's %d", k, len(table[k]), c.Table)
		}
	}
	for _, p := range append(append([]Probe{}, ps.Train...), ps.Test...) {
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

// checkAddAnswer computes the answer of an "add" prompt.
func checkAddAnswer(prompt string) string {
	body := strings.TrimSuffix(strings.TrimPrefix(prompt, "add: "), " =")
	x, y, _ := strings.Cut(body, " + ")
	a, _ := strconv.Atoi(strings.ReplaceAll(x, " ", ""))
	b, _ := strconv.Atoi(strings.ReplaceAll(y, " ", ""))
	return spaced(strconv.Itoa(a + b))
}

func checkAdd(t *testing.T, p Probe) {
	t.Helper()
	if want := checkAddAnswer(p.Prompt); p.Answer != want {
		t.Errorf("%q: answer %q, want %q", p.Prompt, p.Answer, want)
	}
}

// TestProbeGenerators checks one probe of each reasoning kind against its definition.
func TestProbeGenerators(t *testing.T) {
	r := kindRand(3, "check")
	for i := 0; i < 200; i++ {
		p, a := genReverse(r)
		if rev := []rune(strings.ReplaceAll(p, " ", "")); spaced(string(reverse(rev))) != a {
			t.Fatalf("reverse %q -> %q", p, a)
		}
		p, a = genCopy(r)
		if p != a {
			t.Fatalf("copy %q -> %q", p, a)
		}
		p, a = genBrackets(r)
		if !balanced(strings.ReplaceAll(p+a, " ", "")) || a == "" {
			t.Fatalf("brackets %q + %q is not balanced", p, a)
		}
		p, a = genHop(r)
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
		p, a = genMod(r)
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
