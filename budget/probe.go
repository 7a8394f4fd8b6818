package budget

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// ScoreBatch is the batch a final model is loaded at for scoring (a study's validation scoring, the LR sweep's
// selection scoring and the scoring probe, which times scoring at this batch): windows scored per forward pass.
const ScoreBatch = 16

// OverheadProbeSteps are the steps of the overhead probe's run: enough that every per-steps key of a plan
// (evaluations, diagnostics, checkpoints, warmup, at most a division by 20) gets an interval of at least one
// step, so the probe run evaluates, diagnoses and checkpoints as often as a run of any length of the plan does.
const OverheadProbeSteps = 20

// ScoreProbeWindows are the windows the scoring probe times: two batches of ScoreBatch, after one untimed batch
// that warms the model's buffers, so the rate is the steady one a whole split is scored at.
const ScoreProbeWindows = 2 * ScoreBatch

// Throughput is the throughput probe: the training tokens/s of the base recipe base that eng trains at, by
// eng's own probe where it has one (the PyTorch engine on its device, train.ThroughputProber), else by the Go
// engine's CPU benchmark of the base model (four steps, after which a cancelled ctx stops the sizing).
func Throughput(ctx context.Context, eng train.Engine, base recipe.Config) (float64, error) {
	if p, ok := eng.(train.ThroughputProber); ok {
		tps, err := p.Throughput(ctx, base.Model.Config, base.Train.BatchSize, base.Train.Precision)
		if err != nil && ctx.Err() != nil {
			return 0, stopped(ctx, "the throughput probe")
		}
		return tps, err
	}
	res, err := train.Benchmark(base.Model.Config, train.BenchOptions{Batch: base.Train.BatchSize, Steps: 3, Warmup: 1, Precision: base.Train.Precision})
	if err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, stopped(ctx, "the throughput probe")
	}
	return res.FwdBwdTokensPerS(), nil
}

// ProbeEngine is the engine the overhead probe trains its one run with, given the plan's engine eng: eng
// itself (so that a run's fixed cost is measured where the runs will pay it: the PyTorch engine's interpreter
// start, its inputs and its checkpoints on its device), alone in its process (a batch would wait for runs that
// never come).
func ProbeEngine(eng train.Engine) train.Engine {
	if t, ok := eng.(train.TorchEngine); ok {
		t.Batch = nil
		return t
	}
	return eng
}

// OverheadProbe measures the two costs of a run of a plan's base recipe that its training steps do not: the
// fixed cost and the speed of scoring its final model (Run).
type OverheadProbe struct {
	Plan string // the plan's name, for errors
	// Sets are the plan's base recipe at OverheadProbeSteps steps; the probe adds its own data files.
	Sets   []override.Set
	Engine train.Engine // ProbeEngine of the plan's engine
	// TokensPerS is the same engine's throughput probe and Efficiency the plan's, at which the probe run's
	// steps are charged and taken off its wall time.
	TokensPerS, Efficiency float64
}

