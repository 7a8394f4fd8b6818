package data

import (
	"testing"

	"github.com/smallinit/smallinit/model"
)

// TestMaxVocabIsTheModelsBound: the largest vocabulary data prepares is the largest vocab_size a model takes.
func TestMaxVocabIsTheModelsBound(t *testing.T) {
	if MaxVocab != model.MaxDim {
		t.Errorf("data.MaxVocab %d, model.MaxDim %d", MaxVocab, model.MaxDim)
	}
}
