package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/internal/progress"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/tokenizer"
)

type evalTasksCmd struct {
	Model         string   `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors)."`
	Tokenizer     string   `type:"path" help:"tokenizer.json of the model (default: MODEL/tokenizer.json)."`
	Task          []string `required:"" sep:"none" placeholder:"NAME=FILE" help:"A task to run, repeatable. NAME gives the record format (the kinds are described above): ${eval_task_names}, or a name starting with one of them and _, - or . (probe-test); or NAME:KIND=FILE. cmmlu and ceval take a released CSV file or a directory of per-subject CSVs."`
	Fewshot       []string `sep:"none" placeholder:"NAME=FILE" help:"Few-shot examples for task NAME, in its record format (the first --shots records are used; a record is never its own example)."`
	Shots         int      `default:"5" help:"Few-shot examples per record for tasks given a --fewshot file."`
	Limit         int      `help:"Stop reading each task after this many valid records (0: all). A directory of per-subject files (cmmlu, ceval) is then read round-robin, one record from each subject in turn, so the records spread over the subjects."`
	MaxNewTokens  int      `default:"256" help:"Most tokens generated per record in generative tasks (greedy): each such record costs up to this many decoding steps."`
	StrictRecords bool     `help:"Stop at the first malformed record instead of skipping and counting it."`
	Batch         int      `default:"8" help:"Forward capacity in context-length rows; short requests are packed several to a row's worth."`
	NoCache       bool     `help:"Generate by recomputing the prefix each step (the reference) instead of with the KV-cache decoder."`
	PrefixEOT     bool     `name:"prefix-eot" help:"Put <|endoftext|> before every context and prompt, where a model trained on EOT-separated documents saw each document begin (the default scores them at position 0, as lm-evaluation-harness does)."`
	SpecialTokens string   `default:"parse" enum:"parse,literal" help:"How text spelling a special token (a literal <|endoftext|> in a record) is encoded: parse (as its id, as Hugging Face tokenizers and lm-evaluation-harness do) or literal (as plain bytes, as training data is encoded). See docs/evaluation.md."`
	JSON          bool     `name:"json" help:"Print the report as JSON on stdout."`

	progressEvery time.Duration // interval of the plain progress lines off a terminal (0: 10 s); tests shorten it
}

// Help is the detail of eval-tasks --help: what each task kind costs and what "scored" means for it, from the
// kinds' table.
func (cmd *evalTasksCmd) Help() string { return eval.KindHelp() }

// maxWarnings is how many malformed-record warnings eval-tasks prints per task before summarising the rest.
const maxWarnings = 5

func (cmd *evalTasksCmd) Run() error {
	ctx, stop := interruptible()
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the run stops after the chunk in progress; a second interrupt kills at once
	}()
	out := &errWriter{w: os.Stdout}
	_, err := cmd.run(ctx, out, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
	if err == nil && out.err != nil {
		err = fmt.Errorf("write results: %w", out.err) // e.g. stdout on a full disk: the results are lost, say so
	}
	return err
}

// errWriter remembers the first write error of w, so that a command whose printing ignores errors can still
// report that its output was lost.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// loadTokenizer loads --tokenizer, defaulting to MODEL_DIR/tokenizer.json, and checks that its ids fit the
// model's vocabulary.
func loadTokenizer(modelDir, path string, vocab int) (*tokenizer.Tokenizer, string, error) {
	if path == "" {
		path = filepath.Join(modelDir, "tokenizer.json")
		if _, err := os.Stat(path); err != nil {
			return nil, "", fmt.Errorf("no tokenizer: %s does not exist; pass --tokenizer FILE", path)
		}
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, "", err
	}
	if tok.VocabSize() > vocab {
		return nil, "", fmt.Errorf("tokenizer %s has %d tokens, more than the model's vocabulary of %d", path, tok.VocabSize(), vocab)
	}
	return tok, path, nil
}

