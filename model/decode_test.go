package model

import (
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/kernel"
)

// TestDecoderMatchesForward: the KV-cache decoder's logits after each prefix equal the corresponding rows
// of one Forward over the whole sequence, for every switch (MoE without a capacity limit), grouped-query
// attention (a cache of KV heads only) and q/k/v biases included.
func TestDecoderMatchesForward(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	for _, tc := range append(switchCases[:len(switchCases):len(switchCases)], gqaCases...) {
		if tc.cfg.Capacity > 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.SeqLen = 20
			m := newTestModel(t, c, 1, pool)
			fillRandomAll(m, 31, 0.5)
			in, tg := randomTokens(rand.New(rand.NewPCG(8, 8)), c.SeqLen, c.Vocab)
			if _, err := m.Forward(in, tg); err != nil {
				t.Fatal(err)
			}
			want := append([]float32(nil), m.Logits()...)
			dec := m.NewDecoder()
			V := c.Vocab
			// Feed the first 7 tokens at once, then one at a time.
			logits, err := dec.Append(in[:7])
			if err != nil {
				t.Fatal(err)
			}
			for pos := 6; pos < c.SeqLen; pos++ {
				if pos > 6 {
					if logits, err = dec.Append(in[pos : pos+1]); err != nil {
						t.Fatal(err)
					}
				}
				row := make([]float64, V)
				for j := range row {
					row[j] = float64(want[pos*V+j])
				}
				if e := relErr(logits, row); e > 1e-5 {
					t.Fatalf("position %d: decoder logits differ from Forward by %.2e", pos, e)
				}
			}
			if _, err := dec.Append(in[:1]); err == nil {
				t.Error("decoder accepted a position beyond the context length")
			}
			dec.Reset()
			if l, err := dec.Append(in[:1]); err != nil || len(l) != V {
				t.Errorf("after Reset: %v", err)
			}
		})
	}
}
