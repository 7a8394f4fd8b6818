package reproduce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/analyze"
	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/summary"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// validationCache is a finished run's whole-validation score as a partial readout computed it
// (train.ValidationScore), for one final model and one corpus: a partial readout of a study that is still
// training (judge or contrast --partial) is repeated as its runs finish, and scoring a run takes a minute or
// more, so each run is scored once. The cache is read back only for the same final weights (their sha256) on
// the same corpus (the digest of its sums, corpusSums); anything else is scored again.
type validationCache struct {
	Model    string             `json:"model_sha256"`
	Corpus   string             `json:"corpus_digest"`
	ValLoss  float64            `json:"val_loss"`
	ValBPB   float64            `json:"val_bpb"`
	LangLoss map[string]float64 `json:"lang_loss"`
	LangBPB  map[string]float64 `json:"lang_bpb"`
}

// corpusDigest is one string for a corpus's file sums (corpusSums): the sha256 of its sorted "file sum" lines.
func corpusDigest(sums map[string]string) string {
	h := sha256.New()
	for _, f := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(h, "%s %s\n", f, sums[f])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// scoreFinishedRun is analyze.Score of the run in dir on the whole validation split of dataDir, read from the
// run's cache when it holds this final model's score on the corpus of digest corpus, and written there
// otherwise; announce (if not nil) is called before the scoring starts. fresh reports whether it was scored here.
func scoreFinishedRun(ctx context.Context, dir, dataDir, corpus string, announce func()) (row summary.Row, fresh bool, err error) {
	run, err := train.OpenRun(dir)
	if err != nil {
		return row, false, err
	}
	model, err := filesum.File(filepath.Join(dir, rundir.FinalDir, arch.WeightsFile))
	if err != nil {
		return row, false, fmt.Errorf("run %s: final model: %w", dir, err)
	}
	var c validationCache
	if run.ReadScore(train.ValidationScore, &c) && c.Model == model && c.Corpus == corpus && len(c.LangLoss) > 0 {
		return summary.Row{Dir: dir, ValLoss: c.ValLoss, ValBPB: c.ValBPB, LangLoss: c.LangLoss, LangBPB: c.LangBPB}, false, nil
	}
	if announce != nil {
		announce()
	}
	if row, err = analyze.Score(ctx, dir, dataDir, "", train.Result{}, 0); err != nil {
		return row, true, err
	}
	if !scoreFinite(row) {
		return row, true, nil // a diverged model's score is not kept (JSON has no NaN): scored again, it diverges again
	}
	c = validationCache{Model: model, Corpus: corpus, ValLoss: row.ValLoss, ValBPB: row.ValBPB, LangLoss: row.LangLoss, LangBPB: row.LangBPB}
	return row, true, run.WriteScore(train.ValidationScore, c)
}

// scoreFinite reports whether every loss and bits-per-byte of row is a finite number.
func scoreFinite(row summary.Row) bool {
	vs := append([]float64{row.ValLoss, row.ValBPB}, slices.Collect(maps.Values(row.LangLoss))...)
	for _, v := range append(vs, slices.Collect(maps.Values(row.LangBPB))...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
