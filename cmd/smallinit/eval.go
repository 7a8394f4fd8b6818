package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

type evalCmd struct {
	Model  string `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors)."`
	Tokens string `required:"" type:"existingfile" help:"Token file (.tok) to evaluate on."`
	Batch  int    `default:"8" help:"Windows per forward pass."`
	JSON   bool   `name:"json" help:"Print the result as JSON."`
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
	sum, scored, err := eval.ScoreTokens(m, toks)
	if err != nil {
		return fmt.Errorf("eval %s on %s: %w", cmd.Model, cmd.Tokens, err)
	}
	loss, T := sum/float64(scored), int64(m.Config.SeqLen)
	r := evalResult{Model: cmd.Model, Tokens: cmd.Tokens, Loss: loss, PPL: math.Exp(loss), Windows: int((scored + T - 1) / T),
		Scored: int(scored)}
	if cmd.JSON {
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
		return nil
	}
	if _, err := fmt.Printf("loss %.6f nats (perplexity %.3f) over %d windows, %d predicted tokens\n", r.Loss, r.PPL, r.Windows, r.Scored); err != nil {
		return fmt.Errorf("write result: %w", err) // e.g. stdout on a full disk: the result is lost, say so
	}
	return nil
}
