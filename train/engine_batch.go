package train

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/smallinit/smallinit/recipe"
)

// TorchBatcher has the PyTorch engine train the new runs of one shape that start together (a study's --jobs N
// runs of a group) in one process, `python -m smallinit_torch train-batch`: one batched model whose every
// parameter has a leading run axis, one step for all, so that a GPU launches a step's kernels once for N
// runs rather than N times (python/smallinit_torch/batch.py). Each run keeps its directory, its lock (held
// here, as for a solo run) and its losses (its solo run's within float32 rounding). Runs join a batch when
// their configs differ only in what the batched trainer keeps per run (batchKey); the first run of a batch
// waits Wait for the others, and a batch starts when it has Size runs. A resumed run trains alone.
type TorchBatcher struct {
	Size int           // runs per process at most (≥ 2)
	Wait time.Duration // how long a batch waits for runs after its first (0: DefaultTorchBatchWait)

	mu   sync.Mutex
	open map[string]*torchBatch // batches gathering runs, by batchKey
}

// DefaultTorchBatchWait is how long a batch gathers runs after its first: the runs a study starts at once
// arrive within milliseconds, a run's preparation (its step-0 weights drawn) within a second or two.
const DefaultTorchBatchWait = 5 * time.Second

// NewTorchBatcher gathers up to size runs a process.
func NewTorchBatcher(size int) *TorchBatcher { return &TorchBatcher{Size: size} }

// torchBatch is one train-batch process's runs: each member's arguments, directory, threads, context and log.
type torchBatch struct {
	members []batchMember
	started bool
	done    chan struct{}
	errs    []error
}

type batchMember struct {
	args    []string // --run MODEL CONFIG OUT
	dir     string
	threads int
	ctx     context.Context
	log     io.Writer
}

// batchKey is what the runs of one batch share: c without the keys each run of a batch keeps as its own
// (seed, [init], schedule.lr, optimizer.weight_decay, train.grad_clip) and without train.threads (the
// process's, the sum of its runs').
func batchKey(c recipe.Config) (string, error) {
	c.Seed, c.Init = 0, recipe.Init{}
	c.Schedule.PeakLR, c.Optimizer.WeightDecay, c.Train.GradClip, c.Train.Threads = 0, 0, 0, 0
	b, err := c.Encode()
	return string(b), err
}

// join adds the run in dir (its trainer arguments args, --run MODEL CONFIG OUT) to the batch of its key and
// waits for that batch's process to end; the error is the run's own.
func (tb *TorchBatcher) join(ctx context.Context, e TorchEngine, c recipe.Config, args []string, dir string, log io.Writer) error {
	key, err := batchKey(c)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	tb.mu.Lock()
	if tb.open == nil {
		tb.open = map[string]*torchBatch{}
	}
	b := tb.open[key]
	if b == nil {
		b = &torchBatch{done: make(chan struct{})}
		tb.open[key] = b
		wait := tb.Wait
		if wait <= 0 {
			wait = DefaultTorchBatchWait
		}
		time.AfterFunc(wait, func() { tb.launch(e, key, b) })
	}
	i := len(b.members)
	b.members = append(b.members, batchMember{args: args, dir: dir, threads: max(c.Train.Threads, 1), ctx: ctx, log: log})
	full := len(b.members) >= tb.Size
	tb.mu.Unlock()
	if full {
		go tb.launch(e, key, b)
	}
	<-b.done
	return b.errs[i]
}

// launch starts batch b's process (once: when it is full or its wait is over) and records each run's error.
func (tb *TorchBatcher) launch(e TorchEngine, key string, b *torchBatch) {
	tb.mu.Lock()
	if b.started {
		tb.mu.Unlock()
		return
	}
	b.started = true
	delete(tb.open, key)
	ms := b.members
	tb.mu.Unlock()
	defer close(b.done)
	// The process stops (SIGTERM, a checkpoint of every run) when any run's context ends: the runs of a study
	// share one.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	threads, dirs, logs := 0, make([]string, len(ms)), make([]io.Writer, 0, len(ms))
	for i, m := range ms {
		threads += m.threads
		dirs[i] = m.dir
		if m.log != nil {
			logs = append(logs, m.log)
		}
		go func(mctx context.Context) {
			select {
			case <-mctx.Done():
				cancel()
			case <-b.done:
			}
		}(m.ctx)
	}
	args := e.flags("train-batch")
	args = append(args, "--threads", strconv.Itoa(threads))
	for _, m := range ms {
		args = append(args, m.args...)
	}
	b.errs = e.trainAll(ctx, args, dirs, io.MultiWriter(logs...))
}
