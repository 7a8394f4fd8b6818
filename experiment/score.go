package experiment

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/probes"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// Score scores a finished run's final model on the whole validation split of dataDir (at most windows
// windows per file; 0: all) and on each language, and on the probes of probeDir unless it is "". The run's
// name and recipe values are left for the caller.
func Score(dir, dataDir, probeDir string, st *data.Stats, res train.Result, windows int) (summary.Row, error) {
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, _, err := model.Load(filepath.Join(dir, train.FinalDir), 16, pool)
	if err != nil {
		return summary.Row{}, err
	}
	row := summary.Row{TrainLoss: res.Loss, TokensPerS: res.TokensPerS, Dir: dir, LangLoss: map[string]float64{}, LangBPB: map[string]float64{}}
	score := func(file string) (float64, error) {
		toks, err := data.ReadTokens(file, m.Config.Vocab)
		if err != nil {
			return 0, err
		}
		loss, _, err := train.EvalLoss(m, toks, windows)
		return loss, err
	}
	if row.ValLoss, err = score(filepath.Join(dataDir, data.ValFile)); err != nil {
		return row, err
	}
	row.ValBPB = st.Val.BitsPerByte(row.ValLoss)
	for lang, ls := range st.ValByLang {
		l, err := score(filepath.Join(dataDir, data.ValLangFile(lang)))
		if err != nil {
			return row, err
		}
		row.LangLoss[lang], row.LangBPB[lang] = l, ls.BitsPerByte(l)
	}
	if math.IsNaN(row.ValLoss) || math.IsInf(row.ValLoss, 0) {
		return row, fmt.Errorf("run %s: validation loss is %v", dir, row.ValLoss)
	}
	if probeDir != "" {
		tok, err := tokenizer.Load(filepath.Join(probeDir, data.TokenizerFile))
		if err != nil {
			return row, err
		}
		if row.Probes, err = probes.Score(context.Background(), m, tok, probeDir); err != nil {
			return row, fmt.Errorf("run %s: %w", dir, err)
		}
	}
	return row, nil
}
