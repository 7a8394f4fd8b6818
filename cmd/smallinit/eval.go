package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

type evalCmd struct {
	Model  string `required:"" type:"existingdir" help:"Model directory (config.json + model.safetensors)."`
	Tokens string `required:"" type:"existingfile" help:"Token file (.tok) to evaluate on."`
	Batch  int    `default:"8" help:"Windows per forward pass."`
	JSON   bool   `name:"json" help:"Print the result as JSON."`
}

// evalResult is the mean next-token loss over every window of a token file.
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
	loss, windows, err := evalLoss(m, toks)
	if err != nil {
		return fmt.Errorf("eval %s on %s: %w", cmd.Model, cmd.Tokens, err)
	}
	r := evalResult{Model: cmd.Model, Tokens: cmd.Tokens, Loss: loss, PPL: math.Exp(loss), Windows: windows,
		Scored: windows * m.Config.SeqLen}
	if cmd.JSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("loss %.6f nats (perplexity %.3f) over %d windows, %d predicted tokens\n", r.Loss, r.PPL, r.Windows, r.Scored)
	return nil
}

// evalLoss is the mean next-token loss over all windows of toks (data.Window), in batches of m.Batch().
func evalLoss(m *model.Model, toks []int32) (float64, int, error) {
	T := m.Config.SeqLen
	nw := data.NumWindows(len(toks), T)
	if nw == 0 {
		return 0, 0, fmt.Errorf("%d tokens: need at least %d for one window of T=%d", len(toks), T+1, T)
	}
	in, tg := make([]int32, m.Batch()*T), make([]int32, m.Batch()*T)
	var sum float64
	for k := 0; k < nw; k += m.Batch() {
		b := min(m.Batch(), nw-k)
		for i := 0; i < b; i++ {
			data.Window(toks, k+i, in[i*T:(i+1)*T], tg[i*T:(i+1)*T])
		}
		loss, err := m.Forward(in[:b*T], tg[:b*T])
		if err != nil {
			return 0, 0, err
		}
		sum += loss * float64(b)
	}
	return sum / float64(nw), nw, nil
}
