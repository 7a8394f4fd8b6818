package probes

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