// parseTaskFlags turns --task and --fewshot values into task specs.
func parseTaskFlags(tasks, fewshot []string) ([]eval.TaskSpec, error) {
	var specs []eval.TaskSpec
	names := map[string]int{}
	for _, a := range tasks {
		s, err := eval.ParseTaskArg(a)
		if err != nil {
			return nil, fmt.Errorf("--task: %w", err)
		}
		if _, dup := names[s.Name]; dup {
			return nil, fmt.Errorf("--task: %s given twice", s.Name)
		}
		names[s.Name] = len(specs)
		specs = append(specs, s)
	}
	for _, a := range fewshot {
		name, file, ok := strings.Cut(a, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("--fewshot %q: want NAME=FILE", a)
		}
		i, ok := names[name]
		if !ok {
			return nil, fmt.Errorf("--fewshot %s: no --task named %s", a, name)
		}
		if specs[i].Kind == eval.KindLM {
			return nil, fmt.Errorf("--fewshot %s: lm tasks take no few-shot examples", a)
		}
		specs[i].Fewshot = file
	}
	return specs, nil
}

// run loads the model and runs every task, printing a summary (or JSON) to stdout and warnings and progress to
// log.
func (cmd *evalTasksCmd) run(ctx context.Context, stdout, log io.Writer, tty bool) (*eval.Report, error) {
	switch {
	case cmd.Batch < 1:
		return nil, fmt.Errorf("--batch %d: must be positive", cmd.Batch)
	case cmd.Shots < 0 || cmd.Limit < 0 || cmd.MaxNewTokens < 1:
		return nil, errors.New("--shots and --limit must be ≥ 0 and --max-new-tokens positive")
	}
	specs, err := parseTaskFlags(cmd.Task, cmd.Fewshot)
	if err != nil {
		return nil, err
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, _, err := model.Load(cmd.Model, cmd.Batch, pool)
	if err != nil {
		return nil, err
	}
	tok, tokPath, err := loadTokenizer(cmd.Model, cmd.Tokenizer, m.Config.Vocab)
	if err != nil {
		return nil, err
	}
	var gen eval.Stepper = m.NewDecoder()
	if cmd.NoCache {
		gen = eval.NewPrefixStepper(m)
	}
	be := eval.NewLM(m, tok, gen)
	if cmd.SpecialTokens != "" { // "": the flag's default, parse (NewLM's)
		if be.Special, err = eval.ParseSpecialTokens(cmd.SpecialTokens); err != nil {
			return nil, fmt.Errorf("--special-tokens: %w", err)
		}
	}
	if cmd.PrefixEOT {
		if tok.EOT() < 0 {
			return nil, fmt.Errorf("--prefix-eot: %s has no <|endoftext|> token", tokPath)
		}
		be.Prefix = []int32{tok.EOT()}
	}
	rep := &eval.Report{Model: cmd.Model, Tokenizer: tokPath, Params: m.Config.NumParams(), PrefixEOT: cmd.PrefixEOT,
		Special: string(be.Special)}
	for _, s := range specs {
		o := eval.Options{Limit: cmd.Limit, Shots: cmd.Shots, MaxNewTokens: cmd.MaxNewTokens, StrictRecords: cmd.StrictRecords}
		warned := 0
		o.Malformed = func(e *eval.RecordError) {
			if warned < maxWarnings {
				fmt.Fprintf(log, "warning: skipping malformed record %v\n", e)
			}
			warned++
		}
		// Records read (scored or skipped) of the task's records or --limit: a bar on a terminal, else a line
		// every cmd.progressEvery.
		p := &progress.Count{Log: log, TTY: tty, Desc: s.Name, Unit: s.Kind.ProgressUnit(), Every: cmd.progressEvery}
		o.Progress = p.Update
		res, err := eval.RunTask(ctx, s, be, o)
		p.Finish()
		if err != nil {
			return nil, err
		}
		if res.Skipped > 0 {
			more := ""
			if res.Skipped > maxWarnings {
				more = fmt.Sprintf(" (%d more not shown; --json lists the first %d)", res.Skipped-maxWarnings, len(res.Malformed))
			}
			fmt.Fprintf(log, "%s: skipped %d malformed records%s\n", s.Name, res.Skipped, more)
		}
		rep.Tasks = append(rep.Tasks, res)
		if !cmd.JSON {
			res.WriteText(stdout)
		}
	}
	if cmd.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return rep, enc.Encode(rep)
	}
	if len(rep.Tasks) > 1 {
		fmt.Fprintln(stdout)
		rep.WriteSummary(stdout)
	}
	return rep, nil
}
