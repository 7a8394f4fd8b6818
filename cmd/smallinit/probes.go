package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/model"
)

type probesCmd struct {
	Make probesMakeCmd `cmd:"" help:"Write reasoning and memorisation probes: training text and held-out and recall test sets."`
}

type probesMakeCmd struct {
	Out    string   `required:"" type:"path" help:"Directory to write train.txt, train.jsonl, test.jsonl, recall.jsonl and probes.json."`
	Seed   uint64   `default:"0" help:"Seed; the same seed and sizes give the same files."`
	N      int      `name:"n" default:"2000" help:"Training examples per kind."`
	Test   int      `default:"200" help:"Test (and recall) probes per kind."`
	Table  int      `default:"256" help:"Distinct prompts in each memorisation kind's table (each occurs about n/table times in training)."`
	Kinds  []string `placeholder:"KIND" help:"Kinds to make (default: all): add, mod, hop, brackets, copy, reverse and their memorisation twins add_mem, mod_mem, ...; e.g. --kinds add for an arithmetic-only set."`
	Digits int      `default:"3" help:"Digits of an addition operand (1 to 9; operands and sums are zero-padded and written least-significant digit first); fewer digits are learnt sooner."`
	Task   string   `enum:",anchor,anchor-mix" default:"" help:"Instead of the text probes, an anchor-function task (as smallinit anchor make): anchor (Zhang et al. 2024, --n training sequences) or anchor-mix (Yao et al. 2025, --n sequences per anchor combination)."`
}

// probesManifest is probes.json: how the files were made and what they hold.
type probesManifest struct {
	Seed      uint64            `json:"seed"`
	Train     int               `json:"train_per_kind"`
	Test      int               `json:"test_per_kind"`
	Table     int               `json:"table"`
	AddDigits int               `json:"add_digits"`
	Kinds     []string          `json:"kinds"`
	Files     map[string]string `json:"files"`
	Counts    map[string]int    `json:"counts"`
}

func (cmd *probesMakeCmd) Run() error {
	if cmd.Task != "" {
		return (&anchorMakeCmd{Task: cmd.Task, Out: cmd.Out, Seed: cmd.Seed, Examples: cmd.N, PerCombo: cmd.N}).Run()
	}
	return cmd.run(os.Stdout)
}

func (cmd *probesMakeCmd) run(stdout io.Writer) error {
	if cmd.Digits == 0 {
		return fmt.Errorf("--digits 0: want 1 to 9")
	}
	ps, err := eval.MakeProbes(eval.ProbeConfig{Seed: cmd.Seed, Train: cmd.N, Test: cmd.Test, Table: cmd.Table,
		Kinds: cmd.Kinds, AddDigits: cmd.Digits})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cmd.Out, 0o755); err != nil {
		return fmt.Errorf("probes: %w", err)
	}
	var text bytes.Buffer
	for _, p := range ps.Train {
		text.WriteString(p.Text())
		text.WriteByte('\n')
	}
	files := map[string][]byte{"train.txt": text.Bytes()}
	for name, set := range map[string][]eval.Probe{"train.jsonl": ps.Train, "test.jsonl": ps.Test, "recall.jsonl": ps.Recall} {
		if files[name], err = eval.ProbeRecords(set); err != nil {
			return err
		}
	}
	man := probesManifest{Seed: cmd.Seed, Train: cmd.N, Test: cmd.Test, Table: cmd.Table, AddDigits: cmd.Digits, Kinds: ps.Kinds,
		Counts: map[string]int{"train": len(ps.Train), "test": len(ps.Test), "recall": len(ps.Recall)},
		Files: map[string]string{
			"train.txt":    "training text, one probe per line (prompt, space, answer); mix it into a training corpus",
			"train.jsonl":  "the same probes as records {prompt, answer, kind, chance}; addition answers are written least-significant digit first, chance is what the best guess that does not do the task scores",
			"test.jsonl":   "held-out prompts that occur nowhere in training: reasoning kinds measure generalisation, memorisation kinds are at chance by design",
			"recall.jsonl": "prompts taken from training: memorisation kinds measure memorisation, reasoning kinds give the training accuracy",
		}}
	mb, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	files["probes.json"] = append(mb, '\n')
	for _, name := range []string{"train.txt", "train.jsonl", "test.jsonl", "recall.jsonl", "probes.json"} {
		if err := model.WriteFileAtomic(filepath.Join(cmd.Out, name), files[name]); err != nil {
			return err
		}
	}
	kinds := strings.Join(man.Kinds, ", ")
	if slices.Contains(man.Kinds, "add") || slices.Contains(man.Kinds, "add_mem") {
		kinds += fmt.Sprintf("; %d-digit operands", cmd.Digits)
	}
	fmt.Fprintf(stdout, "wrote %d training, %d test and %d recall probes (%s) to %s\n",
		len(ps.Train), len(ps.Test), len(ps.Recall), kinds, cmd.Out)
	fmt.Fprintf(stdout, "score them with: smallinit eval-tasks --model DIR --task probe_test=%s --task probe_recall=%s\n",
		filepath.Join(cmd.Out, "test.jsonl"), filepath.Join(cmd.Out, "recall.jsonl"))
	return nil
}
