package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/kernel"
)

// ignoreAllButLast marks every target except the last of each T-token sequence IgnoreTarget, the answer-only
// loss of the anchor-function tasks.
func ignoreAllButLast(tg []int32, T int) []int32 {
	out := append([]int32(nil), tg...)
	for i := range out {
		if i%T != T-1 {
			out[i] = IgnoreTarget
		}
	}
	return out
}

// TestIgnoredTargetsMatchFiniteDifferences checks the masked loss and every parameter's gradient against the
// float64 reference (which skips ignored positions and averages over the rest) and its central differences.
func TestIgnoredTargetsMatchFiniteDifferences(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	for _, tc := range switchCases[:4] {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			m := newTestModel(t, c, 2, pool)
			fillRandom(m, 5, 0.5)
			in, tg := randomTokens(rand.New(rand.NewPCG(6, 6)), 2*c.SeqLen, c.Vocab)
			tg = ignoreAllButLast(tg, c.SeqLen)
			loss, err := m.Forward(in, tg)
			if err != nil {
				t.Fatal(err)
			}
			ref := newRef(m)
			want, _, _ := ref.forward(in, tg)
			if e := math.Abs(loss-want) / want; e > 1e-6 {
				t.Errorf("masked loss %.8f, reference %.8f", loss, want)
			}
			m.ZeroGrads()
			m.Backward()
			const h = 1e-6
			for _, ts := range m.Specs {
				w := ref.w[ts.Name]
				var fd []float64
				var got []float32
				for i := 0; i < len(w); i += 2 {
					orig := w[i]
					w[i] = orig + h
					lp, _, _ := ref.forward(in, tg)
					w[i] = orig - h
					lm, _, _ := ref.forward(in, tg)
					w[i] = orig
					fd = append(fd, (lp-lm)/(2*h))
					got = append(got, m.Grads.Flat[ts.Offset+i])
				}
				if e := relErr(got, fd); e > 1e-5 {
					t.Errorf("%s: masked gradient rel err %.2e vs finite differences", ts.Name, e)
				}
			}
		})
	}
}

// TestIgnoredTargetsAreTheMeanOfTheRest: the masked loss equals the mean of the unmasked per-token losses at
// the kept positions, and a batch with every target ignored is refused.
func TestIgnoredTargetsAreTheMeanOfTheRest(t *testing.T) {
	pool := kernel.NewPool(1)
	defer pool.Close()
	c := switchCases[0].cfg
	m := newTestModel(t, c, 3, pool)
	fillRandom(m, 7, 0.5)
	in, tg := randomTokens(rand.New(rand.NewPCG(8, 8)), 3*c.SeqLen, c.Vocab)
	if _, err := m.Forward(in, tg); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for i, v := range m.TokenLoss() {
		if i%c.SeqLen == c.SeqLen-1 {
			sum += float64(v)
		}
	}
	loss, err := m.Forward(in, ignoreAllButLast(tg, c.SeqLen))
	if err != nil {
		t.Fatal(err)
	}
	if want := sum / 3; math.Abs(loss-want) > 1e-6*want {
		t.Errorf("masked loss %.8f, mean of kept token losses %.8f", loss, want)
	}
	all := make([]int32, len(tg))
	for i := range all {
		all[i] = IgnoreTarget
	}
	if _, err := m.Forward(in, all); err == nil {
		t.Error("a batch with every target ignored was accepted")
	}
	bad := append([]int32(nil), tg...)
	bad[0] = -1
	if _, err := m.Forward(in, bad); err == nil {
		t.Error("target -1 (not IgnoreTarget) was accepted")
	}
}
