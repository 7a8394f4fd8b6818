package eval

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/tokenizer"
)

// testSentences train the tests' tokenizer.
var testSentences = []string{
	"The quick brown fox jumps over the lazy dog.",
	"Question: How many apples are left? Answer: 42 apples are left.",
	"She sold 48 clips in April and half as many in May.",
	"add: 4 8 2 + 9 3 7 = 1 4 1 9",
	"A man is sitting on a roof. He starts pulling up roofing on a roof.",
	"芳芳买了一本书有99页，看了90页，她还剩多少页没有看？",
}

// testTokenizer is a small byte-level BPE trained on testSentences.
func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Train([]string{strings.Join(testSentences, "\n")}, 320)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testModel is a randomly initialised two-layer model (σ = d_in^-0.5, norm gains 1).
func testModel(t testing.TB, vocab, seqLen, batch int, seed uint64) *model.Model {
	t.Helper()
	c := model.Config{Vocab: vocab, Dim: 32, FFN: 64, Layers: 2, Heads: 2, SeqLen: seqLen, NormEps: 1e-5,
		Norm: model.NormRMS, AttnGate: model.GateNone, RopeTheta: 10000, FFNKind: model.FFNDense}
	pool := kernel.NewPool(2)
	t.Cleanup(pool.Close)
	m, err := model.New(c, batch, pool)
	if err != nil {
		t.Fatal(err)
	}
	fillModel(m, seed)
	return m
}

func fillModel(m *model.Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, s := range m.Specs {
		v := m.Params.Flat[s.Offset : s.Offset+s.Size()]
		for i := range v {
			switch s.Class {
			case model.ClassNorm:
				v[i] = 1
			case model.ClassNormBias:
				v[i] = 0
			default:
				v[i] = float32(rng.NormFloat64() / math.Sqrt(float64(s.FanIn())))
			}
		}
	}
}

// byteTokenizer is a fake tokenizer: ids 0..255 are bytes, 256 is end-of-text.
type byteTokenizer struct{}

func (byteTokenizer) Encode(s string) []int32 {
	out := make([]int32, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int32(s[i])
	}
	return out
}

func (byteTokenizer) Decode(ids []int32) []byte {
	out := make([]byte, 0, len(ids))
	for _, id := range ids {
		out = append(out, byte(id))
	}
	return out
}

func (byteTokenizer) EOT() int32 { return 256 }

// scriptStepper is a fake Stepper over the byte vocabulary: its k-th Append returns logits that make script[k-1]
// the argmax, and it fails like a KV cache when asked to hold more than max tokens.
type scriptStepper struct {
	script []int32
	max    int
	held   int
	calls  int
	resets int
	logits []float32
}

func (s *scriptStepper) Reset()   { s.held = 0; s.resets++ }
func (s *scriptStepper) Max() int { return s.max }
func (s *scriptStepper) Append(tokens []int32) ([]float32, error) {
	if s.held+len(tokens) > s.max {
		return nil, errFull
	}
	s.held += len(tokens)
	s.calls++
	if s.logits == nil {
		s.logits = make([]float32, 257)
	}
	clear(s.logits)
	if k := s.calls - 1; k < len(s.script) {
		s.logits[s.script[k]] = 10
	} else {
		s.logits[256] = 10
	}
	return s.logits, nil
}

var errFull = errorString("script stepper: full")

type errorString string

func (e errorString) Error() string { return string(e) }
