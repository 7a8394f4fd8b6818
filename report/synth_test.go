package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train/rundir"
)

// synthRun describes a synthetic run directory: a resolved config written with recipe.Config.Encode and
// metrics and diagnostics lines written by hand, with losses from a made-up law of γ, ε, gate and size.
type synthRun struct {
	name     string
	gamma    float64
	eps      float64
	gate     string
	seed     uint64
	dim      int  // hidden size (0: 32)
	steps    int  // configured steps (0: 60)
	stopAt   int  // last step logged (0: steps)
	diag     bool // write diagnostics.jsonl
	final    string
	ckpts    []int // checkpoint steps with real model files
	noConfig bool
	noInit   bool // no init/ (a run of a build before the step-0 weights were written)
}

// final kinds
const (
	finalNone  = ""
	finalDummy = "dummy" // config.json and model.safetensors present but not loadable (fast)
	finalReal  = "real"  // a real model: the init with its rows pulled towards each other
)

func (s synthRun) config() recipe.Config {
	c := recipe.Default()
	c.Seed = s.seed
	dim := s.dim
	if dim == 0 {
		dim = 32
	}
	mc := &c.Model.Config
	mc.Vocab, mc.Dim, mc.FFN, mc.Layers, mc.Heads, mc.SeqLen = 64, dim, arch.DefaultFFN(dim), 2, 2, 16
	mc.NormEps, mc.AttnGate = s.eps, s.gate
	c.Init.Gamma = s.gamma
	c.Train.BatchSize, c.Train.Steps, c.Train.LogInterval, c.Train.EvalInterval = 4, s.steps, 10, 20
	if c.Train.Steps == 0 {
		c.Train.Steps = 60
	}
	c.Train.DiagnosticsEvery = 20
	c.Data.Train, c.Data.Val = "/nonexistent/train.tok", "/nonexistent/val.tok"
	return c
}

// lossAt is a made-up loss: a U in γ around 1 that the fixes deepen, falling with steps and size.
func (s synthRun) lossAt(step int) float64 {
	fixed := 0.0
	if s.eps < 1e-8 && s.gate != arch.GateNone {
		fixed = 1
	}
	dim := s.dim
	if dim == 0 {
		dim = 32
	}
	final := 3 + 0.4*(s.gamma-1)*(s.gamma-1) - 0.1*fixed*s.gamma + 40*math.Pow(float64(dim*dim*20), -0.3) + 0.01*float64(s.seed%3)
	return final + 2*math.Exp(-float64(step)/15)
}

func writeJSONLines(t *testing.T, path string, lines []any) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
}

