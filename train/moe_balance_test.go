package train

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/train/rundir"
)

// TestTinyMoEKeepsExpertsBalanced trains the tiny-moe preset (its defaults: α = 0.01 and auxiliary-loss-free
// balancing) on the embedded bilingual corpus and then routes 32 validation windows, spread over both languages,
// through the final model: every expert of every MoE block must take between 1/3 and 3 times the uniform share
// k/E of the assignments.
//
// Why the selection bias is needed: at γ = 1 the hidden states of a small-init model first condense onto one
// direction (Adam moves every embedding row along the common gradient by about lr per step, far more than their
// initial std of 1/d), so the router sees nearly the same input for every token and picks the same two experts for
// the whole batch. The Switch loss cannot fix that (its gradient only shifts every token's logits together), and
// measured with the harness behind this test the busiest expert kept 2-4 times its share and several experts
// none for the first ~150 steps, with α = 0.01, 0.1 or 1. The bias update recovers balance once the
// representations expand: with it this test measured a worst block of 1.59x off uniform, and with
// model.router_bias_update_rate=0 the same run ended at 3.02x (an expert at 0.33x of its share).
func TestTinyMoEKeepsExpertsBalanced(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the tiny-moe preset for about a minute of CPU; run without -short")
	}
	root := t.TempDir()
	st, err := data.PrepareEmbedded(filepath.Join(root, "data"), 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load("", []string{"model.preset=tiny-moe", "train.batch_size=8", "train.steps=250",
		"train.eval_interval=0", "train.checkpoint_interval=0", "train.log_interval=50", "seed=1",
		"data.train=" + filepath.Join(root, "data", data.TrainFile)})
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(root, "run")
	if _, err := Start(context.Background(), c, run, Options{}); err != nil {
		t.Fatal(err)
	}

	pool := kernel.NewPool(0)
	defer pool.Close()
	const windows = 32
	m, _, err := model.Load(filepath.Join(run, rundir.FinalDir), windows, pool)
	if err != nil {
		t.Fatal(err)
	}
	val, err := data.ReadTokens(filepath.Join(root, "data", data.ValFile), st.VocabSize)
	if err != nil {
		t.Fatal(err)
	}
	T := m.Config.SeqLen
	in, tg := make([]int32, windows*T), make([]int32, windows*T)
	stride := (len(val) - T - 1) / windows
	for w := 0; w < windows; w++ {
		copy(in[w*T:(w+1)*T], val[w*stride:w*stride+T])
		copy(tg[w*T:(w+1)*T], val[w*stride+1:w*stride+T+1])
	}
	if _, err := m.Forward(in, tg); err != nil {
		t.Fatal(err)
	}
	E := float64(m.Config.Experts)
	for l := 0; l < m.Config.Layers; l++ {
		load, _ := m.ExpertLoad(l)
		worst := 0.0
		for _, f := range load {
			worst = math.Max(worst, math.Max(f*E, 1/(f*E)))
		}
		t.Logf("block %d: load × E = %s (worst factor %.2f)", l, fmtLoads(load, E), worst)
		if worst > 3 {
			t.Errorf("block %d: an expert's load is %.2f times off uniform (want ≤ 3): %s", l, worst, fmtLoads(load, E))
		}
	}
}

func fmtLoads(load []float64, E float64) string {
	s := ""
	for _, f := range load {
		s += fmt.Sprintf(" %.2f", f*E)
	}
	return s
}
