package train

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

func TestMaskTargetsKeepsOnlyLossPositions(t *testing.T) {
	c := recipe.Default()
	c.Model.SeqLen = 4
	c.Train.LossPositions = []int{1, 3}
	tg := []int32{10, 11, 12, 13, 20, 21, 22, 23}
	maskTargets(c, tg)
	I := model.IgnoreTarget
	if want := []int32{I, 11, I, 13, I, 21, I, 23}; !slices.Equal(tg, want) {
		t.Errorf("masked targets %v, want %v", tg, want)
	}
	c.Train.LossPositions = nil
	tg2 := []int32{1, 2, 3, 4}
	maskTargets(c, tg2)
	if !slices.Equal(tg2, []int32{1, 2, 3, 4}) {
		t.Errorf("no loss_positions changed the targets: %v", tg2)
	}
}

func TestLossPositionsAreValidated(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"train.loss_positions=[16]", "outside the window"},
		{"train.loss_positions=[-1]", "outside the window"},
		{"train.loss_positions=[2, 2]", "given twice"},
	} {
		_, err := Load("", []string{"model.max_position_embeddings=16", "data.train=x.tok", tc.set})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.set, err, tc.want)
		}
	}
}

// TestLossPositionsTrainTheAnswerOnly: with loss on the last position only, one fixed batch whose last target
// is learnable is overfit while the other positions, random and unlearnable in 150 steps, would not be; the
// run's reported loss is the answer position's.
func TestLossPositionsTrainTheAnswerOnly(t *testing.T) {
	root := t.TempDir()
	tr := writeTokens(t, root, "one.tok", 17, 64, 3)
	c, err := Load("", []string{"model.vocab_size=64", "model.hidden_size=32", "model.num_hidden_layers=2",
		"model.num_attention_heads=2", "model.max_position_embeddings=16", "train.batch_size=1", "train.steps=60",
		"train.eval_interval=0", "train.checkpoint_interval=0", "train.log_interval=20", "schedule.kind=constant",
		"schedule.lr=1e-2", "schedule.warmup_steps=5", "init.gamma=1", "data.train=" + tr,
		"train.loss_positions=[15]"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "run")
	res, err := Start(context.Background(), c, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Loss >= 0.05 {
		t.Errorf("answer-only loss after 60 steps on one window: %.4f, want < 0.05", res.Loss)
	}
	back, err := Load(filepath.Join(dir, rundir.ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Train.LossPositions, []int{15}) {
		t.Errorf("config.toml round trip: loss_positions %v, want [15]", back.Train.LossPositions)
	}
}
