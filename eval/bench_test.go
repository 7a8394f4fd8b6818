package eval

import (
	"math/rand/v2"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

// BenchmarkScoreMultipleChoice scores 64 four-choice records (contexts of 40–100 tokens, continuations of 5–20)
// on a 2-layer d=128 model with a 256-token context, reporting continuation tokens scored per second and
// token rows run per second (padding included).
func BenchmarkScoreMultipleChoice(b *testing.B) {
	m, pool := benchModel(b)
	defer pool.Close()
	c := m.Config
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

// BenchmarkForward is the engine's own forward pass (loss and logits) on full 8×256 batches of the model
// BenchmarkScoreMultipleChoice uses: the ceiling its forward-tokens/s is to be compared with, in the same run.
func BenchmarkForward(b *testing.B) {
	m, pool := benchModel(b)
	defer pool.Close()
	c := m.Config
	r := rand.New(rand.NewPCG(1, 1))
	in, tg := randomTokens(r, 8*c.SeqLen, c.Vocab), randomTokens(r, 8*c.SeqLen, c.Vocab)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Forward(in, tg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(in))/b.Elapsed().Seconds(), "forward-tokens/s")
}

// benchModel is the scoring benchmarks' model: 2 layers, d = 128, a 256-token context, batch 8.
func benchModel(b *testing.B) (*model.Model, *kernel.Pool) {
	c := arch.Config{Vocab: 1024, Dim: 128, FFN: arch.DefaultFFN(128), Layers: 2, Heads: 4, SeqLen: 256, NormEps: 1e-5,
		Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	pool := kernel.NewPool(0)
	m, err := model.New(c, 8, pool)
	if err != nil {
		pool.Close()
		b.Fatal(err)
	}
	fillModel(m, 1)
	return m, pool
}
