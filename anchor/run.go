package anchor

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/runlock"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// Shape is the model of a run. The papers' single-head model (2405.05409 App. A) has d = 400, a feed-forward
// width of 1200 and key/value width 200; smallinit's block differs (see README): pre-norm instead of
// post-norm, RoPE instead of learned positions, a SwiGLU FFN (three matrices) instead of a two-matrix FNN.
type Shape struct {
	Dim, FFN, HeadDim int
	Norm              string // arch.NormLayer (the papers' LayerNorm) or arch.NormRMS
}

// PaperShape is 2405.05409's width: d = 400, d_ff = 1200, d_k = d_v = 200, one head.
var PaperShape = Shape{Dim: 400, FFN: 1200, HeadDim: 200, Norm: arch.NormLayer}

// Cell is one training run of a grid: task, initialization rate γ, depth, peak learning rate and seed.
type Cell struct {
	Task   string  `json:"task"` // TaskComposite or TaskMix
	Gamma  float64 `json:"gamma"`
	Layers int     `json:"layers"`
	LR     float64 `json:"lr"`
	Seed   uint64  `json:"seed"`
}

// Tasks.
const (
	TaskComposite = "anchor"     // 2405.05409's composite anchors with (4,3) held out
	TaskMix       = "anchor-mix" // 2502.04375's reasoning and memory anchors
)

// Name is the cell's run-directory name.
func (c Cell) Name() string {
	return fmt.Sprintf("%s-g%.2f-L%d-lr%.0e-s%d", c.Task, c.Gamma, c.Layers, c.LR, c.Seed)
}

// Budget is how long a cell trains.
type Budget struct {
	Steps   int `json:"steps"`
	Batch   int `json:"batch"`
	Threads int `json:"threads"` // worker threads per run (0: all cores)
}

// RunConfig is the recipe.Config of a cell on the token file tok: the papers' optimiser (AdamW, β = (0.9,
// 0.999), ε = 1e-8, weight decay 0.01, gradient clipping at 1), their schedule shape (linear warmup over 10 of
// 210 epochs, then cosine decay to the minimum 1e-5 of a peak 2.5e-4, i.e. 4% of the peak), the γ rule on every
// matrix, and the loss on the answer position only.
func RunConfig(c Cell, s Shape, b Budget, tok string) (recipe.Config, error) {
	vocab := CompositeVocab
	if c.Task == TaskMix {
		vocab = MixVocab
	}
	tc := recipe.Default()
	tc.Seed = c.Seed
	tc.Model.Config = arch.Config{Vocab: vocab, Dim: s.Dim, FFN: s.FFN, Layers: c.Layers, Heads: 1, HeadDim: s.HeadDim,
		SeqLen: SeqLen + 1, NormEps: 1e-5, Norm: s.Norm, AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	tc.Init = recipe.Init{Rule: recipe.RuleGamma, Gamma: c.Gamma}
	tc.Optimizer = recipe.AdamW{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	tc.Schedule = recipe.Schedule{Kind: recipe.ScheduleCosine, PeakLR: c.LR, Warmup: max(1, b.Steps*10/210), MinRatio: 0.04}
	tc.Data = recipe.DataConfig{Train: tok}
	tc.Train = recipe.LoopConfig{BatchSize: b.Batch, Steps: b.Steps, GradClip: 1, LogInterval: max(1, b.Steps/10),
		KeepCheckpoints: 1, Threads: b.Threads, LossPositions: []int{SeqLen - 1}}
	if err := tc.Validate(); err != nil {
		return recipe.Config{}, fmt.Errorf("anchor cell %s: %w", c.Name(), err)
	}
	return tc, nil
}

// WriteTokens writes examples as a token file: each example's SeqLen inputs then its answer, and one padding
// token 0 at the end (see the package documentation).
func WriteTokens(path string, ex []Example) error {
	ids := make([]int32, 0, len(ex)*(SeqLen+1)+1)
	for _, e := range ex {
		ids = append(ids, e.Tokens...)
		ids = append(ids, e.Answer)
	}
	ids = append(ids, 0)
	if err := data.WriteTokens(path, ids); err != nil {
		return fmt.Errorf("anchor tokens %s: %w", path, err)
	}
	return nil
}

// cellLockPoll is how often a cell held by another process is checked again.
const cellLockPoll = time.Second

// TrainCell trains cell c on the token file tok in dir (train.StartOrResume: a new directory starts the run,
// one holding the cell's interrupted run resumes it, one holding its finished run is read back, and one holding
// another config is refused) and returns the final model, with room for evalBatch sequences per forward pass,
// and the run's result. A cell whose lock another process holds is waited for (train.Options.WaitHeld) until
// that process finishes it or stops heartbeating, with a line to log (nil: silent) when the wait begins: a
// diagram requeued on another node takes over the cell its killed predecessor held once that lock is
// runlock.DefaultStaleAfter old.
func TrainCell(ctx context.Context, c Cell, s Shape, b Budget, tok, dir string, evalBatch int, pool *kernel.Pool, log io.Writer) (*model.Model, train.Result, error) {
	tc, err := RunConfig(c, s, b, tok)
	if err != nil {
		return nil, train.Result{}, err
	}
	res, err := train.StartOrResume(ctx, tc, dir, train.Options{WaitHeld: cellLockPoll, Waiting: func(holder string) {
		if log != nil {
			fmt.Fprintf(log, "anchor cell %s: waiting for %s, which holds it (taken over once its heartbeat is %s old)\n",
				c.Name(), holder, runlock.DefaultStaleAfter)
		}
	}})
	if err != nil {
		return nil, res, fmt.Errorf("anchor cell %s: %w", c.Name(), err)
	}
	run, err := train.OpenRun(dir)
	if err != nil {
		return nil, res, fmt.Errorf("anchor cell %s: %w", c.Name(), err)
	}
	m, err := run.FinalModel(evalBatch, pool)
	if err != nil {
		return nil, res, fmt.Errorf("anchor cell %s: %w", c.Name(), err)
	}
	return m, res, nil
}

// Predict returns the model's argmax answer for every example: the most likely next token after its SeqLen
// inputs.
func Predict(m *model.Model, ex []Example) ([]int32, error) {
	T, V := SeqLen, m.Config.Vocab
	per := m.Batch() * m.Config.SeqLen / T
	in, tg := make([]int32, 0, per*T), make([]int32, 0, per*T)
	out := make([]int32, 0, len(ex))
	for lo := 0; lo < len(ex); lo += per {
		hi := min(len(ex), lo+per)
		in, tg = in[:0], tg[:0]
		for _, e := range ex[lo:hi] {
			in = append(in, e.Tokens...)
			for j := 0; j < T-1; j++ {
				tg = append(tg, model.IgnoreTarget)
			}
			tg = append(tg, e.Answer)
		}
		if _, err := m.ForwardSeq(in, tg, T); err != nil {
			return nil, fmt.Errorf("anchor predict: %w", err)
		}
		lg := m.Logits()
		for b := range hi - lo {
			row := lg[((b+1)*T-1)*V : (b+1)*T*V]
			best := 0
			for v := range row {
				if row[v] > row[best] {
					best = v
				}
			}
			out = append(out, int32(best))
		}
	}
	return out, nil
}

// Accuracy is the fraction of examples whose prediction is their Answer.
func Accuracy(ex []Example, preds []int32) float64 {
	if len(ex) == 0 {
		return 0
	}
	n := 0
	for i, e := range ex {
		if preds[i] == e.Answer {
			n++
		}
	}
	return float64(n) / float64(len(ex))
}
