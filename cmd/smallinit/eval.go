package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/internal/progress"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

type evalCmd struct {
	Model  string `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors)."`
	Tokens string `required:"" type:"existingfile" help:"Token file (.tok) to evaluate on."`
	Batch  int    `default:"8" help:"Windows per forward pass."`
	JSON   bool   `name:"json" help:"Print the result as JSON."`

	progressEvery time.Duration // interval of the plain progress lines off a terminal (0: 10 s); tests shorten it
}

// evalResult is the mean next-token loss over every target of a token file, scored by eval.ScoreTokens (the
// scorer of the validation loss that summary.json and the plan tables show) in Windows windows of at most
// SeqLen targets.
type evalResult struct {
	Model   string  `json:"model"`
	Tokens  string  `json:"tokens"`
	Loss    float64 `json:"loss"`
	PPL     float64 `json:"perplexity"`
	Windows int     `json:"windows"`
	Scored  int     `json:"predicted_tokens"`
}

func (cmd *evalCmd) Run() error {
	ctx, stop := interruptible()
	defer stop()
	return cmd.run(ctx, os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// run scores the file, saying on log what it scores and then how far it is (a bar on a terminal, else a line
// every progressEvery), and prints the result on stdout. A cancelled ctx (SIGTERM, Ctrl-C) stops it between
// forward passes, saying how many windows it scored; it prints no result, and writes nothing.
func (cmd *evalCmd) run(ctx context.Context, stdout, log io.Writer, tty bool) error {
	if cmd.Batch < 1 {
		return fmt.Errorf("--batch %d: must be positive", cmd.Batch)
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, _, err := model.Load(cmd.Model, cmd.Batch, pool)
	if err != nil {
		return err
	}
	toks, err := data.ReadTokens(cmd.Tokens, m.Config.Vocab)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "eval: scoring %s on %s: %d tokens in windows of %d, %d windows per forward pass\n", cmd.Model, cmd.Tokens, len(toks), m.Config.SeqLen, cmd.Batch)
	p := &progress.Count{Log: log, TTY: tty, Desc: "eval", Unit: "windows", Every: cmd.progressEvery}
	sum, scored, err := eval.ScoreTokens(ctx, m, toks, p.Update)
	p.Finish()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("eval %s on %s: interrupted, no result (it writes nothing; run it again to score): %w", cmd.Model, cmd.Tokens, err)
	} else if err != nil {
		return fmt.Errorf("eval %s on %s: %w", cmd.Model, cmd.Tokens, err)
	}
	loss, T := sum/float64(scored), int64(m.Config.SeqLen)
	r := evalResult{Model: cmd.Model, Tokens: cmd.Tokens, Loss: loss, PPL: math.Exp(loss), Windows: int((scored + T - 1) / T),
		Scored: int(scored)}
	if cmd.JSON {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
		return nil
	}
	if _, err := fmt.Fprintf(stdout, "loss %.6f nats (perplexity %.3f) over %d windows, %d predicted tokens\n", r.Loss, r.PPL, r.Windows, r.Scored); err != nil {
		return fmt.Errorf("write result: %w", err) // e.g. stdout on a full disk: the result is lost, say so
	}
	return nil
}
