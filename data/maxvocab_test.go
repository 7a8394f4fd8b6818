package data

import (
	"testing"

	"github.com/smallinit/smallinit/arch"
)

// TestMaxVocabIsTheModelsBound: the largest vocabulary data prepares is the largest vocab_size a model takes.
func TestMaxVocabIsTheModelsBound(t *testing.T) {
	if MaxVocab != arch.MaxDim {
		t.Errorf("data.MaxVocab %d, arch.MaxDim %d", MaxVocab, arch.MaxDim)
	}
}