// write creates the run directory under root and returns it.
func (s synthRun) write(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, s.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := s.config()
	if !s.noConfig {
		b, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.ConfigFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	last := s.stopAt
	if last == 0 {
		last = c.Train.Steps
	}
	tokPerStep := int64(c.Train.BatchSize * c.Model.SeqLen)
	var ms []any
	v0 := s.lossAt(0) + 1
	ms = append(ms, rundir.Metrics{Step: 0, ValLoss: &v0})
	for step := 10; step <= last; step += 10 {
		m := rundir.Metrics{Step: step, Tokens: int64(step) * tokPerStep, Loss: s.lossAt(step) + 0.02, LR: 1e-3, GradNorm: 1, TokensPerS: 5000}
		if step%20 == 0 || step == c.Train.Steps {
			v := s.lossAt(step)
			m.ValLoss = &v
		}
		ms = append(ms, m)
	}
	writeJSONLines(t, filepath.Join(dir, rundir.MetricsFile), ms)
	if s.diag {
		var ds []any
		for step := 0; step <= last; step += 20 {
			ds = append(ds, map[string]any{"step": step, "diagnostics": s.diagnostics(step)})
		}
		writeJSONLines(t, filepath.Join(dir, rundir.DiagFile), ds)
	}
	if (len(s.ckpts) > 0 || s.final == finalReal) && !s.noInit {
		s.writeModel(t, filepath.Join(dir, rundir.InitDir), c, 0) // the step-0 weights, as train writes them
	}
	for _, step := range s.ckpts {
		s.writeModel(t, filepath.Join(dir, "checkpoints", fmt.Sprintf("step-%06d", step)), c, float32(step)/float32(c.Train.Steps))
	}
	switch s.final {
	case finalDummy:
		os.MkdirAll(filepath.Join(dir, rundir.FinalDir), 0o755)
		os.WriteFile(filepath.Join(dir, rundir.FinalDir, arch.ConfigFile), []byte("{}"), 0o644)
		os.WriteFile(filepath.Join(dir, rundir.FinalDir, arch.WeightsFile), nil, 0o644)
	case finalReal:
		s.writeModel(t, filepath.Join(dir, rundir.FinalDir), c, 1)
	}
	return dir
}

// writeModel saves the run's init with every q_proj row pulled a fraction pull towards the first row (a
// caricature of condensation).
func (s synthRun) writeModel(t *testing.T, dir string, c recipe.Config, pull float32) {
	t.Helper()
	pool := kernel.NewPool(1)
	defer pool.Close()
	m, err := model.New(c.Model.Config, 1, pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gammainit.Apply(m, c.Init, c.Seed); err != nil {
		t.Fatal(err)
	}
	for _, sp := range m.Specs {
		if sp.Class != arch.ClassQ {
			continue
		}
		w := m.Params.Flat[sp.Offset : sp.Offset+sp.Size()]
		rows, cols := sp.Shape[0], sp.Shape[1]
		for i := rows / 2; i < rows; i++ {
			for j := 0; j < cols; j++ {
				w[i*cols+j] = (1-pull)*w[i*cols+j] + pull*w[j]
			}
		}
	}
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
}

// diagnostics is a diagnostics payload: stable rank dipping then recovering, cosine ratio peaking, a sink in
// ungated runs and saturated norms at ε = 1e-5 with γ = 1.
func (s synthRun) diagnostics(step int) map[string]any {
	x := float64(step) / 60
	dip := 1 - 0.6*x*math.Exp(1-3*x)*3*s.gamma
	var classes []map[string]any
	var weights []map[string]any
	for i, cl := range []string{arch.ClassEmbed, arch.ClassQ, arch.ClassK, arch.ClassV, arch.ClassO, arch.ClassFFNUp, arch.ClassFFNDown} {
		sr := float64(20+5*i) * dip
		ratio := 1 + 2*(1-dip)
		classes = append(classes, map[string]any{"class": cl, "tensors": 2, "stable_rank": sr, "mean_abs_cos": 0.1 * ratio,
			"cos_ratio": ratio, "frac_above_0_9": 0.0})
		weights = append(weights, map[string]any{"name": cl + ".weight", "class": cl, "layer": 0, "rows": 32, "cols": 32,
			"stable_rank": sr, "effective_rank": nil, "mean_abs_cos": 0.1 * ratio, "cos_ratio": ratio, "frac_abs_cos_above_0_9": 0.0})
	}
	gated := s.gate != arch.GateNone
	var layers []map[string]any
	for l := 0; l < 2; l++ {
		alpha := []float64{0.6 * x, 0.2}
		if gated {
			alpha = []float64{0.05, 0.04}
		}
		r := 1.0
		if s.eps > 1e-8 {
			r = 1 - 0.3*s.gamma/float64(l+1)
		}
		layer := map[string]any{"layer": l, "hidden_rms": 0.1, "attn_norm": map[string]any{"saturation": 1 - r*r, "output_rms": r},
			"ffn_norm": map[string]any{"saturation": 1 - r*r, "output_rms": r * 0.99}, "attn_residual_ratio": 0.5, "ffn_residual_ratio": 0.4,
			"first_token_mass": alpha, "sink_alpha": alpha}
		if gated {
			layer["gate_mean"] = []float64{0.5, 0.5}
		}
		layers = append(layers, layer)
	}
	return map[string]any{"weights": weights, "classes": classes, "activations": map[string]any{
		"probe_windows": 16, "probe_len": 16, "probe_loss": s.lossAt(step), "layers": layers, "final_hidden_rms": 1,
		"final_norm": map[string]any{"saturation": 0, "output_rms": 1}, "first_token_mass": 0.2, "sink_rate": 25.0}}
}

// corners are the study's four corners.
func corners(seed uint64, diag bool, final string, ckpts []int) []synthRun {
	var out []synthRun
	for _, c := range []struct {
		name  string
		gamma float64
		fixed bool
	}{{"g0.5-default", 0.5, false}, {"g1-default", 1, false}, {"g0.5-fixed", 0.5, true}, {"g1-fixed", 1, true}} {
		r := synthRun{name: fmt.Sprintf("%s-seed%d", c.name, seed), gamma: c.gamma, eps: 1e-5, gate: arch.GateNone, seed: seed,
			diag: diag, final: final, ckpts: ckpts}
		if c.fixed {
			r.eps, r.gate = 1e-12, arch.GateElementwise
		}
		out = append(out, r)
	}
	return out
}

// synthHeatmaps is HeatmapSources' choice for d with made-up 8×8 cosine matrices in place of the models' (the
// report draws heatmaps it is given; analyze computes real ones): 1 on the diagonal, a step pattern off it.
func synthHeatmaps(d *Data, maxArms int) ([]HeatmapSet, []string) {
	srcs, problems := HeatmapSources(d, maxArms)
	var sets []HeatmapSet
	for _, src := range srcs {
		const n = 8
		s := HeatmapSet{Run: src.Run, Tensor: DefaultHeatmapTensor, Shape: [2]int{n, 16}, UsedRows: n, Problems: src.Problems}
		for k, p := range src.Panels {
			c := make([]float32, n*n)
			for i := range n {
				for j := range n {
					c[i*n+j] = float32(0.1 * float64((i+j+k)%5-2))
				}
				c[i*n+i] = 1
			}
			s.Panels = append(s.Panels, HeatmapPanel{Label: p.Label, Step: p.Step, Rows: n, C: c})
		}
		sets = append(sets, s)
	}
	return sets, problems
}
