package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/optim"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/scale"
)

func cfg(t *testing.T, preset string, sets ...string) arch.Config {
	t.Helper()
	p, err := arch.LookupPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config
	for _, kv := range append([]string{"max_position_embeddings=32"}, sets...) {
		k, v, _ := strings.Cut(kv, "=")
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func newPool(t *testing.T) *kernel.Pool {
	pool := kernel.NewPool(1)
	t.Cleanup(pool.Close)
	return pool
}

// applied returns an in-memory model initialised by r.
func applied(t *testing.T, c arch.Config, r recipe.Init, seed uint64) *model.Model {
	t.Helper()
	m, err := model.New(c, 2, newPool(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gammainit.Apply(m, r, seed); err != nil {
		t.Fatal(err)
	}
	return m
}

// saveAs writes m's weights as one safetensors file of dtype next to a config.json from model.Save.
func saveAs(t *testing.T, m *model.Model, dir string, dtype safetensors.DType) {
	t.Helper()
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	w := safetensors.Create(filepath.Join(dir, arch.WeightsFile), nil)
	for _, s := range m.Specs {
		w.AddFloat32As(s.Name, dtype, s.Shape, m.Params.Flat[s.Offset:s.Offset+s.Size()])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// editConfig rewrites fields of dir/config.json.
func editConfig(t *testing.T, dir string, set map[string]any) {
	t.Helper()
	path := filepath.Join(dir, arch.ConfigFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for k, v := range set {
		m[k] = v
	}
	b, _ = json.Marshal(m)
	os.WriteFile(path, b, 0o644)
}

// train runs a few AdamW steps on random tokens, which moves every matrix and norm gain off its init.
func train(t *testing.T, m *model.Model, steps int) {
	t.Helper()
	opt, err := optim.NewAdamW(recipe.DefaultAdamW(), m.Specs, m.Pool())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := m.Batch() * m.Config.SeqLen
	in, tg := make([]int32, n), make([]int32, n)
	for range steps {
		for i := range in {
			in[i], tg[i] = int32(rng.IntN(64)), int32(rng.IntN(64))
		}
		if _, err := m.Forward(in, tg); err != nil {
			t.Fatal(err)
		}
		m.Backward()
		opt.Update(m.Params.Flat, m.Grads.Flat, 3e-3, 1)
		m.ZeroGrads()
	}
}

func ptr[T any](v T) *T { return &v }

// TestAudit initialises models with each rule (through scale.Init, or in memory and saved in another dtype or
// layout) and checks that the audit names the rule, its γ and the depth scaling, and calls trained models
// trained.
func TestAudit(t *testing.T) {
	fixed := 0.02
	half := 0.5
	type want struct {
		rule    string // expected in Rules (or, with overrides, as Main)
		gamma   float64
		depth   *bool
		trained bool
		verdict string // substring of the verdict
	}
	cases := []struct {
		name   string
		cfg    arch.Config
		recipe recipe.Init
		write  func(t *testing.T, dir string, c arch.Config, r recipe.Init) // nil: scale.Init, f32, no record
		want   want
	}{
		{"gamma 1", cfg(t, "tiny"), recipe.DefaultInit(), nil,
			want{rule: "γ-rule γ=1", gamma: 1, depth: ptr(false), verdict: "untrained: γ-rule γ=1"}},
		{"gamma 0.5 depth bf16 sharded", cfg(t, "tiny"), recipe.Init{Rule: recipe.RuleGamma, Gamma: 0.5, DepthScale: true},
			func(t *testing.T, dir string, c arch.Config, r recipe.Init) {
				if _, err := scale.Init(dir, c, r, 3, scale.InitOptions{DType: safetensors.BF16, ShardSize: 300_000, Record: &gammainit.Record{Recipe: r, Seed: 3}}); err != nil {
					t.Fatal(err)
				}
			},
			want{rule: "γ-rule γ=0.5 with 1/sqrt(2L) on o_proj/down_proj", gamma: 0.5, depth: ptr(true), verdict: "(as smallinit_init records)"}},
		{"fixed 0.02", cfg(t, "tiny"), recipe.Init{Rule: recipe.RuleFixed, Std: 0.02}, nil,
			want{rule: "fixed std 0.02", depth: ptr(false)}},
		{"fixed 0.02 depth", cfg(t, "small"), recipe.Init{Rule: recipe.RuleFixed, Std: 0.02, DepthScale: true}, nil,
			want{rule: "fixed std 0.02 with 1/sqrt(2L) on o_proj/down_proj", depth: ptr(true)}},
		{"fixed 0.006", cfg(t, "tiny"), recipe.Init{Rule: recipe.RuleFixed, Std: 0.006}, nil,
			want{rule: "fixed std 0.006", depth: ptr(false)}},
		{"xavier", cfg(t, "tiny"), recipe.Init{Rule: recipe.RuleXavier}, nil, want{rule: "xavier", depth: ptr(false)}},
		{"kaiming depth", cfg(t, "tiny"), recipe.Init{Rule: recipe.RuleKaiming, DepthScale: true}, nil,
			want{rule: "kaiming with 1/sqrt(2L) on o_proj/down_proj", depth: ptr(true)}},
		{"gamma 1 embed fixed head gamma 0.5", cfg(t, "tiny"), recipe.Init{Rule: recipe.RuleGamma, Gamma: 1,
			Classes: map[string]recipe.InitOverride{arch.ClassEmbed: {Std: &fixed}, arch.ClassHead: {Gamma: &half}}}, nil,
			want{rule: "γ-rule γ=1", gamma: 1, depth: ptr(false), verdict: "overrides: embed fixed std 0.02, head γ-rule γ=0.5"}},
		{"moe shared expert kaiming", cfg(t, "tiny-moe", "shared_expert_intermediate_size=96"), recipe.Init{Rule: recipe.RuleKaiming}, nil,
			want{rule: "kaiming", depth: ptr(false)}},
		{"qwen3 gamma 0.75 bf16", cfg(t, "tiny", "qk_norm=true"), recipe.Init{Rule: recipe.RuleGamma, Gamma: 0.75},
			func(t *testing.T, dir string, c arch.Config, r recipe.Init) {
				if _, err := scale.Init(dir, c, r, 9, scale.InitOptions{DType: safetensors.BF16}); err != nil {
					t.Fatal(err)
				}
			}, want{rule: "γ-rule γ=0.75", gamma: 0.75, depth: ptr(false)}},
		{"layernorm gate tied f16", cfg(t, "tiny", "norm=layernorm", "attn_gate=headwise", "tie_word_embeddings=true"), recipe.DefaultInit(),
			func(t *testing.T, dir string, c arch.Config, r recipe.Init) {
				saveAs(t, applied(t, c, r, 4), dir, safetensors.F16)
			}, want{rule: "γ-rule γ=1", gamma: 1, depth: ptr(false)}},
		{"qwen3_moe layout gamma 1 depth", cfg(t, "tiny-moe", "qk_norm=true"), recipe.Init{Rule: recipe.RuleGamma, Gamma: 1, DepthScale: true},
			func(t *testing.T, dir string, c arch.Config, r recipe.Init) {
				saveAs(t, applied(t, c, r, 4), dir, safetensors.BF16)
				editConfig(t, dir, map[string]any{"model_type": "qwen3_moe", "architectures": []string{"Qwen3MoeForCausalLM"}, "qk_norm": nil})
			}, want{rule: "γ-rule γ=1 with 1/sqrt(2L) on o_proj/down_proj", gamma: 1, depth: ptr(true)}},
		{"trained", cfg(t, "tiny"), recipe.DefaultInit(),
			func(t *testing.T, dir string, c arch.Config, r recipe.Init) {
				m := applied(t, c, r, 5)
				train(t, m, 4)
				if err := m.Save(dir, gammainit.Record{Recipe: r, Seed: 5}); err != nil {
					t.Fatal(err)
				}
			}, want{trained: true, verdict: "(smallinit_init records γ-rule γ=1, which the weights no longer match)"}},
		{"trained fixed", cfg(t, "tiny"), recipe.Init{Rule: recipe.RuleFixed, Std: 0.02},
			func(t *testing.T, dir string, c arch.Config, r recipe.Init) {
				m := applied(t, c, r, 5)
				train(t, m, 2)
				saveAs(t, m, dir, safetensors.BF16)
			}, want{trained: true, depth: ptr(false), verdict: "trained: the norm gains have moved"}},
		{"gains moved", cfg(t, "tiny"), recipe.DefaultInit(),
			func(t *testing.T, dir string, c arch.Config, r recipe.Init) {
				m := applied(t, c, r, 5)
				m.Params.NormF[3] = 1.25
				saveAs(t, m, dir, safetensors.F32)
			}, want{rule: "γ-rule γ=1", gamma: 1, depth: ptr(false), trained: true,
				verdict: "trained: the norm gains have moved (max |g−1| = 0.25), though the matrices still fit γ-rule γ=1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			if tc.write == nil {
				if _, err := scale.Init(dir, tc.cfg, tc.recipe, 1, scale.InitOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				tc.write(t, dir, tc.cfg, tc.recipe)
			}
			rep, err := Run(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			rep.WriteText(&text)
			defer func() {
				if t.Failed() {
					t.Logf("report:\n%s", text.String())
				}
			}()
			if rep.Trained != tc.want.trained {
				t.Errorf("trained = %v, want %v", rep.Trained, tc.want.trained)
			}
			if !strings.Contains(rep.Verdict, tc.want.verdict) {
				t.Errorf("verdict %q, want it to contain %q", rep.Verdict, tc.want.verdict)
			}
			if w := tc.want.rule; w != "" {
				if len(rep.Rules) == 0 && rep.Main != w || len(rep.Rules) > 0 && rep.Rules[0] != w {
					t.Errorf("rules %q (main %q), want %q first", rep.Rules, rep.Main, w)
				}
			}
			if tc.want.gamma > 0 && (rep.Gamma == nil || math.Abs(*rep.Gamma-tc.want.gamma) > 0.005) {
				t.Errorf("γ = %v, want %g", rep.Gamma, tc.want.gamma)
			}
			if (rep.DepthScaled == nil) != (tc.want.depth == nil) || rep.DepthScaled != nil && *rep.DepthScaled != *tc.want.depth {
				t.Errorf("depth scaled %v, want %v", rep.DepthScaled, tc.want.depth)
			}
			if tc.want.depth != nil && *tc.want.depth {
				for _, g := range rep.Classes {
					if g.DepthRatio != nil && math.Abs(*g.DepthRatio*math.Sqrt(2*float64(tc.cfg.Layers))-1) > 0.05 {
						t.Errorf("%s: depth ratio %g, want 1/sqrt(2L)", g.Label, *g.DepthRatio)
					}
				}
			}
			if !strings.HasPrefix(rep.Verdict, map[bool]string{false: "untrained: ", true: "trained: "}[tc.want.trained]) {
				t.Errorf("verdict %q does not start as it should", rep.Verdict)
			}
			if _, err := json.Marshal(rep); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestAuditMeasure(t *testing.T) {
	for _, tc := range []struct {
		w          []float32
		gain       bool
		mean, std  float64
		maxDev     float64
		n          int64
		sumSq, sum float64
	}{
		{[]float32{1, 1, 1, 1, 1}, true, 1, 0, 0, 5, 5, 5},
		{[]float32{1, -1, 1, -1, 2, -2}, false, 0, math.Sqrt(12.0 / 5), 2, 6, 12, 0},
		{[]float32{0.5, 1.5, 1}, true, 1, 0.5, 0.5, 3, 3.5, 3},
	} {
		m := Measure(tc.w, tc.gain)
		if m.N != tc.n || m.Sum != tc.sum || m.SumSq != tc.sumSq || m.MaxDev != tc.maxDev || math.Abs(m.Mean()-tc.mean) > 1e-12 || math.Abs(m.Std()-tc.std) > 1e-12 {
			t.Errorf("Measure(%v) = %+v mean %g std %g", tc.w, m, m.Mean(), m.Std())
		}
	}
}

// TestAuditZeroAndNaN: a zero matrix is "zeros" and a NaN model is trained, and both encode as JSON.
func TestAuditZeroAndNaN(t *testing.T) {
	c := cfg(t, "tiny")
	for _, tc := range []struct {
		name    string
		edit    func(m *model.Model)
		verdict string
	}{
		{"zero o_proj", func(m *model.Model) {
			for l := range m.Params.Layers {
				clear(m.Params.Layers[l].O)
			}
		}, "overrides: o zeros"},
		{"nan", func(m *model.Model) { m.Params.Layers[1].Down[7] = float32(math.NaN()) }, "trained: no rule applies"},
	} {
		m := applied(t, c, recipe.DefaultInit(), 1)
		tc.edit(m)
		var ts []Tensor
		for _, s := range m.Specs {
			ts = append(ts, Tensor{Spec: s, DType: safetensors.F32, Moments: Measure(m.Params.Flat[s.Offset:s.Offset+s.Size()], s.Class == arch.ClassNorm)})
		}
		rep := Analyse(c, ts, nil, 0)
		if !strings.Contains(rep.Verdict, tc.verdict) {
			t.Errorf("%s: verdict %q, want %q", tc.name, rep.Verdict, tc.verdict)
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// exactTensors returns every tensor of c with the moments of an exact draw from recipe r: each matrix's sample
// std is gammainit's σ for it (StdFor), norm gains are ones and biases zeros. (Pooled over a group's k tensors
// the sample std is then σ·sqrt((N−k)/(N−1)), low by O(k/N): the γ estimated from it is off by ~1e-6.)
func exactTensors(c arch.Config, r recipe.Init, scaleClass string, factor float64) []Tensor {
	var ts []Tensor
	for _, s := range c.Tensors() {
		n := int64(s.Size())
		var m Moments
		switch gammainit.StartOf(s.Class) {
		case gammainit.StartOnes:
			m = Moments{N: n, Sum: float64(n), SumSq: float64(n)}
		case gammainit.StartZeros:
			m = Moments{N: n}
		default:
			sigma := r.StdFor(s, c.Layers)
			if s.Class == scaleClass {
				sigma *= factor
			}
			m = Moments{N: n, SumSq: sigma * sigma * float64(n-1), MaxDev: 4 * sigma}
		}
		ts = append(ts, Tensor{Spec: s, DType: safetensors.F32, Moments: m})
	}
	return ts
}

// TestAuditNamesEachRuleAtGammainitSigma: a model whose every matrix has exactly the σ gammainit gives it, for
// every rule with and without depth scaling and for per-class overrides, on dense, MoE and Qwen3 layouts, is
// audited as that rule (its γ, its depth scaling, its overrides), and the σ the audit expects of each group
// under the recorded recipe is gammainit's. Moving one class off its σ by 20% makes the audit say so.
func TestAuditNamesEachRuleAtGammainitSigma(t *testing.T) {
	std, half, low := 0.02, 0.5, 0.006
	configs := map[string]arch.Config{
		"tiny":     cfg(t, "tiny"),
		"tiny-moe": cfg(t, "tiny-moe", "shared_expert_intermediate_size=96"),
		"qwen3":    cfg(t, "tiny", "qk_norm=true", "attn_gate=headwise"),
	}
	type tcase struct {
		recipe    recipe.Init
		rule      rule              // the rule the audit should name
		overrides map[string]string // class label → rule, when the recipe overrides classes
	}
	var cases []tcase
	for _, depth := range []bool{false, true} {
		for _, g := range []float64{0.5, 0.75, 1} {
			cases = append(cases, tcase{recipe: recipe.Init{Rule: recipe.RuleGamma, Gamma: g, DepthScale: depth},
				rule: rule{kind: recipe.RuleGamma, param: g, depth: depth}})
		}
		for _, s := range []float64{0.02, low} {
			cases = append(cases, tcase{recipe: recipe.Init{Rule: recipe.RuleFixed, Std: s, DepthScale: depth},
				rule: rule{kind: recipe.RuleFixed, param: s, depth: depth}})
		}
		for _, k := range []string{recipe.RuleXavier, recipe.RuleKaiming} {
			cases = append(cases, tcase{recipe: recipe.Init{Rule: k, DepthScale: depth}, rule: rule{kind: k, depth: depth}})
		}
	}
	cases = append(cases, tcase{
		recipe: recipe.Init{Rule: recipe.RuleGamma, Gamma: 1, Classes: map[string]recipe.InitOverride{
			arch.ClassEmbed: {Std: &std}, arch.ClassHead: {Gamma: &half}, arch.ClassV: {Rule: recipe.RuleXavier}}},
		rule:      rule{kind: recipe.RuleGamma, param: 1},
		overrides: map[string]string{arch.ClassEmbed: "fixed std 0.02", arch.ClassHead: "γ-rule γ=0.5", arch.ClassV: "xavier"},
	})
	for cname, c := range configs {
		for _, tc := range cases {
			name := fmt.Sprintf("%s %s", cname, tc.rule)
			raw, _ := json.Marshal(gammainit.Record{Recipe: tc.recipe, Seed: 1})
			rep := Analyse(c, exactTensors(c, tc.recipe, "", 1), raw, 0)
			want := tc.rule.String()
			if tc.overrides == nil {
				if len(rep.Rules) == 0 || rep.Rules[0] != want {
					t.Errorf("%s: rules %q (main %q), want %q first", name, rep.Rules, rep.Main, want)
				}
			} else {
				if rep.Main != want {
					t.Errorf("%s: main rule %q, want %q", name, rep.Main, want)
				}
				for label, o := range tc.overrides {
					if rep.Overrides[label] != o {
						t.Errorf("%s: override of %s %q, want %q (all: %v)", name, label, rep.Overrides[label], o, rep.Overrides)
					}
				}
				if len(rep.Overrides) != len(tc.overrides) {
					t.Errorf("%s: overrides %v, want %v", name, rep.Overrides, tc.overrides)
				}
			}
			if rep.Trained || !strings.HasPrefix(rep.Verdict, "untrained: ") || !strings.HasSuffix(rep.Verdict, "(as smallinit_init records)") {
				t.Errorf("%s: verdict %q", name, rep.Verdict)
			}
			if tc.rule.kind == recipe.RuleGamma && (rep.Gamma == nil || math.Abs(*rep.Gamma-tc.rule.param) > 1e-4) {
				t.Errorf("%s: γ %v, want %g", name, fmtPtr(rep.Gamma), tc.rule.param)
			}
			if rep.DepthScaled == nil || *rep.DepthScaled != tc.recipe.DepthScale {
				t.Errorf("%s: depth scaled %v, want %v", name, rep.DepthScaled, tc.recipe.DepthScale)
			}
			for _, g := range rep.Classes {
				if want := tc.recipe.StdFor(g.shape, c.Layers); g.DeclaredStd == nil || *g.DeclaredStd != want || !*g.DeclaredOK {
					t.Errorf("%s: %s declared σ %v (ok %v), gammainit gives %g", name, g.Label, g.DeclaredStd, g.DeclaredOK, want)
				}
			}

			// One class 20% off its σ: no longer explained by the rule alone, and the record no longer matches.
			off := Analyse(c, exactTensors(c, tc.recipe, arch.ClassO, 1.2), raw, 0)
			if slices.Contains(off.Rules, want) || off.Declared == nil || off.Declared.Matches {
				t.Errorf("%s with o_proj ×1.2: rules %q, declared %+v; want the rule and the record refused", name, off.Rules, off.Declared)
			}
		}
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%.17g", *p)
}
