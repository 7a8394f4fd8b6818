package experiment

import (
	"context"

	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// engine is what trains the plan's runs: Options.Engine, or the Go engine. Arms, sweep points and learning-rate
// trials all go through it, so a plan runs the same through either engine; each run directory records its
// engine (train.EngineOf), and the summary, verdicts and report read runs without asking which trained them.
func (o *Options) engine() train.Engine {
	if o.Engine == nil {
		return train.GoEngine{}
	}
	return o.Engine
}

// throughput is the training tokens/s a budget is sized from: the engine's own probe where it has one (the
// PyTorch engine on its device, train.ThroughputProber), else the Go engine's CPU benchmark of the base model
// (four steps, after which a cancelled ctx stops the sizing).
func (o *Options) throughput(ctx context.Context, base recipe.Config) (float64, error) {
	if p, ok := o.engine().(train.ThroughputProber); ok {
		tps, err := p.Throughput(ctx, base.Model.Config, base.Train.BatchSize, base.Train.Precision)
		if err != nil && ctx.Err() != nil {
			return 0, probeStopped(ctx, "the throughput probe")
		}
		return tps, err
	}
	res, err := train.Benchmark(base.Model.Config, train.BenchOptions{Batch: base.Train.BatchSize, Steps: 3, Warmup: 1, Precision: base.Train.Precision})
	if err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, probeStopped(ctx, "the throughput probe")
	}
	return res.FwdBwdTokensPerS(), nil
}

// probeEngine is the engine the overhead probe trains its one run with: the plan's own (so that a run's fixed
// cost is measured where the runs will pay it: the PyTorch engine's interpreter start, its inputs and its
// checkpoints on its device), alone in its process (a batch would wait for runs that never come).
func (o *Options) probeEngine() train.Engine {
	if t, ok := o.engine().(train.TorchEngine); ok {
		t.Batch = nil
		return t
	}
	return o.engine()
}
