package train_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/train"
	"github.com/smallinit/smallinit/train/rundir"
)

// Train a small model from Go: a token file, a run config from dotted keys (the same overrides as
// `smallinit train --set`), and train.Start, which writes the run directory (config.toml, metrics.jsonl,
// init.json, init/, checkpoints/, final/).
func Example() {
	dir, err := os.MkdirTemp("", "smallinit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tokens := make([]int32, 20000)
	for i := range tokens {
		tokens[i] = int32(i*7919) % 64 // any token stream of ids below model.vocab_size
	}
	tokFile := filepath.Join(dir, "train.tok")
	if err := data.WriteTokens(tokFile, tokens); err != nil {
		log.Fatal(err)
	}
	c, err := train.Load("", []string{
		"model.preset=tiny", "model.vocab_size=64", "model.hidden_size=32", "model.num_attention_heads=2",
		"model.max_position_embeddings=32", "model.num_hidden_layers=1",
		"init.gamma=1", "model.norm_eps=1e-12", "model.attn_gate=elementwise",
		"train.batch_size=2", "train.steps=4", "train.log_interval=2", "train.eval_interval=0",
		"train.checkpoint_interval=2", "schedule.warmup_steps=1", "data.train=" + tokFile,
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := train.Start(context.Background(), c, filepath.Join(dir, "run"), train.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(res.Dir, rundir.FinalDir, "model.safetensors"))
	fmt.Printf("trained %d steps, final model written: %v\n", res.Steps, err == nil)
	// Output: trained 4 steps, final model written: true
}
