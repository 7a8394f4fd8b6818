package anchor

import "testing"

// TestMemoryLabelsAreFixedPerSeed: a key-anchor combination has one label per seed, in Z, whatever the
// sequence's noise and position; another seed draws other labels.
func TestMemoryLabelsAreFixedPerSeed(t *testing.T) {
	a, b, c := NewMemoryLabels(7), NewMemoryLabels(7), NewMemoryLabels(8)
	same, n := 0, 0
	for z := MixKeyMin; z <= MixKeyMax; z++ {
		for a1 := MemAnchorMin; a1 <= MemAnchorMax; a1++ {
			for a2 := MemAnchorMin; a2 <= MemAnchorMax; a2++ {
				p := Pair{a1, a2}
				y := a.Label(z, p)
				if y != b.Label(z, p) {
					t.Fatalf("seed 7 gave y%v(%d) = %d and %d", p, z, y, b.Label(z, p))
				}
				if y < MixKeyMin || y > MixKeyMax {
					t.Fatalf("label %d outside Z", y)
				}
				if y == c.Label(z, p) {
					same++
				}
				n++
			}
		}
	}
	if same > n/20 { // chance agreement is 1/100
		t.Errorf("seeds 7 and 8 agree on %d of %d labels", same, n)
	}
	train, test := Mix(20, a, 7)
	seen := map[[3]int]int32{}
	counts := map[MixKind]int{}
	for _, e := range append(train, test...) {
		counts[e.Kind]++
		switch e.Kind {
		case Memory:
			k := [3]int{e.Key, e.Pair.A1, e.Pair.A2}
			if y, ok := seen[k]; ok && y != e.Answer {
				t.Fatalf("combination %v has labels %d and %d", k, y, e.Answer)
			}
			seen[k] = e.Answer
			if e.Answer != a.Label(e.Key, e.Pair) {
				t.Fatalf("memory sequence %v: answer %d, label %d", e.Tokens, e.Answer, a.Label(e.Key, e.Pair))
			}
		default:
			if e.Answer != int32(e.Key+e.Pair.A1+e.Pair.A2) {
				t.Fatalf("reasoning sequence %v: answer %d, want key + a1 + a2", e.Tokens, e.Answer)
			}
		}
		if e.Tokens[e.Pos] != int32(e.Key) || e.Tokens[e.Pos+1] != int32(e.Pair.A1) || e.Tokens[e.Pos+2] != int32(e.Pair.A2) {
			t.Fatalf("sequence %v: key-anchor combination not at %d", e.Tokens, e.Pos)
		}
	}
	for _, e := range train {
		if e.Kind == ReasoningTest {
			t.Fatalf("held-out pair %v in training", e.Pair)
		}
	}
	if counts[Memory] != 100*20 || counts[ReasoningTrain] != 98*20 || counts[ReasoningTest] != 2*20 || len(test) != 40 {
		t.Errorf("kinds %v (test %d), want 2000 memory, 1960 reasoning-train, 40 reasoning-test", counts, len(test))
	}
	if m := MixMemoryEval(a, 1); len(m) != 10000 {
		t.Errorf("memory evaluation set: %d, want 10000", len(m))
	}
}
