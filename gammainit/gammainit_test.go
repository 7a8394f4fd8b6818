package gammainit

import (
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
)

func newModel(t *testing.T, c arch.Config) *model.Model {
	t.Helper()
	pool := kernel.NewPool(1)
	t.Cleanup(pool.Close)
	m, err := model.New(c, 1, pool)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func cfg(d, layers int) arch.Config {
	return arch.Config{Vocab: 512, Dim: d, FFN: arch.DefaultFFN(d), Layers: layers, Heads: 4, SeqLen: 8,
		NormEps: 1e-5, Norm: arch.NormLayer, AttnGate: arch.GateElementwise, RopeTheta: 10000}
}

// TestDrawnStdMatchesGammaRule is docs/definitions.md §6: drawn stds match d_in^(−γ) within sampling error for every tensor.
func TestDrawnStdMatchesGammaRule(t *testing.T) {
	for _, tc := range []struct {
		gamma float64
		d     int
	}{{0.5, 64}, {0.75, 128}, {1, 128}, {1.5, 256}, {1, 256}, {0.5, 128}} {
		gamma := tc.gamma
		m := newModel(t, cfg(tc.d, 2))
		stds, err := Apply(m, recipe.Init{Rule: recipe.RuleGamma, Gamma: gamma}, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stds {
			want := math.Pow(float64(s.FanIn), -gamma)
			if s.Intended != want {
				t.Errorf("γ=%g %s: intended %g, want %g", gamma, s.Name, s.Intended, want)
			}
			n := 0
			for _, ts := range m.Specs {
				if ts.Name == s.Name {
					n = ts.Size()
				}
			}
			// The sample std of n normal draws has relative standard error ≈ 1/sqrt(2n); allow 5 of them.
			if tol := 5 / math.Sqrt(2*float64(n)); math.Abs(s.Drawn/want-1) > tol {
				t.Errorf("γ=%g %s: drawn std %g, want %g ± %.1f%%", gamma, s.Name, s.Drawn, want, 100*tol)
			}
		}
	}
	// docs/definitions.md §2's reference values.
	for _, tc := range []struct{ d, gamma, want float64 }{{128, 0.5, 0.0884}, {128, 1, 0.00781}, {256, 1, 0.00391}, {512, 0.5, 0.0442}} {
		if got := math.Pow(tc.d, -tc.gamma); math.Abs(got-tc.want) > 5e-5 {
			t.Errorf("d=%g γ=%g: σ=%g, docs/definitions.md says %g", tc.d, tc.gamma, got, tc.want)
		}
	}
}

func TestFanInPerClass(t *testing.T) {
	m := newModel(t, cfg(64, 1))
	stds, _ := Apply(m, recipe.DefaultInit(), 1)
	want := map[string]int{arch.ClassEmbed: 64, arch.ClassQ: 64, arch.ClassO: 64, arch.ClassFFNDown: arch.DefaultFFN(64), arch.ClassHead: 64, arch.ClassGate: 64}
	for _, s := range stds {
		if w, ok := want[s.Class]; ok && s.FanIn != w {
			t.Errorf("%s: d_in %d, want %d", s.Name, s.FanIn, w)
		}
	}
	for _, ts := range m.Specs {
		v := m.Params.Flat[ts.Offset : ts.Offset+ts.Size()]
		switch ts.Class {
		case arch.ClassNorm:
			if v[0] != 1 || v[len(v)-1] != 1 {
				t.Errorf("%s: gain not 1", ts.Name)
			}
		case arch.ClassNormBias:
			if v[0] != 0 {
				t.Errorf("%s: bias not 0", ts.Name)
			}
		}
	}
}

// TestStreamsAreIndependentOfOtherTensors: adding layers does not change the draws of existing tensors.
func TestStreamsAreIndependentOfOtherTensors(t *testing.T) {
	a, b := newModel(t, cfg(32, 1)), newModel(t, cfg(32, 3))
	Apply(a, recipe.DefaultInit(), 42)
	Apply(b, recipe.DefaultInit(), 42)
	for _, ta := range a.Specs {
		for _, tb := range b.Specs {
			if ta.Name == tb.Name && ta.Name != "model.norm.weight" {
				va, vb := a.Params.Flat[ta.Offset:ta.Offset+ta.Size()], b.Params.Flat[tb.Offset:tb.Offset+tb.Size()]
				for i := range va {
					if va[i] != vb[i] {
						t.Fatalf("%s differs at %d when layers are added", ta.Name, i)
					}
				}
			}
		}
	}
}

func TestRulesAndOverrides(t *testing.T) {
	half, std := 0.5, 0.02
	r := recipe.Init{Rule: recipe.RuleGamma, Gamma: 1, DepthScale: true, Classes: map[string]recipe.InitOverride{
		arch.ClassEmbed: {Std: &std}, arch.ClassHead: {Gamma: &half}, arch.ClassQ: {Rule: recipe.RuleXavier}, arch.ClassK: {Rule: recipe.RuleKaiming},
	}}
	L := 4
	for _, tc := range []struct {
		class string
		shape []int
		want  float64
	}{
		{arch.ClassEmbed, []int{1000, 100}, 0.02},
		{arch.ClassHead, []int{1000, 100}, 0.1},
		{arch.ClassQ, []int{100, 300}, math.Sqrt(2.0 / 400)},
		{arch.ClassK, []int{100, 50}, math.Sqrt(2.0 / 50)},
		{arch.ClassV, []int{100, 50}, 1.0 / 50},
		{arch.ClassO, []int{100, 50}, 1.0 / 50 / math.Sqrt(8)},
	} {
		got := r.StdFor(arch.TensorSpec{Class: tc.class, Shape: tc.shape}, L)
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: std %g, want %g", tc.class, got, tc.want)
		}
	}
	if g := GammaEff(0.02, 512); math.Abs(g-0.6272) > 1e-3 {
		t.Errorf("γ_eff(0.02, 512) = %g", g)
	}
	for _, bad := range []recipe.Init{{Rule: "uniform"}, {Rule: recipe.RuleGamma, Gamma: -1}, {Rule: recipe.RuleFixed}, {Rule: recipe.RuleGamma, Classes: map[string]recipe.InitOverride{"qq": {}}}} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "init.") {
			t.Errorf("%+v: error %v, want one naming the init key", bad, err)
		}
	}
}

