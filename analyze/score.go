package analyze

import (
	"context"
	"fmt"
	"math"
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
// windows > 0: the one validation loss a file or a table shows), and on the probes of probeDir unless it is "":
// the summary's row of the run (package summary). The model is loaded at budget.ScoreBatch, the batch the
// scoring probe timed. The run's name and recipe values are left for the caller. A cancelled ctx stops the
// scoring between forward passes (eval.ScoreTokens) with an error wrapping train.ErrInterrupted: nothing of
// the run's score is kept, and the next call scores it again.
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

// SelectionScore scores a finished run's final model on the LR-selection slice of dataDir
// (eval.ScoreSelection: the score an LR trial is chosen by, never the validation split) and records a finite
// score in the run directory (train.SelectionScore), where a later call reads it back instead of scoring again
// (fresh false). A non-finite loss (a model that diverged) is returned as it is and not recorded, so its run is
// scored again, and diverges again. A cancelled ctx stops the scoring with an error wrapping
// train.ErrInterrupted: nothing is recorded, and the next call scores it again.
func SelectionScore(ctx context.Context, dir, dataDir string) (s eval.SplitScore, fresh bool, err error) {
	r, err := train.OpenRun(dir)
	if err != nil {
		return s, false, err
	}
	if r.ReadScore(train.SelectionScore, &s) {
		return s, false, nil
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, err := r.FinalModel(budget.ScoreBatch, pool)
	if err != nil {
		return s, false, err
	}
	s, err = eval.ScoreSelection(ctx, m, dataDir)
	if err != nil && ctx.Err() != nil {
		return s, false, fmt.Errorf("%w while scoring trial %s, nothing of its score kept (the next call scores it again): %w", train.ErrInterrupted, dir, err)
	} else if err != nil {
		return s, false, err
	}
	if math.IsNaN(s.Loss) || math.IsInf(s.Loss, 0) {
		return s, true, nil
	}
	return s, true, r.WriteScore(train.SelectionScore, s)
}
