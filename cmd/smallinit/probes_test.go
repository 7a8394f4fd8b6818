package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/probes"
)

// TestProbesMake: probes make is deterministic per seed, keeps test prompts out of the training text, and its
// test files score with eval-tasks, reasoning and memorisation accuracies apart.
func TestProbesMake(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	for _, run := range []struct {
		dir  string
		seed uint64
	}{{a, 1}, {b, 1}, {c, 2}} {
		cmd := &probesMakeCmd{Out: run.dir, Seed: run.seed, N: 200, Test: 30, Table: 40, Digits: 3}
		if err := cmd.run(io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"train.txt", "train.jsonl", "test.jsonl", "recall.jsonl", "probes.json"} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		z, _ := os.ReadFile(filepath.Join(c, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with seed 1", f)
		}
		if f != "probes.json" && bytes.Equal(x, z) {
			t.Errorf("%s is the same for seeds 1 and 2", f)
		}
	}
	train := map[string]bool{}
	text, _ := os.ReadFile(filepath.Join(a, "train.txt"))
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		prompt, _, ok := strings.Cut(line, " =")
		if !ok {
			t.Fatalf("training line %q has no prompt", line)
		}
		train[prompt+" ="] = true
	}
	test := readProbes(t, filepath.Join(a, "test.jsonl"))
	for _, p := range test {
		if train[p.Prompt] {
			t.Errorf("test prompt %q is in train.txt", p.Prompt)
		}
	}
	for _, p := range readProbes(t, filepath.Join(a, "recall.jsonl")) {
		if !train[p.Prompt] {
			t.Errorf("recall prompt %q is not in train.txt", p.Prompt)
		}
	}
	if len(test) != 30*len(probes.Kinds()) {
		t.Errorf("%d test probes", len(test))
	}

	dir := writeTinyModel(t, false)
	cmd := &evalTasksCmd{Model: dir, Batch: 2, Limit: 40, MaxNewTokens: 16, Task: []string{
		"probe_test=" + filepath.Join(a, "test.jsonl"), "probe_recall=" + filepath.Join(a, "recall.jsonl")}}
	rep, err := cmd.run(context.Background(), io.Discard, io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Tasks {
		for _, name := range []string{"acc", "acc_reasoning", "acc_memorisation", "gold_loss_per_token_reasoning", "gold_loss_per_token_memorisation"} {
			if _, ok := r.Metrics.Get(name); !ok {
				t.Errorf("%s: no %s", r.Task, name)
			}
		}
	}
}

func readProbes(t *testing.T, path string) []eval.Probe {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []eval.Probe
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p eval.Probe
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, p)
	}
	return out
}

// TestProbesMakeKinds: --kinds and --digits make an arithmetic-only set whose records carry their chance
// level, recorded in probes.json; bad values are errors.
func TestProbesMakeKinds(t *testing.T) {
	dir := t.TempDir()
	cmd := &probesMakeCmd{Out: dir, Seed: 3, N: 300, Test: 20, Table: 40, Kinds: []string{"add"}, Digits: 2}
	var out bytes.Buffer
	if err := cmd.run(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(add; 2-digit operands)") {
		t.Errorf("summary %q", out.String())
	}
	var man probes.Manifest
	b, _ := os.ReadFile(filepath.Join(dir, "probes.json"))
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Kinds) != 1 || man.Kinds[0] != "add" || man.AddDigits != 2 || man.Counts["train"] != 300 || man.Counts["test"] != 20 {
		t.Errorf("probes.json %+v", man)
	}
	for _, f := range []string{"train.jsonl", "test.jsonl", "recall.jsonl"} {
		for _, p := range readProbes(t, filepath.Join(dir, f)) {
			// "add: a0 a1 + b0 b1 =" → "s0 s1 s2", chance 1/10 (two one-digit operands) or 1/90.
			if p.Kind != "add" || len(strings.Fields(p.Prompt)) != 7 || len(strings.Fields(p.Answer)) != 3 || (p.Chance != 0.1 && p.Chance != 1.0/90) {
				t.Fatalf("%s: %+v", f, p)
			}
		}
	}
	for _, bad := range []*probesMakeCmd{
		{Out: t.TempDir(), N: 10, Test: 5, Table: 5, Kinds: []string{"mul"}, Digits: 3},
		{Out: t.TempDir(), N: 10, Test: 5, Table: 5, Digits: 0},
		{Out: t.TempDir(), N: 10, Test: 5, Table: 5, Digits: 10},
	} {
		if err := bad.run(io.Discard); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
