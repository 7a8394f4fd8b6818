// Package probescore is the record of a model's probe results (Scores), as summary.json and the reproduction's
// evidence carry it. probes computes it; the record sits below probes so that a reader of those files (summary,
// and through it report) builds without the model, the tasks and the kernels.
package probescore

// Scores are a model's probe results from a probe mix directory: exact-match accuracy and the gold
// answer's loss per token on the held-out reasoning prompts and on the recalled memorisation prompts, with the
// reasoning prompts' chance accuracy and the prompt counts.
type Scores struct {
	Prefix            string  `json:"prefix"` // what came before every prompt: probes.Prefix
	ReasoningAcc      float64 `json:"acc_reasoning"`
	ReasoningChance   float64 `json:"chance_reasoning"`
	ReasoningLoss     float64 `json:"gold_loss_per_token_reasoning"`
	ReasoningCount    int     `json:"reasoning_records"`
	MemorisationAcc   float64 `json:"acc_memorisation"`
	MemorisationLoss  float64 `json:"gold_loss_per_token_memorisation"`
	MemorisationCount int     `json:"memorisation_records"`
}
