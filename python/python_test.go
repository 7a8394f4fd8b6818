// Package python runs the PyTorch package's tests (python/tests) and its agreement with the Go engine under
// `go test ./...`. Every test needs a python3 that imports torch (Debian: apt-get install -y python3-torch) and
// is skipped, saying so, without one.
package python

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/safetensors"
)

// pythonWithTorch returns a python3 that can import torch, or "".
func pythonWithTorch() string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import torch").Run() == nil {
			return py
		}
	}
	return ""
}

func needTorch(t *testing.T) string {
	t.Helper()
	py := pythonWithTorch()
	if py == "" {
		t.Skip("no python3 with torch: install python3-torch (apt-get install -y python3-torch) to run the PyTorch package's tests")
	}
	return py
}

// run runs a command in dir with PYTHONPATH set to this directory and returns its stdout; a failure is fatal.
func run(t *testing.T, dir string, name string, args ...string) []byte {
	t.Helper()
	here, _ := filepath.Abs(".")
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+here, "OMP_NUM_THREADS=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

// TestPythonSuite runs python/tests with unittest: gamma_init_ against the table Go writes, the torchtitan and
// GPT-2 namings, the gate and ε drop-ins, the sampler order, token files and an exact resume.
func TestPythonSuite(t *testing.T) {
	py := needTorch(t)
	run(t, ".", py, "-W", "error::ResourceWarning", "-m", "unittest", "discover", "-s", "tests", "-t", ".")
}

// world is what the agreement tests share: a built smallinit, prepared data, a model directory and the Go run.
type world struct {
	py, bin, dir, model, goRun, pyRun string
}

func setup(t *testing.T) world {
	py := needTorch(t)
	dir := t.TempDir()
	w := world{py: py, dir: dir, bin: filepath.Join(dir, "smallinit"), model: filepath.Join(dir, "m0"),
		goRun: filepath.Join(dir, "go"), pyRun: filepath.Join(dir, "py1")}
	run(t, "..", "go", "build", "-o", w.bin, "./cmd/smallinit")
	run(t, dir, w.bin, "data", "prepare", "--out", filepath.Join(dir, "data"), "--vocab", "1024")
	run(t, dir, w.bin, "init", "--preset", "tiny", "--set", "vocab_size=1024", "--set", "hidden_size=64",
		"--set", "num_hidden_layers=2", "--set", "num_attention_heads=4", "--set", "max_position_embeddings=32",
		"--set", "attn_gate=elementwise", "--gamma", "1", "--seed", "7", "--out", w.model)
	cfg := fmt.Sprintf(`seed = 7
[model]
preset = "tiny"
vocab_size = 1024
hidden_size = 64
num_hidden_layers = 2
num_attention_heads = 4
max_position_embeddings = 32
attn_gate = "elementwise"
[init]
rule = "gamma"
gamma = 1.0
[schedule]
lr = 3e-3
warmup_steps = 5
[data]
train = %q
val = %q
[train]
batch_size = 8
steps = 20
log_interval = 1
eval_interval = 10
eval_windows = 16
checkpoint_interval = 10
diagnostics_interval = 10
threads = 1
`, filepath.Join(dir, "data", "train.tok"), filepath.Join(dir, "data", "val.tok"))
	if err := os.WriteFile(filepath.Join(dir, "run.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, w.bin, "train", "--config", filepath.Join(dir, "run.toml"), "--out", w.goRun)
	run(t, dir, py, "-m", "smallinit_torch", "train", "--model", w.model, "--config",
		filepath.Join(w.goRun, "config.toml"), "--out", w.pyRun, "--quiet")
	return w
}

type metric struct {
	Step     int      `json:"step"`
	Loss     float64  `json:"loss"`
	GradNorm float64  `json:"grad_norm"`
	LR       float64  `json:"lr"`
	ValLoss  *float64 `json:"val_loss"`
}

func readMetrics(t *testing.T, dir string) []metric {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []metric
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m metric
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func rel(a, b float64) float64 {
	return math.Abs(a-b) / math.Max(math.Max(math.Abs(a), math.Abs(b)), 1e-300)
}

// compareLosses checks every logged step's loss (and validation loss) and returns the largest relative difference.
func compareLosses(t *testing.T, want, got []metric, tol float64) float64 {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d metrics lines, want %d", len(got), len(want))
	}
	var worst float64
	for i := range want {
		a, b := want[i], got[i]
		if a.Step != b.Step {
			t.Fatalf("line %d: step %d, want %d", i, b.Step, a.Step)
		}
		d := rel(a.Loss, b.Loss)
		if a.ValLoss != nil {
			if b.ValLoss == nil {
				t.Fatalf("step %d: no val_loss", a.Step)
			}
			d = math.Max(d, rel(*a.ValLoss, *b.ValLoss))
		}
		if d > tol || rel(a.LR, b.LR) > 1e-12 {
			t.Errorf("step %d: loss %.9g vs %.9g, val %v vs %v, lr %g vs %g", a.Step, a.Loss, b.Loss, a.ValLoss, b.ValLoss, a.LR, b.LR)
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// compareJSON compares two decoded JSON values: numbers within tol relative (or 1e-12 absolute), everything
// else equal; skip lists object keys not compared. A null on either side of a number is reported.
func compareJSON(t *testing.T, path string, a, b any, tol float64, skip map[string]bool, worst *float64) {
	t.Helper()
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			t.Errorf("%s: object vs %T", path, b)
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if skip[k] {
				continue
			}
			if _, ok := y[k]; !ok {
				t.Errorf("%s.%s: missing from the Python record", path, k)
				continue
			}
			compareJSON(t, path+"."+k, x[k], y[k], tol, skip, worst)
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			t.Errorf("%s: list of %d vs %v", path, len(x), b)
			return
		}
		for i := range x {
			compareJSON(t, fmt.Sprintf("%s[%d]", path, i), x[i], y[i], tol, skip, worst)
		}
	case float64:
		y, ok := b.(float64)
		if !ok {
			t.Errorf("%s: %v vs %v", path, a, b)
			return
		}
		d := rel(x, y)
		if math.Abs(x-y) <= 1e-12 {
			d = 0
		}
		if d > tol {
			t.Errorf("%s: Go %.10g, Python %.10g (relative %.2e)", path, x, y, d)
		}
		*worst = math.Max(*worst, d)
	default:
		if a != nil && a != b {
			t.Errorf("%s: Go %v, Python %v", path, a, b)
		}
	}
}

func readTensors(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, info := range f.Tensors() {
		v := make([]float32, info.NumElements())
		if err := f.ReadFloat32(info.Name, v); err != nil {
			t.Fatal(err)
		}
		out[info.Name] = v
	}
	return out
}

// TestGoAndPyTorchAgree trains the same model directory on the same data and config with Go and with the
// PyTorch trainer (1 process; 2 gloo processes; gradient accumulation), and compares losses, final weights,
// diagnostics.jsonl, analyze, report and audit.
func TestGoAndPyTorchAgree(t *testing.T) {
	w := setup(t)
	goM, pyM := readMetrics(t, w.goRun), readMetrics(t, w.pyRun)

	t.Run("losses", func(t *testing.T) {
		worst := compareLosses(t, goM, pyM, 1e-4)
		t.Logf("20 steps: largest relative loss difference Go vs PyTorch %.2e", worst)
	})

	t.Run("final weights", func(t *testing.T) {
		g, p := readTensors(t, filepath.Join(w.goRun, "final", "model.safetensors")), readTensors(t, filepath.Join(w.pyRun, "final", "model.safetensors"))
		if len(g) != len(p) {
			t.Fatalf("%d tensors, want %d", len(p), len(g))
		}
		var worstMax, worstRMS float64
		for name, a := range g {
			b, ok := p[name]
			if !ok || len(b) != len(a) {
				t.Fatalf("%s: missing or of another size in the PyTorch model", name)
			}
			var maxW, maxD, ss, sd float64
			for i := range a {
				maxW = math.Max(maxW, math.Abs(float64(a[i])))
				d := math.Abs(float64(a[i]) - float64(b[i]))
				maxD = math.Max(maxD, d)
				ss += float64(a[i]) * float64(a[i])
				sd += d * d
			}
			rm, rr := maxD/maxW, math.Sqrt(sd/ss)
			// float32 tolerance after 20 AdamW steps: an element whose gradient is rounding noise may take an
			// update of the other sign (|Δ| ≤ 2 lr), so the bound is on the largest difference relative to the
			// tensor's largest value and on the RMS of the difference relative to the tensor's.
			if rm > 1e-3 || rr > 1e-4 {
				t.Errorf("%s: max |Δ| / max |w| = %.2e, RMS(Δ)/RMS(w) = %.2e", name, rm, rr)
			}
			worstMax, worstRMS = math.Max(worstMax, rm), math.Max(worstRMS, rr)
		}
		t.Logf("final weights: largest max|Δ|/max|w| %.2e, largest RMS(Δ)/RMS(w) %.2e", worstMax, worstRMS)
	})

	t.Run("diagnostics.jsonl", func(t *testing.T) {
		read := func(dir string) []any {
			b, err := os.ReadFile(filepath.Join(dir, "diagnostics.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var out []any
			for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
				var v any
				if err := json.Unmarshal(l, &v); err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
			return out
		}
		g, p := read(w.goRun), read(w.pyRun)
		if len(g) != 3 || len(p) != 3 {
			t.Fatalf("diagnostics lines: Go %d, PyTorch %d, want 3 (steps 0, 10, 20)", len(g), len(p))
		}
		skip := map[string]bool{"stable_rank_exact": true, "effective_rank": true}
		for i := range g {
			var worst float64
			compareJSON(t, fmt.Sprintf("line %d", i), g[i], p[i], 1e-4, skip, &worst)
			t.Logf("diagnostics.jsonl line %d: largest relative difference %.2e", i, worst)
		}
	})

	t.Run("analyze", func(t *testing.T) {
		// the trained dense model, and an MoE model with a shared expert (expert load, router entropy)
		moe := filepath.Join(w.dir, "moe")
		run(t, w.dir, w.bin, "init", "--preset", "tiny", "--set", "vocab_size=1024", "--set", "hidden_size=64",
			"--set", "num_hidden_layers=2", "--set", "num_attention_heads=4", "--set", "max_position_embeddings=32",
			"--set", "ffn=moe", "--set", "num_experts=4", "--set", "num_experts_per_tok=2", "--set", "moe_intermediate_size=64",
			"--set", "shared_expert_intermediate_size=32", "--set", "decoder_sparse_step=1", "--set", "attn_gate=headwise",
			"--gamma", "0.5", "--seed", "3", "--out", moe)
		val := filepath.Join(w.dir, "data", "val.tok")
		for _, m := range []string{filepath.Join(w.goRun, "final"), moe} {
			var g, p any
			if err := json.Unmarshal(run(t, w.dir, w.bin, "analyze", "--model", m, "--tokens", val, "--json"), &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(run(t, w.dir, w.py, "-m", "smallinit_torch", "analyze", "--model", m, "--tokens", val), &p); err != nil {
				t.Fatal(err)
			}
			var worst float64
			compareJSON(t, "analyze", g, p, 1e-4, map[string]bool{"model": true, "stable_rank_exact": true}, &worst)
			t.Logf("%s: analyze --json vs PyTorch diagnostics: largest relative difference %.2e", filepath.Base(m), worst)
		}
	})

	t.Run("report and gate round trip", func(t *testing.T) {
		html := filepath.Join(w.dir, "report.html")
		run(t, w.dir, w.bin, "report", w.goRun, w.pyRun, "--out", html)
		b, err := os.ReadFile(html)
		if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("py1")) {
			t.Fatalf("report of the PyTorch run: %v, %d bytes, has svg %v, names py1 %v", err, len(b), bytes.Contains(b, []byte("<svg")), bytes.Contains(b, []byte("py1")))
		}
		// Go loads the checkpoint PyTorch wrote (with its elementwise g_proj) and runs it.
		var a map[string]any
		if err := json.Unmarshal(run(t, w.dir, w.bin, "analyze", "--model", filepath.Join(w.pyRun, "final"), "--tokens",
			filepath.Join(w.dir, "data", "val.tok"), "--json"), &a); err != nil {
			t.Fatal(err)
		}
		act := a["activations"].(map[string]any)
		if loss := act["probe_loss"].(float64); math.Abs(loss-*pyM[len(pyM)-1].ValLoss) > 0.5 {
			t.Errorf("Go's probe loss of the PyTorch model %g, far from its validation loss %g", loss, *pyM[len(pyM)-1].ValLoss)
		}
		if g := act["layers"].([]any)[0].(map[string]any)["gate_mean"]; g == nil {
			t.Error("no gate means: the gate did not round-trip")
		}
	})

	t.Run("report labels a sparse-config run", func(t *testing.T) {
		// A run config without [model]: the trainer writes the model directory's shape, ε and gate into the
		// resolved config.toml, and the step-0 weights into init/, so the report labels the run by its model.
		sparse := filepath.Join(w.dir, "sparse.toml")
		cfg := fmt.Sprintf("seed = 3\n[data]\ntrain = %q\nval = %q\n[train]\nbatch_size = 8\nsteps = 4\nlog_interval = 2\neval_interval = 2\nthreads = 1\n",
			filepath.Join(w.dir, "data", "train.tok"), filepath.Join(w.dir, "data", "val.tok"))
		if err := os.WriteFile(sparse, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(w.dir, "py-sparse")
		run(t, w.dir, w.py, "-m", "smallinit_torch", "train", "--model", w.model, "--config", sparse, "--out", out, "--quiet")
		html := filepath.Join(w.dir, "sparse.html")
		run(t, w.dir, w.bin, "report", out, "--out", html)
		b, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"d=64, L=2, H=4, T=32, V=1024", "ε=1e-05", "gate=elementwise"} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("the report of a sparse-config PyTorch run does not say %q", want)
			}
		}
		if bytes.Contains(b, []byte("no step-0 weights")) {
			t.Error("the report finds no step-0 weights (init/) in the PyTorch run")
		}
	})

	t.Run("2 processes", func(t *testing.T) {
		for _, extra := range [][]string{{"--spawn", "2"}, {"--grad-accum", "2"}} {
			out := filepath.Join(w.dir, "py-"+strings.TrimLeft(strings.Join(extra, ""), "-"))
			args := append([]string{"-m", "smallinit_torch", "train", "--model", w.model, "--config",
				filepath.Join(w.goRun, "config.toml"), "--out", out, "--quiet"}, extra...)
			run(t, w.dir, w.py, args...)
			worst := compareLosses(t, pyM, readMetrics(t, out), 1e-5)
			t.Logf("%s: largest relative loss difference vs 1 process %.2e", strings.Join(extra, " "), worst)
		}
	})

	t.Run("audit", func(t *testing.T) {
		aud := filepath.Join(w.dir, "audit")
		run(t, ".", w.py, "-m", "tests.make_audit_models", aud)
		want := map[string]string{"ref_gamma1": "γ-rule γ=1", "ref_gamma05_depth": "γ-rule γ=0.5 with 1/sqrt(2L) on o_proj/down_proj",
			"ref_xavier": "xavier", "ref_gamma1_embed_fixed": "γ-rule γ=1", "titan_gamma075": "γ-rule γ=0.75",
			"titan_qwen3_kaiming": "kaiming"}
		for name, rule := range want {
			var r struct {
				Main      string            `json:"main_rule"`
				Overrides map[string]string `json:"overrides"`
				Trained   bool              `json:"trained"`
			}
			if err := json.Unmarshal(run(t, w.dir, w.bin, "audit", "--model", filepath.Join(aud, name), "--json"), &r); err != nil {
				t.Fatal(err)
			}
			if r.Main != rule || r.Trained {
				t.Errorf("%s: audit names %q (trained %v), want %q", name, r.Main, r.Trained, rule)
			}
			if name == "ref_gamma1_embed_fixed" && r.Overrides["embed"] != "fixed std 0.02" {
				t.Errorf("%s: overrides %v, want embed fixed std 0.02", name, r.Overrides)
			}
		}
	})
}
