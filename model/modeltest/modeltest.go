// Package modeltest holds the fixtures that several packages' tests share: a small byte-level BPE tokenizer and a
// randomly initialised two-layer model. It sits beside model as net/http/httptest sits beside net/http, so the
// packages below model never import it; it is imported only from _test.go files.
package modeltest

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/tokenizer"
)

// Sentences train Tokenizer: English, arithmetic and Chinese, like the tasks the tests read.
var Sentences = []string{
	"The quick brown fox jumps over the lazy dog.",
	"Question: How many apples are left? Answer: 42 apples are left.",
	"She sold 48 clips in April and half as many in May.",
	"add: 4 8 2 + 9 3 7 = 1 4 1 9",
	"A man is sitting on a roof. He starts pulling up roofing on a roof.",
	"芳芳买了一本书有99页，看了90页，她还剩多少页没有看？",
}

// Tokenizer is a small byte-level BPE (vocabulary 320) trained on Sentences.
func Tokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Train([]string{strings.Join(Sentences, "\n")}, 320)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Model is a randomly initialised two-layer model of width 32 (σ = d_in^−0.5, norm gains 1), on a pool of two
// workers closed when the test ends.
func Model(t testing.TB, vocab, seqLen, batch int, seed uint64) *model.Model {
	t.Helper()
	c := arch.Config{Vocab: vocab, Dim: 32, FFN: 64, Layers: 2, Heads: 2, SeqLen: seqLen, NormEps: 1e-5,
		Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	pool := kernel.NewPool(2)
	t.Cleanup(pool.Close)
	m, err := model.New(c, batch, pool)
	if err != nil {
		t.Fatal(err)
	}
	Fill(m, seed)
	return m
}

// Fill draws m's weights from N(0, 1/d_in) with the seed's PCG stream, norm gains 1 and norm biases 0.
func Fill(m *model.Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, s := range m.Specs {
		v := m.Params.Flat[s.Offset : s.Offset+s.Size()]
		for i := range v {
			switch s.Class {
			case arch.ClassNorm:
				v[i] = 1
			case arch.ClassNormBias:
				v[i] = 0
			default:
				v[i] = float32(rng.NormFloat64() / math.Sqrt(float64(s.FanIn())))
			}
		}
	}
}
