package experiment

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/probes"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// Score scores a finished run's final model on the validation split of dataDir, overall and per language, by
// eval.ScoreValidation (every token of the whole split, or of the first windows windows of each file when
// windows > 0: the one validation loss a file or a table shows), and on the probes of probeDir unless it is "".
// The run's name and recipe values are left for the caller. A cancelled ctx stops the scoring between forward
// passes (eval.ScoreTokens) with an error wrapping train.ErrInterrupted: nothing of the run's score is kept, and
// the next call scores it again.
func Score(ctx context.Context, dir, dataDir, probeDir string, res train.Result, windows int) (summary.Row, error) {
	pool := kernel.NewPool(0)
	defer pool.Close()
	run, err := train.OpenRun(dir)
	if err != nil {
		return summary.Row{}, err
	}
	m, err := run.FinalModel(budget.ScoreBatch, pool)
	if err != nil {
		return summary.Row{}, err
	}
	row := summary.Row{TrainLoss: res.Loss, TokensPerS: res.TokensPerS, Dir: dir, LangLoss: map[string]float64{}, LangBPB: map[string]float64{}}
	h, err := eval.ScoreValidation(ctx, m, dataDir, windows)
	if err != nil && ctx.Err() != nil {
		return row, fmt.Errorf("%w while scoring %s, nothing of its score kept (the next call scores it again): %w", train.ErrInterrupted, dir, err)
	} else if err != nil {
		return row, fmt.Errorf("run %s: %w", dir, err)
	}
	row.ValLoss, row.ValBPB = h.Overall.Loss, h.Overall.BitsPerByte
	for lang, s := range h.ByLanguage {
		row.LangLoss[lang], row.LangBPB[lang] = s.Loss, s.BitsPerByte
	}
	if probeDir != "" {
		tok, err := tokenizer.Load(filepath.Join(probeDir, data.TokenizerFile))
		if err != nil {
			return row, err
		}
		if row.Probes, err = probes.Score(ctx, m, tok, probeDir); err != nil {
			return row, fmt.Errorf("run %s: %w", dir, err)
		}
	}
	return row, nil
}
