package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

type generateCmd struct {
	Model       string   `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors)."`
	Tokenizer   string   `type:"path" help:"tokenizer.json of the model (default: MODEL/tokenizer.json)."`
	Prompt      string   `required:"" help:"Text to continue (the completion alone is printed)."`
	Temperature float64  `default:"1" help:"Sampling temperature; 0 is greedy decoding."`
	TopK        int      `name:"top-k" default:"0" help:"Sample from the K most likely tokens only (0: all)."`
	TopP        float64  `name:"top-p" default:"1" help:"Sample from the smallest set of tokens whose probability reaches P (1: all)."`
	Seed        uint64   `default:"0" help:"Seed of the sampler; the same seed reproduces a completion."`
	MaxTokens   int      `default:"128" aliases:"max-new-tokens" help:"Most tokens to generate (--max-new-tokens, the name of Hugging Face's generate and of eval-tasks, is the same flag)."`
	Stop        []string `sep:"none" placeholder:"STR" help:"Stop before this string (repeatable); generation also stops at <|endoftext|>."`
	NoCache     bool     `help:"Recompute the whole prefix each step (the reference) instead of using the KV-cache decoder."`
}

func (cmd *generateCmd) Run() error {
	_, err := cmd.run(os.Stdout, os.Stderr)
	return err
}

// run streams the completion to stdout and a one-line summary to log.
func (cmd *generateCmd) run(stdout, log io.Writer) (eval.Generation, error) {
	var g eval.Generation
	if cmd.MaxTokens < 1 {
		return g, fmt.Errorf("--max-tokens %d: must be positive", cmd.MaxTokens)
	}
	so := eval.SampleOptions{Temperature: cmd.Temperature, TopK: cmd.TopK, TopP: cmd.TopP, Seed: cmd.Seed}
	if err := so.Validate(); err != nil {
		return g, err
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, _, err := model.Load(cmd.Model, 1, pool)
	if err != nil {
		return g, err
	}
	tok, _, err := loadTokenizer(cmd.Model, cmd.Tokenizer, m.Config.Vocab)
	if err != nil {
		return g, err
	}
	prompt := tok.Encode(cmd.Prompt)
	if len(prompt) == 0 {
		if tok.EOT() < 0 {
			return g, fmt.Errorf("empty --prompt and the tokenizer has no end-of-text token to start from")
		}
		prompt = append(prompt, tok.EOT())
	}
	var st eval.Stepper = m.NewDecoder()
	if cmd.NoCache {
		st = eval.NewPrefixStepper(m)
	}
	t0 := time.Now()
	g, err = eval.Generate(st, tok, prompt, eval.GenerateOptions{MaxTokens: cmd.MaxTokens, Stop: cmd.Stop, EOT: tok.EOT(), Sample: so}, stdout)
	if err != nil {
		return g, err
	}
	fmt.Fprintln(stdout)
	secs := time.Since(t0).Seconds()
	fmt.Fprintf(log, "[%d prompt tokens, %d generated (%s), %.1f tokens/s]\n", len(prompt), len(g.Tokens), g.Reason, float64(len(g.Tokens))/secs)
	return g, nil
}
