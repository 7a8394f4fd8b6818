package coordcheck

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/override"
)

// TestBounds: widths and steps out of a check's bounds are refused naming the flag or key, the values and the
// limit; the built-in plan's values pass.
func TestBounds(t *testing.T) {
	tests := []struct {
		name   string
		widths []int
		steps  []int
		want   string // "" passes
	}{
		{"the built-in plan's", []int{64, 128, 256, 512}, []int{0, 1, 10}, ""},
		{"one width", []int{64}, []int{0}, "--widths 64: want 2 to 64 widths"},
		{"a zero width", []int{0, 64}, []int{0}, "--widths 0,64: width 0 must be in [1, 16777216]"},
		{"a width past the model's bound", []int{64, 1 << 30}, []int{0}, "width 1073741824 must be in [1, 16777216] (model.hidden_size)"},
		{"a width twice", []int{64, 128, 64}, []int{0}, "--widths 64,128,64: width 64 given twice"},
		{"too many widths", make([]int, 65), []int{0}, "want 2 to 64 widths"},
		{"no step", []int{64, 128}, []int{}, "--steps : want 1 to 64 steps"},
		{"a negative step", []int{64, 128}, []int{-1}, "--steps -1: step -1 must be in [0, 100000]"},
		{"a billion steps", []int{64, 128}, []int{0, 1000000000}, "--steps 0,1000000000: step 1000000000 must be in [0, 100000]"},
		{"a step twice", []int{64, 128}, []int{0, 10, 10}, "--steps 0,10,10: step 10 given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := errors.Join(CheckWidths("--widths", tc.widths), CheckSteps("--steps", tc.steps))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	specs := []struct {
		s    Spec
		want string
	}{
		{Spec{Widths: []int{64, 128}, Steps: []int{0}, LR: 1e-3, Batch: 8}, ""},
		{Spec{Widths: []int{64, 128}, Steps: []int{0}, LR: 0, Batch: 8}, "coordcheck.lr 0"},
		{Spec{Widths: []int{64, 128}, Steps: []int{0}, LR: math.Inf(1), Batch: 8}, "coordcheck.lr +Inf"},
		{Spec{Widths: []int{64, 128}, Steps: []int{0}, LR: 1e-3, Batch: 0}, "coordcheck.batch 0: must be in [1, 4096]"},
		{Spec{Widths: []int{64, 128}, Steps: []int{0}, LR: 1e-3, Batch: 1 << 20}, "coordcheck.batch 1048576"},
		{Spec{Widths: []int{64, 64}, Steps: []int{0}, LR: 1e-3, Batch: 8}, "coordcheck.widths 64,64: width 64 given twice"},
		{Spec{Widths: []int{64, 128}, Steps: []int{1 << 20}, LR: 1e-3, Batch: 8}, "coordcheck.steps 1048576"},
	}
	for _, c := range specs {
		err := c.s.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: Validate %v, want %q", c.s, err, c.want)
		}
	}
}

// tinyBase is a small recipe to measure: the tiny preset at a 16-token context.
var tinyBase = []override.Set{{Key: "model.preset", Value: "tiny"}, {Key: "model.max_position_embeddings", Value: int64(16)},
	{Key: "model.norm_eps", Value: 1e-12}, {Key: "init.gamma", Value: 1.0}}

// TestRunMeasuresEveryPoint runs a small check and checks its shape: a point per width, step and layer in that
// order, a fit per step and layer, finite positive ratios, the prediction 1 − γ, and the same numbers twice.
func TestRunMeasuresEveryPoint(t *testing.T) {
	s := Spec{Widths: []int{64, 32}, Steps: []int{2, 0}, LR: 1e-3, Batch: 2}
	r, err := Run(context.Background(), tinyBase, s, Options{Gamma: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	layers := r.Points[len(r.Points)-1].Layer + 1
	if len(r.Points) != 2*2*layers || len(r.Fits) != 2*layers {
		t.Fatalf("%d points and %d fits for 2 widths, 2 steps and %d layers", len(r.Points), len(r.Fits), layers)
	}
	i := 0
	for _, w := range []int{32, 64} {
		for _, st := range []int{0, 2} {
			for l := 0; l < layers; l++ {
				p := r.Points[i]
				if p.Width != w || p.Step != st || p.Layer != l {
					t.Fatalf("point %d is (width %d, step %d, layer %d), want (%d, %d, %d)", i, p.Width, p.Step, p.Layer, w, st, l)
				}
				if !(p.AttnRatio > 0 && p.FFNRatio > 0 && p.HiddenRMS > 0) || math.IsInf(p.AttnRatio, 0) {
					t.Errorf("point %+v: want finite positive ratios", p)
				}
				i++
			}
		}
	}
	if r.Gamma != 0.5 || r.Predicted == nil || *r.Predicted != 0.5 {
		t.Errorf("γ %g, predicted %v: want 0.5 and 1 − γ = 0.5", r.Gamma, r.Predicted)
	}
	again, err := Run(context.Background(), tinyBase, s, Options{Gamma: 0.5})
	if err != nil || again.Points[len(again.Points)-1] != r.Points[len(r.Points)-1] {
		t.Errorf("a second run measured %+v (%v), the first %+v", again.Points[len(again.Points)-1], err, r.Points[len(r.Points)-1])
	}
}

// TestRunRefusesBeforeWork: a width too large for this machine is refused (a WidthError naming it) before the
// narrower widths are measured, and a cancelled context stops the steps, saying where.
func TestRunRefusesBeforeWork(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a check that measured the narrow width first would stop on this, not on the wide width
	s := Spec{Widths: []int{32, 1 << 16}, Steps: []int{0, 5}, LR: 1e-3, Batch: 2}
	_, err := Run(ctx, tinyBase, s, Options{})
	var we *WidthError
	if !errors.As(err, &we) || we.Width != 1<<16 || errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want the width 65536 refused (too large) before any measurement", err)
	}
	_, err = Run(ctx, tinyBase, Spec{Widths: []int{32, 64}, Steps: []int{0, 5}, LR: 1e-3, Batch: 2}, Options{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "width 32: stopped at step 0 of 5") {
		t.Errorf("cancelled: error %v, want width 32 stopped at step 0 of 5", err)
	}
}
