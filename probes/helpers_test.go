package probes

import (
	"testing"

	"github.com/smallinit/smallinit/internal/testkit"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/tokenizer"
)

// The tests' tokenizer and random model are internal/testkit's, shared with the other packages' tests.
var testSentences = testkit.Sentences

func testTokenizer(t testing.TB) *tokenizer.Tokenizer { return testkit.Tokenizer(t) }

func testModel(t testing.TB, vocab, seqLen, batch int, seed uint64) *model.Model {
	return testkit.Model(t, vocab, seqLen, batch, seed)
}

func fillModel(m *model.Model, seed uint64) { testkit.Fill(m, seed) }
