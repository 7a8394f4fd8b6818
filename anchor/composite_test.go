package anchor

import (
	"slices"
	"testing"
)

// TestWorkedExamples: App. B.1's X = (23, 1, 2, 43, 46, 74, 54, 44, 72) has key 23, pair (1,2) and
// f = g(g(23;1);2) = 29; App. B.2's X = (52, 33, 36, 2, 4, 78, 92, 24, 58) has key 36 and pair (2,4).
func TestWorkedExamples(t *testing.T) {
	for _, tc := range []struct {
		toks      []int32
		key, pos  int
		pair      Pair
		answer    int32
		trainable bool
	}{
		{[]int32{23, 1, 2, 43, 46, 74, 54, 44, 72}, 23, 0, Pair{1, 2}, 29, true},
		{[]int32{52, 33, 36, 2, 4, 78, 92, 24, 58}, 36, 2, Pair{2, 4}, 29, true}, // 36 + 1 − 8
	} {
		e, err := ParseExample(tc.toks)
		if err != nil {
			t.Fatal(err)
		}
		if e.Key != tc.key || e.Pos != tc.pos || e.Pair != tc.pair || e.Answer != tc.answer {
			t.Errorf("%v: key %d at %d, pair %v, answer %d; want %d at %d, %v, %d", tc.toks, e.Key, e.Pos, e.Pair, e.Answer, tc.key, tc.pos, tc.pair, tc.answer)
		}
		if got := TrainSplit(e.Key, e.Pos); got != tc.trainable {
			t.Errorf("%v: key %d at %d in the training split: %v, want %v", tc.toks, e.Key, e.Pos, got, tc.trainable)
		}
	}
	if g := G(G(23, 1), 2); g != 29 {
		t.Errorf("g(g(23;1);2) = %d, want 29", g)
	}
	for _, bad := range [][]int32{{1, 2, 23, 43, 46, 74, 54, 44, 72}, {23, 1, 2, 43, 3, 4, 54, 44, 72}, {23, 43, 46, 74, 54, 44, 72, 50, 51}, {23, 1, 2}} {
		if _, err := ParseExample(bad); err == nil {
			t.Errorf("%v parsed as an anchor sequence", bad)
		}
	}
}

// TestMappings: §3.1's single anchors, the 14 inferential pairs, (3,4)'s x − 6 and (4,3)'s inferential x − 10.
func TestMappings(t *testing.T) {
	want := map[Pair]int{{1, 1}: 10, {1, 2}: 6, {1, 3}: 3, {1, 4}: -3, {2, 1}: 6, {2, 2}: 2, {2, 3}: -1, {2, 4}: -7,
		{3, 1}: 3, {3, 2}: -1, {3, 3}: -4, {3, 4}: -6, {4, 1}: -3, {4, 2}: -7, {4, 3}: -10, {4, 4}: -16}
	for p, shift := range want {
		if got := Target(50, p) - 50; got != shift {
			t.Errorf("M_%v(x) − x = %d, want %d", p, got, shift)
		}
	}
	if InferentialShift(NonInferable) != -10 {
		t.Errorf("the inferential mapping of (3,4) is x%+d, want x−10", InferentialShift(NonInferable))
	}
	if ps := SeenPairs(); len(ps) != 15 || slices.Contains(ps, Unseen) {
		t.Errorf("seen pairs %v: want the 15 pairs other than (4,3)", ps)
	}
}

// TestTrainingSetRespectsTheSplit: no training sequence holds (4,3); every item of every training sequence
// obeys App. C's rule mod(x, 7) ≠ position; answers follow the designated mappings; a test sequence's key sits
// where no training sequence puts that value; and the draw is deterministic per seed.
func TestTrainingSetRespectsTheSplit(t *testing.T) {
	tr := CompositeTrain(20000, 1)
	pairs := map[Pair]int{}
	for _, e := range tr {
		for j := 0; j+1 < len(e.Tokens); j++ {
			if e.Tokens[j] == 4 && e.Tokens[j+1] == 3 {
				t.Fatalf("training sequence %v holds the held-out pair (4,3)", e.Tokens)
			}
		}
		back, err := ParseExample(e.Tokens)
		if err != nil {
			t.Fatal(err)
		}
		if back.Key != e.Key || back.Pos != e.Pos || back.Pair != e.Pair || back.Answer != e.Answer {
			t.Fatalf("generated %+v, parsed back as %+v", e, back)
		}
		for j, x := range e.Tokens {
			if j != e.Pos+1 && j != e.Pos+2 && !TrainSplit(int(x), j) {
				t.Fatalf("training sequence %v: item %d at position %d breaks mod(x, 7) ≠ pos", e.Tokens, x, j)
			}
		}
		pairs[e.Pair]++
	}
	if len(pairs) != 15 {
		t.Errorf("training set covers %d pairs, want the 15 seen ones", len(pairs))
	}
	for p, n := range pairs {
		if n < 20000/15*8/10 {
			t.Errorf("pair %v: %d of 20000 sequences, want about 1333", p, n)
		}
	}
	for _, p := range SeenPairs() {
		ts := CompositeTest(p, 1)
		if len(ts) != ItemMax-ItemMin+1 {
			t.Fatalf("test split of %v: %d sequences, want 80", p, len(ts))
		}
		for _, e := range ts {
			if TrainSplit(e.Key, e.Pos) {
				t.Errorf("test sequence %v: key %d at %d is in the training split", e.Tokens, e.Key, e.Pos)
			}
		}
	}
	un := CompositeUnseen(1)
	if len(un) != 560 || un[0].Pair != Unseen || un[0].Answer != int32(un[0].Key-10) {
		t.Errorf("(4,3) set: %d sequences, first %+v; want 560 with answers x − 10", len(un), un[0])
	}
	again := CompositeTrain(20000, 1)
	for i := range tr {
		if !slices.Equal(tr[i].Tokens, again[i].Tokens) || tr[i].Answer != again[i].Answer {
			t.Fatalf("CompositeTrain is not deterministic: sequence %d differs", i)
		}
	}
	if other := CompositeTrain(10, 2); slices.Equal(other[0].Tokens, tr[0].Tokens) && slices.Equal(other[1].Tokens, tr[1].Tokens) {
		t.Error("seeds 1 and 2 drew the same sequences")
	}
}
