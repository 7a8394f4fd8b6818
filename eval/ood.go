package eval

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/smallinit/smallinit/corpus/ood"
)

// OODScore is a model's score on one out-of-distribution text (package corpus/ood): loss per token and bits
// per byte, the latter comparable across tokenizers and between languages of different bytes per token.
type OODScore struct {
	Name  string `json:"name"`
	Lang  string `json:"lang"`
	Genre string `json:"genre"`
	TextScore
}

// ScoreOOD scores the model of l on every embedded out-of-distribution text (ood.Texts), each as one document
// with ScoreText (rolling windows, every token scored; maxWindows > 0 stops a text early, 0 scores it whole).
// The texts are never training data, so this is the generalisation check beside the validation split (docs/definitions.md §7).
func ScoreOOD(ctx context.Context, l *LM, maxWindows int) ([]OODScore, error) {
	var out []OODScore
	for _, t := range ood.Texts() {
		r, err := ood.Open(t.Name)
		if err != nil {
			return out, err
		}
		s, err := l.ScoreText(ctx, r, maxWindows, nil)
		if err != nil {
			return out, fmt.Errorf("score out-of-distribution text %s: %w", t.Name, err)
		}
		out = append(out, OODScore{Name: t.Name, Lang: t.Lang, Genre: t.Genre, TextScore: s})
	}
	return out, nil
}

// MarshalJSON writes the score flat, with bits_per_byte beside the loss.
func (s OODScore) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name        string  `json:"name"`
		Lang        string  `json:"lang"`
		Genre       string  `json:"genre"`
		Tokens      int64   `json:"tokens"`
		Bytes       int64   `json:"bytes"`
		Loss        float64 `json:"loss"`
		LossStdErr  float64 `json:"loss_stderr"`
		BitsPerByte float64 `json:"bits_per_byte"`
	}{s.Name, s.Lang, s.Genre, s.Tokens, s.Bytes, s.LossMean, s.LossStdErr, s.BitsPerByte()})
}

// UnmarshalJSON reads what MarshalJSON writes (a cached score read back keeps its loss and bytes).
func (s *OODScore) UnmarshalJSON(b []byte) error {
	var v struct {
		Name       string  `json:"name"`
		Lang       string  `json:"lang"`
		Genre      string  `json:"genre"`
		Tokens     int64   `json:"tokens"`
		Bytes      int64   `json:"bytes"`
		Loss       float64 `json:"loss"`
		LossStdErr float64 `json:"loss_stderr"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = OODScore{Name: v.Name, Lang: v.Lang, Genre: v.Genre, TextScore: TextScore{Tokens: v.Tokens, Bytes: v.Bytes, LossMean: v.Loss, LossStdErr: v.LossStdErr}}
	return nil
}
