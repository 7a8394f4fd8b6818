package eval

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/model"
)

// SplitScore is a model's loss on one token file, every token of it scored.
type SplitScore struct {
	Tokens      int64   `json:"tokens"`        // target tokens scored: all of the file but its first token
	Bytes       int64   `json:"bytes"`         // bytes of the split's documents (data.SplitStats), 0 when unknown
	Loss        float64 `json:"loss"`          // mean next-token loss, nats per token
	BitsPerByte float64 `json:"bits_per_byte"` // data.SplitStats.BitsPerByte of Loss; 0 when Bytes is unknown
}

// HeldOutScore is a final model's score on the whole validation split of a prepared directory (docs/definitions.md §7's
// verdict set), overall and per language. It fills reproduce.Loss: Overall.Loss and each ByLanguage[l].Loss.
type HeldOutScore struct {
	Source     string                `json:"source"` // e.g. "whole validation split, 107,963 tokens (en 63,429, zh 44,533)"
	Overall    SplitScore            `json:"overall"`
	ByLanguage map[string]SplitScore `json:"by_language,omitempty"`
}

// Nats returns the overall and per-language losses in nats per token, the numbers the verdicts read.
func (h HeldOutScore) Nats() (overall float64, byLanguage map[string]float64) {
	if len(h.ByLanguage) > 0 {
		byLanguage = map[string]float64{}
		for l, s := range h.ByLanguage {
			byLanguage[l] = s.Loss
		}
	}
	return h.Overall.Loss, byLanguage
}

// ScoreHeldOut scores m on the whole validation split of the prepared directory dir: every token of val.tok,
// and for the embedded corpus every token of each val.<lang>.tok (data.ValLangFile). Where the languages' files
// hold all of val.tok's tokens (the embedded corpus), the overall loss is their token-weighted mean, which
// scores the same tokens once rather than twice (windows then never mix languages); otherwise val.tok is scored
// itself. Bits per byte use data.SplitStats.BitsPerByte.
//
// It is the one validation loss a file or a table shows for a finished model (summary.json, the plan tables,
// the verdicts), and scores every token (ScoreTokens) so that the number is a property of the split and the
// model alone: not of how the split's length falls against the context length (windows with the tail dropped
// leave up to SeqLen tokens of each file out) nor of the batch. The val_loss lines of a run's metrics.jsonl are
// another thing, a training-time monitor on the first train.eval_windows windows (train.EvalLoss).
// Learning rates are selected with ScoreSelection, which cannot read the validation split.
func ScoreHeldOut(ctx context.Context, m *model.Model, dir string) (HeldOutScore, error) {
	return ScoreValidation(ctx, m, dir, 0)
}

// MaxWindows bounds a cap on the windows scored per file (ScoreValidation's windows, and every flag and key that
// sets one: compare --windows, demo --windows, report --compare-windows, a plan's report.compare_windows, a
// tier's score_windows and ood_windows). 2^24 windows are a billion tokens at a 64-token context, more than any
// split this toolkit prepares holds, so a cap past it caps nothing: it is a typo, or means 0 (every window).
const MaxWindows = 1 << 24

// CheckWindows refuses a cap on the windows scored outside [0, MaxWindows], naming the flag or key name.
func CheckWindows(name string, windows int) error {
	if windows < 0 || windows > MaxWindows {
		return fmt.Errorf("%s %d: must be in [0, %d] (0: every window)", name, windows, MaxWindows)
	}
	return nil
}

// ScoreValidation is ScoreHeldOut on at most windows windows of SeqLen targets per file (0: the whole split): a
// quick look by the same definition, every one of each file's first windows·SeqLen targets scored (bits per
// byte then use the whole file's bytes per token). Its Source says so. A cancelled ctx stops it between
// forward passes (ScoreTokens).
func ScoreValidation(ctx context.Context, m *model.Model, dir string, windows int) (HeldOutScore, error) {
	st, err := data.ReadStats(dir)
	if err != nil {
		return HeldOutScore{}, err
	}
	if st.VocabSize != m.Config.Vocab {
		return HeldOutScore{}, fmt.Errorf("score validation split of %s: data vocabulary %d, model vocabulary %d", dir, st.VocabSize, m.Config.Vocab)
	}
	out := HeldOutScore{}
	langs := make([]string, 0, len(st.ValByLang))
	var langTokens int64
	for l, s := range st.ValByLang {
		langs = append(langs, l)
		langTokens += s.Tokens
	}
	slices.Sort(langs)
	var sum float64
	var n int64
	if len(langs) > 0 {
		out.ByLanguage = map[string]SplitScore{}
		for _, l := range langs {
			s, ls, err := scoreTokenFile(ctx, m, filepath.Join(dir, data.ValLangFile(l)), st.ValByLang[l], windows)
			if err != nil {
				return out, err
			}
			out.ByLanguage[l] = s
			sum, n = sum+ls, n+s.Tokens
		}
	}
	if len(langs) > 0 && langTokens == st.Val.Tokens {
		out.Overall = SplitScore{Tokens: n, Bytes: st.Val.Bytes, Loss: sum / float64(n)}
		out.Overall.BitsPerByte = st.Val.BitsPerByte(out.Overall.Loss)
	} else if out.Overall, _, err = scoreTokenFile(ctx, m, filepath.Join(dir, data.ValFile), st.Val, windows); err != nil {
		return out, err
	}
	out.Source = fmt.Sprintf("whole validation split, %d tokens", out.Overall.Tokens)
	if windows > 0 {
		out.Source = fmt.Sprintf("validation split, first %d windows of each file, %d tokens", windows, out.Overall.Tokens)
	}
	if len(langs) > 0 {
		out.Source += " ("
		for i, l := range langs {
			if i > 0 {
				out.Source += ", "
			}
			out.Source += fmt.Sprintf("%s %d", l, out.ByLanguage[l].Tokens)
		}
		out.Source += ")"
	}
	if math.IsNaN(out.Overall.Loss) || math.IsInf(out.Overall.Loss, 0) {
		return out, fmt.Errorf("score validation split of %s: loss is %v", dir, out.Overall.Loss)
	}
	return out, nil
}

