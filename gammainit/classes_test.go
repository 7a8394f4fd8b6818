package gammainit

import (
	"math"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/recipe"
)

// TestClassesCoverEveryTensor: every tensor of dense, MoE (shared expert, router bias), Qwen3 (q/k norms),
// LayerNorm, gated and QKV-bias layouts has a class in Classes, whose start is what Apply gives it and whose
// d_in axis is arch.TensorSpec.FanIn's.
func TestClassesCoverEveryTensor(t *testing.T) {
	info := map[string]ClassInfo{}
	for _, ci := range Classes() {
		info[ci.Class] = ci
	}
	moe, _ := arch.LookupPreset("tiny-moe")
	mc := moe.Config
	mc.SharedFFN, mc.SeqLen = 64, 16
	gated := cfg(64, 2) // layernorm, elementwise gate
	gated.QKVBias, gated.QKNorm = true, true
	seen := map[string]bool{}
	for _, c := range []arch.Config{cfg(64, 2), gated, mc} {
		m := newModel(t, c)
		if _, err := Apply(m, recipe.DefaultInit(), 1); err != nil {
			t.Fatal(err)
		}
		for _, s := range m.Specs {
			ci, ok := info[s.Class]
			if !ok {
				t.Errorf("%s: class %q not in Classes()", s.Name, s.Class)
				continue
			}
			seen[s.Class] = true
			v := m.Params.Flat[s.Offset : s.Offset+s.Size()]
			switch ci.Start {
			case StartOnes, StartZeros:
				want := float32(0)
				if ci.Start == StartOnes {
					want = 1
				}
				for i, x := range v {
					if x != want {
						t.Fatalf("%s (%s) element %d = %v, want %v", s.Name, ci.Start, i, x, want)
					}
				}
				if ci.DInAxis != -1 || ci.DepthScaled {
					t.Errorf("%s: %+v", s.Class, ci)
				}
			case StartDrawn:
				if s.Shape[ci.DInAxis] != s.FanIn() || s.Shape[ci.DOutAxis] != s.Shape[0] {
					t.Errorf("%s: d_in axis %d of %v, FanIn %d", s.Name, ci.DInAxis, s.Shape, s.FanIn())
				}
			default:
				t.Errorf("%s: start %q", s.Class, ci.Start)
			}
		}
	}
	for _, ci := range Classes() {
		if !seen[ci.Class] {
			t.Errorf("class %s: no tensor of the test layouts has it", ci.Class)
		}
		if ci.DepthScaled != (ci.Class == arch.ClassO || ci.Class == arch.ClassFFNDown) {
			t.Errorf("class %s: depth scaled %v", ci.Class, ci.DepthScaled)
		}
	}
	if len(recipe.ClassNames()) != len(recipe.MatrixClasses()) {
		t.Errorf("ClassNames %v", recipe.ClassNames())
	}
}

// TestSigma checks each rule's σ against the formulas of docs/definitions.md §2 evaluated by hand.
func TestSigma(t *testing.T) {
	for _, tc := range []struct {
		rule       string
		gamma, std float64
		dIn, dOut  int
		want       float64
	}{
		{recipe.RuleGamma, 1, 0, 128, 384, 1.0 / 128},
		{recipe.RuleGamma, 0.5, 0, 128, 384, 1 / math.Sqrt(128)},
		{recipe.RuleGamma, 0.75, 0, 16, 1, 0.125},
		{recipe.RuleGamma, 0, 0, 1000, 10, 1},
		{recipe.RuleFixed, 1, 0.02, 128, 384, 0.02},
		{recipe.RuleXavier, 0, 0, 100, 300, math.Sqrt(2.0 / 400)},
		{recipe.RuleKaiming, 0, 0, 50, 300, 0.2},
	} {
		if got := recipe.Sigma(tc.rule, tc.gamma, tc.std, tc.dIn, tc.dOut); math.Abs(got/tc.want-1) > 1e-15 {
			t.Errorf("Sigma(%s, γ %g, std %g, %d, %d) = %.17g, want %.17g", tc.rule, tc.gamma, tc.std, tc.dIn, tc.dOut, got, tc.want)
		}
	}
	if !math.IsNaN(recipe.Sigma("uniform", 1, 1, 10, 10)) {
		t.Error("an unknown rule has a σ")
	}
	if recipe.DepthDivisor(arch.ClassO, 8) != 4 || recipe.DepthDivisor(arch.ClassFFNDown, 2) != 2 || recipe.DepthDivisor(arch.ClassQ, 8) != 1 {
		t.Error("DepthDivisor")
	}
}
