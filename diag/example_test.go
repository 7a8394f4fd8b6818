package diag_test

import (
	"fmt"
	"log"
	"os"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
)

// Analyse a checkpoint: load a model directory (a run's final/, init/ or checkpoints/step-N/, or any
// config.json + model.safetensors) and measure each query projection's stable rank, the metric whose
// collapse and recovery claim 5 is about. Here the checkpoint is a freshly initialised γ = 1 model.
func Example() {
	dir, err := os.MkdirTemp("", "smallinit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	pool := kernel.NewPool(1)
	defer pool.Close()
	p, _ := arch.LookupPreset("tiny")
	c := p.Config
	c.Vocab, c.SeqLen = 256, 32
	m, err := model.New(c, 1, pool)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := gammainit.Apply(m, recipe.Init{Rule: recipe.RuleGamma, Gamma: 1}, 0); err != nil {
		log.Fatal(err)
	}
	if err := m.Save(dir, nil); err != nil {
		log.Fatal(err)
	}

	ck, _, err := model.Load(dir, 1, pool)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range ck.Specs {
		if t.Class != arch.ClassQ {
			continue
		}
		w := ck.Params.Flat[t.Offset : t.Offset+t.Size()]
		st := diag.Weights(w, t.Shape[0], t.Shape[1], diag.DefaultWeightOptions())
		// A Gaussian d × d matrix has a stable rank of about d/4.
		fmt.Printf("%s %d×%d: stable rank ≈ d/4: %v\n", t.Name, st.Rows, st.Cols, st.StableRank > float64(st.Rows)/6 && st.StableRank < float64(st.Rows)/3)
	}
	// Output:
	// model.layers.0.self_attn.q_proj.weight 128×128: stable rank ≈ d/4: true
	// model.layers.1.self_attn.q_proj.weight 128×128: stable rank ≈ d/4: true
	// model.layers.2.self_attn.q_proj.weight 128×128: stable rank ≈ d/4: true
	// model.layers.3.self_attn.q_proj.weight 128×128: stable rank ≈ d/4: true
}