// ScoreSelection is a model's loss on the LR-selection slice of dir (data.SelectFile, made by
// data.PrepareSelection): held-out training documents, disjoint from the validation split, which this function
// never opens. A learning-rate search scores its trials with it and nothing else.
func ScoreSelection(ctx context.Context, m *model.Model, dir string) (SplitScore, error) {
	if _, err := data.ReadSelectionStats(dir); err != nil {
		return SplitScore{}, fmt.Errorf("score selection slice: %w (run data.PrepareSelection first)", err)
	}
	s, _, err := scoreTokenFile(ctx, m, filepath.Join(dir, data.SelectFile), data.SplitStats{}, 0)
	return s, err
}

// scoreTokenFile reads a token file and scores all its tokens (ScoreTokens), or those of its first windows
// windows when windows > 0; split gives its bytes for bits per byte (the whole file's bytes per token, also
// under a window cap). It also returns the summed loss.
func scoreTokenFile(ctx context.Context, m *model.Model, path string, split data.SplitStats, windows int) (SplitScore, float64, error) {
	toks, err := data.ReadTokens(path, m.Config.Vocab)
	if err != nil {
		return SplitScore{}, 0, err
	}
	if windows > 0 {
		toks = toks[:min(len(toks), windows*m.Config.SeqLen+1)]
	}
	sum, n, err := ScoreTokens(ctx, m, toks, nil)
	if err != nil {
		return SplitScore{}, 0, fmt.Errorf("score %s: %w", path, err)
	}
	s := SplitScore{Tokens: n, Bytes: split.Bytes, Loss: sum / float64(n)}
	if split.Bytes > 0 {
		s.BitsPerByte = split.BitsPerByte(s.Loss)
	}
	return s, sum, nil
}

// ScoreTokens returns the summed next-token loss (nats) of m over every target of the token stream toks,
// toks[1:], and their count. Windows of SeqLen targets follow each other without overlap, each conditioned on
// its own SeqLen inputs only (the windows of data.Window, batched m.Batch() at a time); the targets past the
// last full window are scored by one window on the SeqLen tokens before the end, counting only the new ones
// (lm-evaluation-harness's rolling windows). Unlike train.EvalLoss, a training-time monitor over the first
// windows, no token is left out. Only the cross-entropy counts (an MoE's auxiliary loss does not).
// progress, when not nil, is told the windows scored of the total after every forward pass (and 0 first), so
// that a command scoring a large file can show it moving. A cancelled ctx (SIGTERM) stops it before the next
// forward pass with an error saying how far it got that wraps context.Cause(ctx): nothing is returned of a
// file scored in part, so a caller writes nothing and the next call scores it again.
func ScoreTokens(ctx context.Context, m *model.Model, toks []int32, progress func(done, total int64)) (sum float64, n int64, err error) {
	T, B := m.Config.SeqLen, m.Batch()
	if len(toks) < 2 {
		return 0, 0, fmt.Errorf("%d tokens: need at least 2 to score one", len(toks))
	}
	nw := data.NumWindows(len(toks), T)
	total := int64(nw)
	if len(toks)-1 > nw*T {
		total++ // the last, partial window
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	progress(0, total)
	in, tg := make([]int32, B*T), make([]int32, B*T)
	add := func(skip int) {
		for _, v := range m.TokenLoss()[skip:] {
			sum += float64(v)
			n++
		}
	}
	for k := 0; k < nw; k += B {
		if ctx.Err() != nil {
			return 0, 0, stopped(ctx, int64(k), total)
		}
		b := min(B, nw-k)
		for i := 0; i < b; i++ {
			data.Window(toks, k+i, in[i*T:(i+1)*T], tg[i*T:(i+1)*T])
		}
		if _, err := m.ForwardSeq(in[:b*T], tg[:b*T], T); err != nil {
			return 0, 0, err
		}
		add(0)
		progress(int64(k+b), total)
	}
	if rest := len(toks) - 1 - nw*T; rest > 0 {
		if ctx.Err() != nil {
			return 0, 0, stopped(ctx, int64(nw), total)
		}
		L := min(T, len(toks)-1) // the last window: L inputs ending just before the last token
		start := len(toks) - 1 - L
		copy(in, toks[start:start+L])
		copy(tg, toks[start+1:])
		if _, err := m.ForwardSeq(in[:L], tg[:L], L); err != nil {
			return 0, 0, err
		}
		add(L - rest)
		progress(total, total)
	}
	return sum, n, nil
}

// stopped is ScoreTokens' error for a cancelled ctx after done of total windows.
func stopped(ctx context.Context, done, total int64) error {
	return fmt.Errorf("stopped after %d of %d windows, nothing kept of them: %w", done, total, context.Cause(ctx))
}
