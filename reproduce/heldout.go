package reproduce

import "github.com/smallinit/smallinit/eval"

// HeldOutLoss is the Loss a verdict reads from a final model's whole-validation-split score
// (eval.ScoreHeldOut): nats per token, overall and per language.
func HeldOutLoss(h eval.HeldOutScore) Loss {
	o, by := h.Nats()
	return Loss{Overall: o, ByLanguage: by}
}
