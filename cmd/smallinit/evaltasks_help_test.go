package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/smallinit/smallinit/eval"
)

// TestEvalTasksHelpNamesEveryKindAndItsCost: `eval-tasks --help` lists every task name of eval.KindNames and,
// for each kind, what a record costs and what "scored" means (generative kinds: up to --max-new-tokens).
func TestEvalTasksHelpNamesEveryKindAndItsCost(t *testing.T) {
	var c cli
	var out bytes.Buffer
	parser, err := kong.New(&c, kong.Name("smallinit"), vars(), kong.Writers(&out, &out), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	parser.Parse([]string{"eval-tasks", "--help"})
	help := strings.Join(strings.Fields(out.String()), " ") // undo the wrapping
	for _, n := range eval.KindNames() {
		if !strings.Contains(help, n) {
			t.Errorf("help lacks task name %s", n)
		}
	}
	for _, w := range []string{"gsm8k (gsm8k_cot): the gold answer scored teacher-forced, then a greedy completion of up to --max-new-tokens tokens",
		"hellaswag: each choice's continuation scored by its log-likelihood", "a record costs up to --max-new-tokens decoding steps"} {
		if !strings.Contains(help, w) {
			t.Errorf("help lacks %q:\n%s", w, out.String())
		}
	}
}

// TestEvalTasksPipedProgress: with stderr not a terminal, eval-tasks prints plain progress lines in records
// (with a rate and the time left) while a task runs, instead of nothing until it ends.
func TestEvalTasksPipedProgress(t *testing.T) {
	dir := writeTinyModel(t, false)
	cmd := &evalTasksCmd{Model: dir, Batch: 4, Limit: 12, MaxNewTokens: 4, progressEvery: time.Nanosecond,
		Task: []string{"gsm8k=" + filepath.Join(evalSamples, "gsm8k_train_sample20.jsonl")}}
	var out, log bytes.Buffer
	if _, err := cmd.run(context.Background(), &out, &log, false); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"gsm8k: 4 of 12 records (33%), ", "records/s", "s left", "gsm8k: 12 of 12 records (100%)"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("progress lacks %q:\n%s", w, log.String())
		}
	}
}
