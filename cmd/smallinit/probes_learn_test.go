package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// The arithmetic probe run of TestProbeArithmeticLearnt (and of the README's Probes section).
const (
	arithDigits  = 2     // operand digits
	arithTrain   = 20000 // training probes
	arithTest    = 200   // held-out test probes
	arithSteps   = 1000  // training steps of arithBatch windows of two probes each
	arithBatch   = 16
	arithSigmas  = 5 // the accuracy must exceed chance by this many binomial standard errors
	arithThreads = 2
)

// TestProbeArithmeticLearnt is the evaluation issue's proof that a tiny model learns the arithmetic probe
// quickly: the README's chain (Probes), in process and from fixed seeds — probes make --kinds add --digits 2,
// data prepare with a 512-token BPE, a run from scratch, eval-tasks on the 200 held-out test prompts, none of
// which is in the training text. The model is the tiny preset (width 128, FFN 384) with 2 layers and 8 heads
// of 16, γ = 0.5, and a context of two probes, so that every training window holds two whole probes from
// their first token, as eval-tasks presents a prompt. Exact match must exceed the prompts' chance level (the
// mean over them of the share of the most common sum for operands of their lengths, 1/90 for most) by 5
// binomial standard errors of chance over the 200 prompts: 0.0111 + 5·sqrt(0.0111·0.9889/200) = 0.048.
// Measured with these seeds: 1.00 after 1000 steps (README, Probes, has the other seeds and settings tried).
func TestProbeArithmeticLearnt(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model from scratch for 1000 steps, about 45 s of CPU on 2 cores: run without -short")
	}
	dir := t.TempDir()
	probes := filepath.Join(dir, "probes")
	mk := &probesMakeCmd{Out: probes, Seed: 1, N: arithTrain, Test: arithTest, Table: 256, Kinds: []string{"add"}, Digits: arithDigits}
	if err := mk.run(io.Discard); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	prep := &dataPrepareCmd{In: []string{filepath.Join(probes, "train.txt")}, Out: dataDir, Vocab: intp(512), ValFraction: 0.01,
		TextColumn: "text", DocSep: "line", SampleMB: ptr(50)}
	if err := prep.run(context.Background(), io.Discard, io.Discard, false); err != nil {
		t.Fatal(err)
	}
	// Every probe of the fixed-width format is the same number of tokens (with its <|endoftext|>), so a context
	// of two probes makes training window k start at probe 2k.
	st, err := data.ReadStats(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	perProbe := st.Train.Tokens / int64(st.Train.Documents)
	if perProbe*int64(st.Train.Documents) != st.Train.Tokens || perProbe*int64(st.Val.Documents) != st.Val.Tokens {
		t.Fatalf("probes are not all the same length: %d training probes in %d tokens, %d validation probes in %d",
			st.Train.Documents, st.Train.Tokens, st.Val.Documents, st.Val.Tokens)
	}
	c, err := train.Load("", []string{
		"seed = 1",
		"model.preset = tiny",
		"model.num_hidden_layers = 2",
		"model.num_attention_heads = 8",
		"model.vocab_size = 512",
		fmt.Sprintf("model.max_position_embeddings = %d", 2*perProbe),
		"init.gamma = 0.5",
		fmt.Sprintf("train.batch_size = %d", arithBatch),
		fmt.Sprintf("train.steps = %d", arithSteps),
		fmt.Sprintf("train.threads = %d", arithThreads),
		"train.eval_interval = 0",
		"train.checkpoint_interval = 0",
		"data.train = " + filepath.Join(dataDir, "train.tok"),
		"data.val = " + filepath.Join(dataDir, "val.tok"),
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := train.Start(context.Background(), c, filepath.Join(dir, "run"), train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	trainTime := time.Since(start)

	ev := &evalTasksCmd{Model: filepath.Join(dir, "run", rundir.FinalDir), Batch: 8, MaxNewTokens: 16,
		Task: []string{"probe_test=" + filepath.Join(probes, "test.jsonl")}}
	rep, err := ev.run(context.Background(), io.Discard, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	ms := rep.Tasks[0].Metrics
	acc, ok := ms.Get("acc_add")
	chance, ok2 := ms.Get("chance_add")
	if !ok || !ok2 || acc.N != arithTest || chance.N != arithTest {
		t.Fatalf("eval-tasks reported %v", ms)
	}
	p0 := chance.Value
	bar := p0 + arithSigmas*eval.BinomialStdErr(p0, acc.N)
	t.Logf("%d steps of %d×%d tokens in %.1fs (train loss %.4f); exact match on %d held-out sums %.3f ± %.3f; chance %.4f, bar %.4f",
		res.Steps, arithBatch, 2*perProbe, trainTime.Seconds(), res.Loss, acc.N, acc.Value, acc.StdErr, p0, bar)
	if acc.Value <= bar {
		t.Errorf("exact match %.3f on %d held-out sums is not above chance %.4f by %d standard errors (%.4f)",
			acc.Value, acc.N, p0, arithSigmas, bar)
	}
}
