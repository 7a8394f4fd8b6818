package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/sweep"
)

// microSweepGrid writes random tokens (vocab 64, PCG seeds 1 and 2) and a grid of 4 micro runs (γ × seed, a
// 2-layer d=32 model, 3 steps) into dir and returns the grid's path.
func microSweepGrid(t *testing.T, dir string) string {
	t.Helper()
	for i, name := range []string{"train.tok", "val.tok"} {
		rng := rand.New(rand.NewPCG(uint64(i+1), 3))
		ids := make([]int32, 2000/(3*i+1))
		for j := range ids {
			ids[j] = int32(rng.IntN(64))
		}
		if err := data.WriteTokens(filepath.Join(dir, name), ids); err != nil {
			t.Fatal(err)
		}
	}
	grid := fmt.Sprintf(`[base]
model.vocab_size = 64
model.hidden_size = 32
model.num_hidden_layers = 2
model.num_attention_heads = 2
model.max_position_embeddings = 16
train.batch_size = 2
train.steps = 3
train.log_interval = 1
train.eval_interval = 0
train.eval_windows = 4
train.checkpoint_interval = 2
data.train = %q
data.val = %q

[axes]
"init.gamma" = [0.5, 1]
seed = [0, 1]
`, filepath.Join(dir, "train.tok"), filepath.Join(dir, "val.tok"))
	path := filepath.Join(dir, "grid.toml")
	if err := os.WriteFile(path, []byte(grid), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSweepCommandsParse checks the kong tags of sweep and fit: the flags parse into the fields.
func TestSweepCommandsParse(t *testing.T) {
	dir := t.TempDir()
	grid := microSweepGrid(t, dir)
	var c struct {
		Sweep sweepCmd `cmd:""`
		Fit   fitCmd   `cmd:""`
	}
	parser, err := kong.New(&c, kong.Name("smallinit"), vars(), kong.Exit(func(code int) { t.Fatalf("kong exit %d", code) }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{"sweep", "run", grid, "--out", filepath.Join(dir, "s"), "--index", "3", "--jobs", "2", "--stale-after", "1m"}); err != nil {
		t.Fatal(err)
	}
	if r := c.Sweep.Run; r.Index != 3 || r.Jobs != 2 || r.StaleAfter.Minutes() != 1 || r.Grid != grid {
		t.Errorf("sweep run parsed as %+v", r)
	}
	if _, err := parser.Parse([]string{"sweep", "run", grid, "--out", filepath.Join(dir, "s")}); err != nil || c.Sweep.Run.Index != -1 || c.Sweep.Run.Jobs != jobsFlag(sweep.AutoJobs) {
		t.Errorf("sweep run defaults: index %d jobs %d (%v)", c.Sweep.Run.Index, c.Sweep.Run.Jobs, err)
	}
	for _, bad := range []string{"0", "two"} {
		if _, err := parser.Parse([]string{"sweep", "run", grid, "--out", filepath.Join(dir, "s"), "--jobs", bad}); err == nil || !strings.Contains(err.Error(), "want auto or a count") {
			t.Errorf("--jobs %s: error %v, want one naming the accepted values", bad, err)
		}
	}
	if _, err := parser.Parse([]string{"fit", grid, "--baseline", "init.gamma=0.5", "--treated", "init.gamma=1", "--bootstrap", "10", "--json"}); err != nil {
		t.Fatal(err)
	}
	if f := c.Fit; f.Baseline != "init.gamma=0.5" || f.Treated != "init.gamma=1" || f.Bootstrap != 10 || !f.JSON || f.SizeKey != "N" || f.LossKey != "val_loss" || len(f.SeedKey) != 1 {
		t.Errorf("fit parsed as %+v", f)
	}
}

// TestSweepCommandsEndToEnd runs plan, run (all runs, then an --index invocation that finds its run done),
// status and collect on the micro grid, and fit on the collected table, which has one size and is refused.
func TestSweepCommandsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	grid := microSweepGrid(t, dir)
	out := filepath.Join(dir, "sweep")
	var b bytes.Buffer
	if err := (&sweepPlanCmd{Grid: grid}).run(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "4 runs (2 init.gamma × 2 seed)") || !strings.Contains(b.String(), "003-1_1-") {
		t.Errorf("plan:\n%s", b.String())
	}
	b.Reset()
	if err := (&sweepPlanCmd{Grid: grid, Count: true}).run(&b); err != nil || b.String() != "4\n" {
		t.Errorf("plan --count: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := (&sweepRunCmd{Grid: grid, Out: out, Jobs: 2, Index: -1}).run(context.Background(), &b, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "finished") != 4 {
		t.Errorf("run:\n%s", b.String())
	}
	b.Reset()
	if err := (&sweepRunCmd{Grid: grid, Out: out, Index: 2}).run(context.Background(), &b, io.Discard); err != nil || !strings.Contains(b.String(), "already done") {
		t.Errorf("run --index 2 again: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := (&sweepStatusCmd{Dir: out}).run(&b); err != nil || !strings.Contains(b.String(), "4 runs: 4 done, 0 running, 0 failed, 0 pending") {
		t.Errorf("status: %v\n%s", err, b.String())
	}
	b.Reset()
	if err := (&sweepCollectCmd{Dir: out, Out: filepath.Join(dir, "table.csv")}).run(&b); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"table.csv", "table.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("collect --out table.csv: %v", err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "table.csv"))
	if !strings.HasPrefix(string(csv), "index,id,state,init.gamma,seed,N,n_params,steps,tokens,train_loss,val_loss,best_val_loss,tokens_per_s\n") || strings.Count(string(csv), ",done,") != 4 {
		t.Errorf("table.csv:\n%s", csv)
	}
	for _, table := range []string{"table.csv", "table.json"} {
		b.Reset()
		err := (&fitCmd{Table: filepath.Join(dir, table), Baseline: "init.gamma=0.5", Treated: "init.gamma=1", SizeKey: "N", DataKey: "tokens", LossKey: "val_loss", SeedKey: []string{"seed"}}).run(&b)
		if err == nil || !strings.Contains(err.Error(), "1 distinct sizes, need at least 4") {
			t.Errorf("fit %s on one size: %v\n%s", table, err, b.String())
		}
	}
}
