package model

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/safetensors"
)

// Parity with PyTorch (python/torchref.py): the golden loss, logits and gradients are computed in float64 by an
// independent implementation; the float32 engine must agree to 1e-5 relative on the loss and 1e-4 relative
// (‖g_go − g_torch‖/‖g_torch‖) per gradient tensor.
const (
	parityLossTol = 1e-5
	parityGradTol = 1e-4
)

// parityInputs reads dir/inputs.safetensors, tokens [B, T+1], and returns B and the inputs and targets [B*T].
func parityInputs(t *testing.T, dir string) (B int, inputs, targets []int32) {
	t.Helper()
	in, err := safetensors.Open(filepath.Join(dir, "inputs.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	info, ok := in.Info("tokens")
	if !ok || len(info.Shape) != 2 {
		t.Fatalf("%s: inputs.safetensors has no [B, T+1] tokens", dir)
	}
	B, T1 := info.Shape[0], info.Shape[1]
	toks := make([]int32, B*T1)
	if err := in.ReadInt32("tokens", toks); err != nil {
		t.Fatal(err)
	}
	T := T1 - 1
	inputs, targets = make([]int32, B*T), make([]int32, B*T)
	for b := 0; b < B; b++ {
		copy(inputs[b*T:], toks[b*T1:b*T1+T])
		copy(targets[b*T:], toks[b*T1+1:b*T1+T1])
	}
	return B, inputs, targets
}

// goldenReader opens golden (a safetensors path) and returns a reader of its tensors as float64 and a closer.
func goldenReader(t *testing.T, golden string) (read func(name string, n int) []float64, close func()) {
	t.Helper()
	g, err := safetensors.Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	return func(name string, n int) []float64 {
		v := make([]float64, n)
		if err := g.ReadFloat64(name, v); err != nil {
			t.Fatal(err)
		}
		return v
	}, func() { g.Close() }
}

// checkParity runs the model in dir on inputs.safetensors and compares with golden (a safetensors path).
func checkParity(t *testing.T, dir, golden string, pool *kernel.Pool) {
	t.Helper()
	B, inputs, targets := parityInputs(t, dir)
	m, _, err := Load(dir, B, pool)
	if err != nil {
		t.Fatal(err)
	}
	if T := m.Config.SeqLen; len(inputs) != B*T {
		t.Fatalf("tokens are [%d, %d], want T+1 = %d columns", B, len(inputs)/B+1, T+1)
	}
	loss, err := m.Forward(inputs, targets)
	if err != nil {
		t.Fatal(err)
	}
	read, done := goldenReader(t, golden)
	defer done()
	want := read("loss", 1)[0]
	lossErr := math.Abs(loss-want) / want
	if lossErr > parityLossTol {
		t.Errorf("loss %.8f, PyTorch %.8f: rel err %.2e > %g", loss, want, lossErr, parityLossTol)
	}
	logitsErr := relErr(m.Logits(), read("logits", len(m.Logits())))
	if logitsErr > parityLossTol {
		t.Errorf("logits rel err %.2e > %g", logitsErr, parityLossTol)
	}
	m.ZeroGrads()
	m.Backward()
	var worst float64
	for _, ts := range m.Specs {
		e := relErr(m.Grads.Flat[ts.Offset:ts.Offset+ts.Size()], read("grad."+ts.Name, ts.Size()))
		if e > parityGradTol {
			t.Errorf("%s: gradient rel err %.2e > %g", ts.Name, e, parityGradTol)
		}
		worst = math.Max(worst, e)
	}
	t.Logf("loss %.6f (PyTorch %.6f, rel err %.1e), logits rel err %.1e, worst gradient rel err %.2e over %d tensors",
		loss, want, lossErr, logitsErr, worst, len(m.Specs))
	if m.Config.RopeScaling != "" {
		checkRopeScalingMatters(t, m, inputs, targets, read, pool)
	}
}

// checkRopeScalingMatters runs m's weights with plain RoPE (rope_scaling ignored) and requires the logits to miss
// the golden ones by far more than the parity tolerance, so that the case does test the scaling.
func checkRopeScalingMatters(t *testing.T, m *Model, inputs, targets []int32, read func(string, int) []float64, pool *kernel.Pool) {
	t.Helper()
	c := m.Config
	c.RopeScaling, c.RopeFactor, c.RopeLowFreqFactor, c.RopeHighFreqFactor, c.RopeOriginalSeqLen = "", 0, 0, 0, 0
	plain, err := New(c, len(inputs)/c.SeqLen, pool)
	if err != nil {
		t.Fatal(err)
	}
	copy(plain.Params.Flat, m.Params.Flat)
	loss, err := plain.Forward(inputs, targets)
	if err != nil {
		t.Fatal(err)
	}
	want := read("loss", 1)[0]
	lossChange, logitsChange := math.Abs(loss-want)/want, relErr(plain.Logits(), read("logits", len(plain.Logits())))
	if logitsChange < 100*parityLossTol {
		t.Errorf("with rope_scaling %s ignored the logits change by only %.1e relative (< 100× the tolerance %g): the case does not test the scaling",
			m.Config.RopeScaling, logitsChange, parityLossTol)
	}
	t.Logf("with rope_scaling %s ignored: loss rel change %.1e, logits rel change %.1e", m.Config.RopeScaling, lossChange, logitsChange)
}

func TestParityWithPyTorchFixtures(t *testing.T) {
	pool := kernel.NewPool(2)
	defer pool.Close()
	dirs, _ := filepath.Glob("../testdata/parity/*/golden.safetensors")
	if len(dirs) < 14 {
		t.Fatalf("found %d parity fixtures under testdata/parity, want 14 (regenerate with python/torchref.py fixtures)", len(dirs))
	}
	for _, golden := range dirs {
		dir := filepath.Dir(golden)
		t.Run(filepath.Base(dir), func(t *testing.T) { checkParity(t, dir, golden, pool) })
	}
}

// python3WithTorch returns a python3 that can import torch, or "".
func python3WithTorch() string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import torch").Run() == nil {
			return py
		}
	}
	return ""
}

