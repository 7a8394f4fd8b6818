package experiment_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/smallinit/smallinit/experiment"
)

// A plan of one's own: two arms (γ = 0.5 and γ = 1, both with the fixes) × one seed on the embedded corpus,
// run with the machinery of the demo — data preparation, resumable runs, summary.json and report.html.
// `smallinit study FILE` runs the same text from a file.
const myPlan = `
name = "gamma-pair"
title = "γ = 0.5 against γ = 1"
seeds = [0]
summary = true

[budget]
minutes = 1
efficiency = 0.85
min_steps = 2

[data]
corpus = "embedded"
vocab = 300

[base]
"model.preset" = "tiny"
"model.hidden_size" = 32
"model.num_attention_heads" = 2
"model.num_hidden_layers" = 1
"model.max_position_embeddings" = 32
"model.norm_eps" = 1e-12
"model.attn_gate" = "elementwise"
"train.batch_size" = 2
"train.log_interval" = 1
"train.eval_windows" = 4

[per_steps]
"train.eval_interval" = 1
"train.checkpoint_interval" = 1
"schedule.warmup_steps" = 2

[report]
compare = ["gamma1", "gamma0.5"]
compare_windows = 4

[[group]]
name = "runs"

[[group.arm]]
name = "gamma0.5"
set = { "init.gamma" = 0.5 }

[[group.arm]]
name = "gamma1"
set = { "init.gamma" = 1.0 }
`

func ExampleRun() {
	p, err := experiment.Parse([]byte(myPlan))
	if err != nil {
		log.Fatal(err)
	}
	out, err := os.MkdirTemp("", "smallinit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(out)
	res, err := experiment.Run(context.Background(), p, experiment.Options{Out: out, Steps: 2, Windows: 4})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res.Rows {
		fmt.Printf("%s: γ = %g, %d steps, finite validation loss: %v\n", r.Run, r.Gamma, r.Steps, r.ValLoss > 0)
	}
	_, err = os.Stat(res.Report)
	fmt.Println("report written:", err == nil)
	// Output:
	// gamma0.5: γ = 0.5, 2 steps, finite validation loss: true
	// gamma1: γ = 1, 2 steps, finite validation loss: true
	// report written: true
}

// The built-in plans are TOML files embedded in the binary; `smallinit demo --print-plan` prints the demo's.
func ExampleBuiltin() {
	p, err := experiment.Builtin("demo")
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range p.Groups {
		for _, a := range g.Arms {
			fmt.Println(g.Name+"/"+a.Name, a.Sets)
		}
	}
	// Output:
	// runs/gamma0.5-default [init.gamma=0.5 model.attn_gate="none" model.norm_eps=1e-05]
	// runs/gamma1-default [init.gamma=1.0 model.attn_gate="none" model.norm_eps=1e-05]
	// runs/gamma0.5-fixed [init.gamma=0.5 model.attn_gate="elementwise" model.norm_eps=1e-12]
	// runs/gamma1-fixed [init.gamma=1.0 model.attn_gate="elementwise" model.norm_eps=1e-12]
}