// Run returns the fixed cost of a run (first result) and the forward tokens/s of scoring its final model.
//
// The fixed cost is one real run of OverheadProbeSteps steps (trained by Engine, the plan's engine on its
// device: the plan's diagnostics, evaluations and checkpoints, the step-0 and final weights, and for the
// PyTorch engine its process's start) on random tokens in a temporary directory, less those steps at
// TokensPerS and Efficiency. The per-steps keys make the evaluations, diagnostics and checkpoints of a run a
// count, not a rate, so this cost does not grow with the steps; at a few dozen steps a run it is most of the
// wall time.
//
// The scoring speed is that run's final model, loaded at ScoreBatch (scoring is the Go engine's whatever
// trained the run), scoring ScoreProbeWindows windows by eval.ScoreTokens (the validation and selection
// scoring's one function), timed. A forward-only pass is not a fixed fraction of forward+backward: on a small
// model the loss, the batch's memory traffic and the pool's hand-offs weigh more than the FLOPs say, so the
// estimate charges scoring at this measured rate. (docs/definitions.md has no claim on either: they are the
// estimate's, not results.) A cancelled ctx stops either probe with train.ErrInterrupted.
func (op OverheadProbe) Run(ctx context.Context) (time.Duration, float64, error) {
	dir, err := os.MkdirTemp("", "smallinit-overhead-")
	if err != nil {
		return 0, 0, fmt.Errorf("overhead probe: %w", err)
	}
	defer os.RemoveAll(dir)
	c, err := train.LoadSets("", op.Sets)
	if err != nil {
		return 0, 0, fmt.Errorf("overhead probe: plan %s: base recipe: %w", op.Plan, err)
	}
	T, V := c.Model.SeqLen, c.Model.Vocab
	// Random tokens: enough training tokens for the probe's steps once over, and a validation file as long as
	// the evaluations read (train.eval_windows windows, at least one); the scoring probe's windows apart.
	rng := rand.New(rand.NewPCG(7, 11))
	tokens := func(n int) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(rng.IntN(V))
		}
		return ids
	}
	trainPath, valPath := filepath.Join(dir, data.TrainFile), filepath.Join(dir, data.ValFile)
	if err := data.WriteTokens(trainPath, tokens(OverheadProbeSteps*c.Train.BatchSize*T+T+1)); err != nil {
		return 0, 0, fmt.Errorf("overhead probe: %w", err)
	}
	if err := data.WriteTokens(valPath, tokens(max(c.Train.EvalWindows, 1)*T+1)); err != nil {
		return 0, 0, fmt.Errorf("overhead probe: %w", err)
	}
	sets := append(op.Sets[:len(op.Sets):len(op.Sets)], override.Set{Key: recipe.KeyDataTrain, Value: trainPath}, override.Set{Key: recipe.KeyDataVal, Value: valPath})
	if c, err = train.LoadSets("", sets); err != nil {
		return 0, 0, fmt.Errorf("overhead probe: %w", err)
	}
	eng := op.Engine
	t0 := time.Now()
	if _, err := eng.StartOrResume(ctx, c, filepath.Join(dir, "run"), train.Options{Diagnostics: diag.Training}); err != nil && ctx.Err() != nil {
		return 0, 0, stopped(ctx, "the overhead probe's run")
	} else if err != nil {
		return 0, 0, fmt.Errorf("overhead probe (engine %s on %s): %w", eng.Name(), eng.TrainsOn(), err)
	}
	wall := time.Since(t0)
	steps := time.Duration(float64(OverheadProbeSteps*c.Train.BatchSize*T) / (op.TokensPerS * op.Efficiency) * float64(time.Second))
	scoreTPS, err := probeScoring(ctx, filepath.Join(dir, "run"), tokens((ScoreBatch+ScoreProbeWindows)*T+1))
	if err != nil && ctx.Err() != nil {
		return 0, 0, stopped(ctx, "the scoring probe")
	} else if err != nil {
		return 0, 0, fmt.Errorf("scoring probe: %w", err)
	}
	return max(wall-steps, 0), scoreTPS, nil
}

// stopped is the error of a sizing probe (what) stopped by ctx (SIGTERM): the probe's run was in a temporary
// directory, now removed, and nothing of the sizing is written, so the same command probes again.
func stopped(ctx context.Context, what string) error {
	return fmt.Errorf("%w during the sizing, in %s: nothing of the sizing written (the same command probes again): %w",
		train.ErrInterrupted, what, context.Cause(ctx))
}

// probeScoring loads the final model of the run in dir at ScoreBatch and returns the forward tokens/s of
// eval.ScoreTokens on ScoreProbeWindows windows of toks (after one untimed batch); toks holds
// ScoreBatch+ScoreProbeWindows windows and one token.
func probeScoring(ctx context.Context, dir string, toks []int32) (float64, error) {
	pool := kernel.NewPool(0)
	defer pool.Close()
	run, err := train.OpenRun(dir)
	if err != nil {
		return 0, err
	}
	m, err := run.FinalModel(ScoreBatch, pool)
	if err != nil {
		return 0, err
	}
	T := m.Config.SeqLen
	if _, _, err := eval.ScoreTokens(ctx, m, toks[:ScoreBatch*T+1], nil); err != nil {
		return 0, err
	}
	timed := toks[ScoreBatch*T : (ScoreBatch+ScoreProbeWindows)*T+1]
	t0 := time.Now()
	_, n, err := eval.ScoreTokens(ctx, m, timed, nil)
	if err != nil {
		return 0, err
	}
	return float64(n) / max(time.Since(t0).Seconds(), 1e-9), nil
}
