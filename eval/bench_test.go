package eval

import (
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

// BenchmarkScoreMultipleChoice scores 64 four-choice records (contexts of 40–100 tokens, continuations of 5–20)
// on a 2-layer d=128 model with a 256-token context, reporting continuation tokens scored per second and
// token rows run per second (padding included).
func BenchmarkScoreMultipleChoice(b *testing.B) {
	c := model.Config{Vocab: 1024, Dim: 128, FFN: model.DefaultFFN(128), Layers: 2, Heads: 4, SeqLen: 256, NormEps: 1e-5,
		Norm: model.NormRMS, AttnGate: model.GateNone, RopeTheta: 10000, FFNKind: model.FFNDense}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, err := model.New(c, 8, pool)
	if err != nil {
		b.Fatal(err)
	}
	fillModel(m, 1)
	l := NewLM(m, byteTokenizer{}, nil)
	r := rand.New(rand.NewPCG(1, 1))
	var reqs []TokenRequest
	for d := 0; d < 64; d++ {
		ctx := randomTokens(r, 40+r.IntN(61), c.Vocab)
		for j := 0; j < 4; j++ {
			reqs = append(reqs, TokenRequest{Context: ctx, Continuation: randomTokens(r, 5+r.IntN(16), c.Vocab)})
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.ScoreTokens(reqs); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(l.ScoredTokens)/s, "scored-tokens/s")
	b.ReportMetric(float64(l.ForwardTokens)/s, "forward-tokens/s")
}
