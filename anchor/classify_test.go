package anchor

import (
	"math"
	"testing"
)

func TestClassifyAll(t *testing.T) {
	keys := []int{20, 35, 50, 99}
	shift := func(d int) []int32 {
		p := make([]int32, len(keys))
		for i, x := range keys {
			p[i] = int32(x + d)
		}
		return p
	}
	for _, tc := range []struct {
		name          string
		preds         []int32
		inf, sym, oth float64
	}{
		{"all inferential", shift(-10), 1, 0, 0},
		{"all symmetric", shift(-6), 0, 1, 0},
		{"all other", shift(-2), 0, 0, 1},
		{"mixed", []int32{10, 29, 50, 89}, 0.5, 0.25, 0.25}, // 20−10, 35−6, 50 (other), 99−10
	} {
		s := ClassifyAll(keys, tc.preds)
		if math.Abs(s.Inferential-tc.inf) > 1e-12 || math.Abs(s.Symmetric-tc.sym) > 1e-12 || math.Abs(s.Other-tc.oth) > 1e-12 || s.N != 4 {
			t.Errorf("%s: shares %+v, want inferential %g symmetric %g other %g of 4", tc.name, s, tc.inf, tc.sym, tc.oth)
		}
	}
	if s := ClassifyAll(nil, nil); s.N != 0 {
		t.Errorf("no predictions: %+v", s)
	}
}