// TestLiveParityWithPyTorch writes a model from Go, has python/torchref.py compute the golden values from
// those files, and compares: it checks the writer and the config.json contract as well as the math. The
// grouped-query cases cover how Save spells them for Hugging Face: num_key_value_heads, and q/k/v biases as
// model_type qwen2 (a dense model) and qwen2_moe (an MoE model) with no attention_bias. The QK-norm cases cover
// model_type qwen3 with qk_norm (with q/k/v biases: qkv_bias) and qwen2_moe with qk_norm (an MoE model). The
// rope_scaling cases cover the rope_scaling object Save writes: llama3 with its five fields (head_dim 10 at
// rope_theta 500000 and original_max_position_embeddings 256: wavelength 6.3 kept, 86.7 blended, 1196, 16503
// and 227696 divided by the factor) and
// linear on a Qwen3 (QK-norm) model.
func TestLiveParityWithPyTorch(t *testing.T) {
	py := python3WithTorch()
	if py == "" {
		t.Skip("no python3-torch: install it (apt-get install -y python3-torch) to run the live PyTorch parity check")
	}
	pool := kernel.NewPool(2)
	defer pool.Close()
	for _, tc := range []struct {
		name string
		c    arch.Config
	}{
		{"layernorm_headwise_tied", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 3, SeqLen: 70, NormEps: 1e-5, Norm: arch.NormLayer, AttnGate: arch.GateHeadwise, RopeTheta: 10000, Tied: true}},
		{"rms_eps1e-12_elementwise_T130", arch.Config{Vocab: 40, Dim: 32, FFN: 64, Layers: 1, Heads: 2, SeqLen: 130, NormEps: 1e-12, Norm: arch.NormRMS, AttnGate: arch.GateElementwise, RopeTheta: 10000}},
		{"qwen2_gqa_h4_kv2_qkvbias_elementwise_T70", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 4, KVHeads: 2, SeqLen: 70, NormEps: 1e-6, Norm: arch.NormRMS, AttnGate: arch.GateElementwise, RopeTheta: 1e6, QKVBias: true}},
		{"llama_mqa_h3_kv1_layernorm_headwise_tied", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 3, KVHeads: 1, HeadDim: 10, SeqLen: 20, NormEps: 1e-5, Norm: arch.NormLayer, AttnGate: arch.GateHeadwise, RopeTheta: 500000, Tied: true}},
		{"qwen2_moe_h4_kv1_qkvbias", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 4, KVHeads: 1, SeqLen: 20, NormEps: 1e-6, Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, QKVBias: true,
			FFNKind: arch.FFNMoE, Experts: 4, TopK: 2, ExpertFFN: 12, SharedFFN: 16, AuxCoef: 0.1, SparseStep: 1}},
		{"qwen3_qknorm_gqa_h4_kv2_dh10_elementwise_T70", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 10, SeqLen: 70, NormEps: 1e-6, Norm: arch.NormRMS, AttnGate: arch.GateElementwise, RopeTheta: 1e6, QKNorm: true}},
		{"qwen3_qknorm_mqa_h3_kv1_qkvbias_layernorm_headwise_tied", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 3, KVHeads: 1, SeqLen: 20, NormEps: 1e-12, Norm: arch.NormLayer, AttnGate: arch.GateHeadwise, RopeTheta: 10000, Tied: true, QKNorm: true, QKVBias: true}},
		{"moe_qknorm_h4_kv2", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 4, KVHeads: 2, SeqLen: 20, NormEps: 1e-6, Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 10000, QKNorm: true,
			FFNKind: arch.FFNMoE, Experts: 4, TopK: 2, ExpertFFN: 12, NormTopK: true, AuxCoef: 0.1, SparseStep: 1}},
		{"llama3_rope_scaling_gqa_h4_kv2_dh10_T70", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 10, SeqLen: 70, NormEps: 1e-5, Norm: arch.NormRMS, AttnGate: arch.GateNone, RopeTheta: 500000,
			RopeScaling: arch.RopeLlama3, RopeFactor: 8, RopeLowFreqFactor: 1, RopeHighFreqFactor: 4, RopeOriginalSeqLen: 256}},
		{"linear_rope_scaling_qwen3_qknorm_headwise_T70", arch.Config{Vocab: 50, Dim: 24, FFN: 40, Layers: 2, Heads: 3, SeqLen: 70, NormEps: 1e-6, Norm: arch.NormRMS, AttnGate: arch.GateHeadwise, RopeTheta: 10000, QKNorm: true,
			RopeScaling: arch.RopeLinear, RopeFactor: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newTestModel(t, tc.c, 2, pool)
			fillRandomAll(m, 11, 1)
			if err := m.Save(dir, nil); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(12, 12))
			toks := make([]int32, 2*(tc.c.SeqLen+1))
			for i := range toks {
				toks[i] = int32(rng.IntN(tc.c.Vocab))
			}
			w := safetensors.Create(filepath.Join(dir, "inputs.safetensors"), nil)
			if err := w.AddInt32("tokens", []int{2, tc.c.SeqLen + 1}, toks); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(dir, "golden.safetensors")
			cmd := exec.Command(py, "../python/torchref.py", "golden", "--model", dir, "--inputs", filepath.Join(dir, "inputs.safetensors"), "--out", golden)
			cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=2")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("torchref.py golden: %v\n%s", err, strings.TrimSpace(string(out)))
			}
			checkParity(t, dir, golden, pool)
		})
	}
}
