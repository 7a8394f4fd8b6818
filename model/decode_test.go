package model

import (
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/internal/allocs"
	"github.com/smallinit/smallinit/kernel"
)

// argmax is the index of the largest value (the lowest on a tie) and the margin to the runner-up.
func argmax(xs []float32) (int, float32) {
	best, second := 0, float32(0)
	for j, v := range xs {
		if v > xs[best] {
			best = j
		}
	}
	first := true
	for j, v := range xs {
		if j != best && (first || v > second) {
			second, first = v, false
		}
	}
	return best, xs[best] - second
}

// TestDecoderMatchesForward: the KV-cache decoder's logits after each prefix equal the corresponding rows
// of one Forward over the whole sequence, for every switch (dense, gated, QK-norm, MoE with a shared expert;
// MoE without a capacity limit), grouped-query attention (a cache of KV heads only) and q/k/v biases included;
// greedy generation gives the tokens Forward's argmax gives on the generated sequence; a decoder step
// allocates nothing and leaves the last Forward's activations alone.
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
			for i, v := range m.Logits() {
				if v != want[i] {
					t.Fatalf("decoding changed the last Forward's logits (element %d: %g, was %g)", i, v, want[i])
				}
			}
			if _, err := dec.Append(in[:1]); err == nil {
				t.Error("decoder accepted a position beyond the context length")
			}

			// Greedy generation from a 3-token prompt, checked against Forward on the generated sequence.
			dec.Reset()
			seq := append([]int32(nil), in[:3]...)
			if logits, err = dec.Append(seq); err != nil {
				t.Fatal(err)
			}
			next := make([]int32, 1)
			for len(seq) < c.SeqLen {
				best, _ := argmax(logits)
				seq = append(seq, int32(best))
				next[0] = int32(best)
				if logits, err = dec.Append(next); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.Forward(seq, tg); err != nil {
				t.Fatal(err)
			}
			full := m.Logits()
			for pos := 2; pos < c.SeqLen-1; pos++ {
				best, margin := argmax(full[pos*V : (pos+1)*V])
				if int32(best) != seq[pos+1] && margin > 1e-4 {
					t.Fatalf("position %d: greedy decoding chose %d, Forward's argmax is %d (margin %.2e)", pos, seq[pos+1], best, margin)
				}
			}

			dec.Reset()
			if _, err := dec.Append(in[:4]); err != nil {
				t.Fatal(err)
			}
			step := func() {
				if _, err := dec.Append(next); err != nil {
					t.Fatal(err)
				}
			}
			if a := testing.AllocsPerRun(5, step); a != 0 {
				t.Errorf("a decoder step allocates %v times", a)
			}
		})
	}
}

// TestMemoryBytesCountsNew: MemoryBytes, which runs the size table New allocates from in counting mode, counts
// exactly the bytes of the buffers the table makes, and New allocates those plus the allocator's rounding
// (under a page, 8 KiB, per buffer) and the model's small bookkeeping (tensor specs, weight views: under 64 KiB
// here), for dense, MoE, QK-norm and grouped-query configs with one and two workers.
func TestMemoryBytesCountsNew(t *testing.T) {
	for _, tc := range append(switchCases[:len(switchCases):len(switchCases)], gqaCases...) {
		for _, workers := range []int{1, 2} {
			c := tc.cfg
			c.Vocab, c.SeqLen = 2048, 256
			pool := kernel.NewPool(workers)
			var err error
			got := float64(allocs.Bytes(func() { _, err = New(c, 3, pool) }))
			pool.Close()
			if err != nil {
				t.Fatal(err)
			}
			made := &sizer{}
			modelBuffers(made, c, 3, workers)
			est, counted := MemoryBytes(c, 3, workers), memory(c, 3, workers)
			if est != made.bytes || counted.bufs != made.bufs {
				t.Errorf("%s, %d workers: the table makes %.0f bytes in %.0f buffers, MemoryBytes counts %.0f in %.0f",
					tc.name, workers, made.bytes, made.bufs, est, counted.bufs)
			}
			if got < est || got > est+8192*made.bufs+64<<10 {
				t.Errorf("%s, %d workers: New allocates %.0f bytes, MemoryBytes says %.0f (%.0f buffers)", tc.name, workers, got, est, made.bufs)
			}
		}
	}
}
