package experiment

import "github.com/smallinit/smallinit/train"

// engine is what trains the plan's runs: Options.Engine, or the Go engine. Arms, sweep points and learning-rate
// trials all go through it, so a plan runs the same through either engine; each run directory records its
// engine (train.EngineOf), and the summary, verdicts and report read runs without asking which trained them.
func (o *Options) engine() train.Engine {
	if o.Engine == nil {
		return train.GoEngine{}
	}
	return o.Engine
}