// TestGroupedQueryAttentionAndQKVBias: under grouped-query attention k_proj and v_proj keep d_in = d, so their
// σ and even their draws are those of the multi-head model's first KV·d_h rows (same seed, same stream); q/k/v
// biases start at 0 and, not being matrices, are not in the init record.
func TestGroupedQueryAttentionAndQKVBias(t *testing.T) {
	mha := cfg(128, 1)
	gqa := mha
	gqa.KVHeads, gqa.QKVBias = 1, true
	a, b := newModel(t, mha), newModel(t, gqa)
	if _, err := Apply(a, recipe.DefaultInit(), 3); err != nil {
		t.Fatal(err)
	}
	stds, err := Apply(b, recipe.DefaultInit(), 3)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(m *model.Model, name string) []float32 {
		for _, ts := range m.Specs {
			if ts.Name == name {
				return m.Params.Flat[ts.Offset : ts.Offset+ts.Size()]
			}
		}
		t.Fatalf("no tensor %s", name)
		return nil
	}
	for _, p := range []string{"k_proj", "v_proj"} {
		name := "model.layers.0.self_attn." + p + ".weight"
		va, vb := spec(a, name), spec(b, name)
		if len(vb) != gqa.KVDim()*gqa.Dim || len(va) != mha.AttnDim()*mha.Dim {
			t.Fatalf("%s: %d elements with GQA, %d without", name, len(vb), len(va))
		}
		for i, v := range vb {
			if v != va[i] {
				t.Fatalf("%s element %d: %g with GQA, %g without", name, i, v, va[i])
			}
		}
	}
	var biases int
	for _, ts := range b.Specs {
		if ts.Class != arch.ClassQKVBias {
			continue
		}
		biases++
		for i, v := range spec(b, ts.Name) {
			if v != 0 {
				t.Fatalf("%s element %d is %g, want 0", ts.Name, i, v)
			}
		}
	}
	if biases != 3 {
		t.Errorf("%d q/k/v bias tensors, want 3", biases)
	}
	for _, s := range stds {
		if s.Class == arch.ClassQKVBias {
			t.Errorf("%s in the init record", s.Name)
		}
		if (s.Class == arch.ClassK || s.Class == arch.ClassV) && (s.FanIn != 128 || s.Intended != 1.0/128) {
			t.Errorf("%s: d_in %d, σ %g; want 128, 1/128", s.Name, s.FanIn, s.Intended)
		}
	}
}
