package data

import "testing"

// TestApplyMixThresholds checks applyMix on made-up documents: caps keep training documents in rank order
// while they fit, validation documents follow their group's threshold, and a language's minimum share holds.
func TestApplyMixThresholds(t *testing.T) {
	mk := func(group int, rank uint64, n int, val bool) archDoc {
		return archDoc{group: group, rank: rank, toks: make([]int32, n), val: val}
	}
	groups := []archGroup{{"poems", "zh"}, {"speeches", "en"}}
	cases := []struct {
		name string
		mix  Mix
		docs []archDoc
		kept []bool
	}{
		{"cap keeps the lowest ranks that fit", Mix{Caps: map[string]int64{"poems": 25}},
			[]archDoc{mk(0, 3, 10, false), mk(0, 1, 10, false), mk(0, 2, 10, false), mk(1, 9, 50, false)},
			[]bool{false, true, true, true}},
		{"validation follows the threshold", Mix{Caps: map[string]int64{"zh": 10}},
			[]archDoc{mk(0, 1, 10, false), mk(0, 2, 10, true), mk(0, 3, 10, false), mk(0, 4, 10, true)},
			[]bool{true, true, false, false}},
		{"minimum share caps the other language", Mix{MinShare: map[string]float64{"en": 0.5}},
			[]archDoc{mk(0, 1, 10, false), mk(0, 2, 10, false), mk(0, 3, 10, false), mk(1, 5, 20, false)},
			[]bool{true, true, false, true}},
		{"a share already met changes nothing", Mix{MinShare: map[string]float64{"en": 0.2}},
			[]archDoc{mk(0, 1, 10, false), mk(1, 5, 10, false)},
			[]bool{true, true}},
	}
	for _, c := range cases {
		applyMix(c.docs, groups, c.mix)
		for i, d := range c.docs {
			if (d.state == docKept) != c.kept[i] {
				t.Errorf("%s: document %d kept %v, want %v", c.name, i, d.state == docKept, c.kept[i])
			}
		}
	}
}

// TestMixValidate checks the mix's bounds.
func TestMixValidate(t *testing.T) {
	for _, c := range []struct {
		mix Mix
		ok  bool
	}{
		{DefaultMix(), true},
		{Mix{}, true},
		{Mix{MinShare: map[string]float64{"en": 1}}, false},
		{Mix{MinShare: map[string]float64{"en": 0.6, "zh": 0.5}}, false},
		{Mix{MinShare: map[string]float64{"en": -0.1}}, false},
		{Mix{Caps: map[string]int64{"sotu": 0}}, false},
	} {
		if err := c.mix.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: error %v, want ok=%v", c.mix, err, c.ok)
		}
	}
}
