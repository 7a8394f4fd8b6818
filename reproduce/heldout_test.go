package reproduce

import (
	"testing"

	"github.com/smallinit/smallinit/eval"
)

// TestHeldOutLossCarriesNats checks that the verdicts' Loss takes the nats (not bits per byte) of every language.
func TestHeldOutLossCarriesNats(t *testing.T) {
	h := eval.HeldOutScore{Overall: eval.SplitScore{Loss: 4.5, BitsPerByte: 2},
		ByLanguage: map[string]eval.SplitScore{"en": {Loss: 4.2, BitsPerByte: 1.9}, "zh": {Loss: 5.1, BitsPerByte: 2.2}}}
	l := HeldOutLoss(h)
	if l.Overall != 4.5 || l.ByLanguage["en"] != 4.2 || l.ByLanguage["zh"] != 5.1 || len(l.ByLanguage) != 2 {
		t.Errorf("HeldOutLoss = %+v", l)
	}
	if l := HeldOutLoss(eval.HeldOutScore{Overall: eval.SplitScore{Loss: 3}}); l.ByLanguage != nil || l.Overall != 3 {
		t.Errorf("no languages: %+v", l)
	}
}
