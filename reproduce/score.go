package reproduce

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/train/rundir"

	"github.com/smallinit/smallinit/corpus/ood"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// DefaultOODWindows bounds each out-of-distribution text to its first windows of the model's context (0 would
// score each text whole, about 150,000 tokens a text, too slow for 60 models in a 2-hour budget).
const DefaultOODWindows = 256

// RunScore is what a verdict reads of one final model: its score on the whole validation split (overall, per
// language), on the out-of-distribution texts, and the mechanism's state at the end of training (the last
// diagnostics record): norm saturation and sink rate.
type RunScore struct {
	HeldOut eval.HeldOutScore `json:"held_out"`
	OOD     []eval.OODScore   `json:"ood"`
	// OODWindows is the windows per text scored (0: whole).
	OODWindows int `json:"ood_windows"`
	// ValWindows is the windows per validation file scored (0: the whole split; a tier's score_windows).
	ValWindows int `json:"val_windows,omitempty"`
	// NormSaturation is docs/definitions.md §4's s = ε/(mean(x²)+ε) averaged over every norm (both norms of each block and the
	// final norm) on the diagnostics probes; FirstNormSaturation the first block's attention norm alone (the norm
	// the width-emulated ε targets). SinkRate is the % of (layer, head) pairs with α > 0.3. NaN (null) when the
	// run recorded no activation diagnostics.
	NormSaturation      float64 `json:"norm_saturation"`
	FirstNormSaturation float64 `json:"first_norm_saturation"`
	SinkRate            float64 `json:"sink_rate"`
	DiagStep            int     `json:"diagnostics_step"`
}

// MarshalJSON writes the NaN of a run without diagnostics as null.
func (s RunScore) MarshalJSON() ([]byte, error) { return finitejson.Marshal(s) }

// UnmarshalJSON reads a null back as NaN.
func (s *RunScore) UnmarshalJSON(b []byte) error {
	type plain RunScore
	return finitejson.Unmarshal(b, (*plain)(s))
}

// OODBitsPerByte is the score's bits per byte per out-of-distribution text.
func (s *RunScore) OODBitsPerByte() map[string]float64 {
	out := map[string]float64{}
	for _, o := range s.OOD {
		out[o.Name] = o.BitsPerByte()
	}
	return out
}

// scoreRun scores the final model of the run in dir (cached in the run directory, train.VerdictScore): eval.ScoreHeldOut on the
// prepared directory dataDir, eval.ScoreOOD with its tokenizer, and the last diagnostics record's saturation
// and sink rate.
func scoreRun(ctx context.Context, dir, dataDir string, sc scoring) (*RunScore, error) {
	if ctx.Err() != nil { // stopped (SIGTERM) between models: the scores so far are cached, the next call goes on
		return nil, fmt.Errorf("%w before scoring %s: %w", train.ErrInterrupted, dir, context.Cause(ctx))
	}
	run, err := train.OpenRun(dir)
	if err != nil {
		return nil, err
	}
	var cached RunScore
	if run.ReadScore(train.VerdictScore, &cached) && cached.HeldOut.Overall.Tokens > 0 && cached.OODWindows == sc.ood && cached.ValWindows == sc.val && len(cached.OOD) > 0 && cached.OOD[0].Tokens > 0 {
		return &cached, nil
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, err := run.FinalModel(16, pool)
	if err != nil {
		return nil, err
	}
	s := &RunScore{OODWindows: sc.ood, ValWindows: sc.val}
	if s.HeldOut, err = eval.ScoreValidation(ctx, m, dataDir, sc.val); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w while scoring %s, nothing of its score kept (the next call scores it again): %w", train.ErrInterrupted, dir, err)
	} else if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	tok, err := tokenizer.Load(filepath.Join(dataDir, data.TokenizerFile))
	if err != nil {
		return nil, err
	}
	if s.OOD, err = eval.ScoreOOD(ctx, eval.NewLM(m, tok, nil), sc.ood); err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w while scoring %s, nothing of its score kept (the next call scores it again): %w", train.ErrInterrupted, dir, err)
	} else if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	s.NormSaturation, s.FirstNormSaturation, s.SinkRate, s.DiagStep, err = mechanism(run)
	if err != nil {
		return nil, err
	}
	if err := run.WriteScore(train.VerdictScore, s); err != nil {
		return nil, err
	}
	return s, nil
}

// oodCache is a run's out-of-distribution score cache (train.OODScore): each text's score at Windows windows of
// the model's context (0: whole).
type oodCache struct {
	Windows int             `json:"windows"`
	Texts   []eval.OODScore `json:"texts"`
}

// scoreOOD scores the final model of the run in dir on the out-of-distribution texts (eval.ScoreOOD, windows per
// text, 0: each whole) with the tokenizer of the prepared directory dataDir, cached in the run directory: a
// cache of another window count is scored again.
func scoreOOD(ctx context.Context, dir, dataDir string, windows int) ([]eval.OODScore, error) {
	run, err := train.OpenRun(dir)
	if err != nil {
		return nil, err
	}
	var cached oodCache
	if run.ReadScore(train.OODScore, &cached) && cached.Windows == windows && len(cached.Texts) == len(ood.Texts()) && cached.Texts[0].Tokens > 0 {
		return cached.Texts, nil
	}
	lm, done, err := finalLM(run, dataDir)
	if err != nil {
		return nil, err
	}
	defer done()
	texts, err := eval.ScoreOOD(ctx, lm, windows)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	if err := run.WriteScore(train.OODScore, oodCache{Windows: windows, Texts: texts}); err != nil {
		return nil, err
	}
	return texts, nil
}

// finalLM is the final model of run with the tokenizer of the prepared directory dataDir, on a kernel pool of its
// own that done releases.
func finalLM(run *train.Run, dataDir string) (lm *eval.LM, done func(), err error) {
	pool := kernel.NewPool(0)
	m, err := run.FinalModel(16, pool)
	if err == nil {
		var tok *tokenizer.Tokenizer
		if tok, err = tokenizer.Load(filepath.Join(dataDir, data.TokenizerFile)); err == nil {
			return eval.NewLM(m, tok, nil), pool.Close, nil
		}
	}
	pool.Close()
	return nil, nil, err
}

// mechanism reads the last diagnostics record of run with activation metrics: the mean norm saturation over
// every norm, the first norm's, and the sink rate. No such record gives NaN and step −1.
func mechanism(run *train.Run) (sat, first, sink float64, step int, err error) {
	sat, first, sink, step = math.NaN(), math.NaN(), math.NaN(), -1
	lines, err := rundir.Diagnostics[*diagrec.Record](run.Run)
	if err != nil {
		return sat, first, sink, step, err
	}
	for _, rec := range lines {
		if rec.Diagnostics == nil {
			continue
		}
		a := rec.Diagnostics.Activations
		if a == nil || len(a.Layers) == 0 {
			continue
		}
		s, n := a.FinalNorm.Saturation, 1
		for _, l := range a.Layers {
			s, n = s+l.AttnNorm.Saturation+l.FFNNorm.Saturation, n+2
		}
		sat, first, sink, step = s/float64(n), a.Layers[0].AttnNorm.Saturation, a.SinkRate, rec.Step
	}
	return sat, first, sink, step, nil
}
