package eval

import (
	"testing"

	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/model/modeltest"
	"github.com/smallinit/smallinit/tokenizer"
)

// The tests' tokenizer and random model are model/modeltest's, shared with the other packages' tests.
var testSentences = modeltest.Sentences

func testTokenizer(t testing.TB) *tokenizer.Tokenizer { return modeltest.Tokenizer(t) }

func testModel(t testing.TB, vocab, seqLen, batch int, seed uint64) *model.Model {
	return modeltest.Model(t, vocab, seqLen, batch, seed)
}

func fillModel(m *model.Model, seed uint64) { modeltest.Fill(m, seed) }

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
