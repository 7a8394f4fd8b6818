package experiment

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// probingEngine is an engine with its own throughput probe (as train.TorchEngine on its device): it records
// what it was asked to time and answers tps, or err. It trains through the Go engine under its own name
// ("probing" unless name is set) and device, recording the run directories it trained.
type probingEngine struct {
	tps          float64
	err          error
	asked        []int // the batch of each probe
	name, device string
	mu           sync.Mutex
	trained      []string
}

func (e *probingEngine) Name() string { return cmp.Or(e.name, "probing") }

func (e *probingEngine) TrainsOn() string { return cmp.Or(e.device, "probe: Test Device") }

func (e *probingEngine) StartOrResume(ctx context.Context, c recipe.Config, dir string, o train.Options) (train.Result, error) {
	e.mu.Lock()
	e.trained = append(e.trained, dir)
	e.mu.Unlock()
	return train.GoEngine{}.StartOrResume(ctx, c, dir, o)
}

func (e *probingEngine) Throughput(_ context.Context, c arch.Config, batch int, _ string) (float64, error) {
	e.asked = append(e.asked, batch)
	return e.tps, e.err
}

const probePlan = `name = "probe"
seeds = [0]

[budget]
minutes = 10
efficiency = 0.85
min_steps = 4

[data]
corpus = "embedded"
vocab = 1024

[base]
"model.preset" = "tiny"
"model.hidden_size" = 64
"model.num_hidden_layers" = 2
"model.max_position_embeddings" = 32
"train.batch_size" = 4
"train.threads" = 1

[[group]]
name = "runs"

[[group.arm]]
name = "gamma1"
set = { "init.gamma" = 1.0 }
`

// TestBudgetProbesTheEngine: a budget is sized from the throughput of the engine that trains the runs when it
// has a probe of its own (the PyTorch engine on its device), not from the Go engine's CPU benchmark, and the
// overhead probe's run is trained by that engine; the probe's failure is the sizing's error.
func TestBudgetProbesTheEngine(t *testing.T) {
	p, err := Parse([]byte(probePlan))
	if err != nil {
		t.Fatal(err)
	}
	eng := &probingEngine{tps: 2.5e7}
	d, err := Describe(p, Options{Out: t.TempDir(), Budget: 10 * time.Minute, Engine: eng}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Estimate == nil || d.Estimate.TokensPerS != eng.tps {
		t.Fatalf("estimate %+v: want the engine's probe, %g tokens/s", d.Estimate, eng.tps)
	}
	if len(eng.asked) != 1 || eng.asked[0] != 4 {
		t.Errorf("the engine was asked to time batches %v, want [4] (the base recipe's)", eng.asked)
	}
	if len(eng.trained) != 1 || !strings.Contains(eng.trained[0], "smallinit-overhead-") || !(d.Estimate.Overhead > 0) {
		t.Errorf("the engine trained %q (overhead %s); want the overhead probe's one run, not the Go trainer's", eng.trained, d.Estimate.Overhead)
	}
	bad := &probingEngine{err: errors.New("no GPU today")}
	if _, err := Describe(p, Options{Out: t.TempDir(), Budget: 10 * time.Minute, Engine: bad}, 0); err == nil || !strings.Contains(err.Error(), "no GPU today") {
		t.Errorf("a failing probe: %v, want its error", err)
	}
}
