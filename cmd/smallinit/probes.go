package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/probes"
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
	ps, man, err := probes.WriteSet(cmd.Out, probes.Config{Seed: cmd.Seed, Train: cmd.N, Test: cmd.Test, Table: cmd.Table,
		Kinds: cmd.Kinds, AddDigits: cmd.Digits})
	if err != nil {
		return err
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
