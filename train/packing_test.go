package train

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/recipe"
)

// TestProbePacking: the probe reports both arrangements' aggregate tokens/s, their ratio, and the choice the
// ratio implies; one core needs no measurement; bad counts are refused.
func TestProbePacking(t *testing.T) {
	c := arch.Config{Vocab: 64, Dim: 16, FFN: 32, Layers: 1, Heads: 2, SeqLen: 8, NormEps: 1e-5, Norm: arch.NormRMS,
		AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	p, err := ProbePacking(c, 2, "f32", 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !(p.One > 0 && p.Packed > 0) || math.Abs(p.Gain-p.Packed/p.One) > 1e-12 {
		t.Fatalf("%+v", p)
	}
	if want := map[bool]int{true: 2, false: 1}[p.Gain >= PackingGainMin]; p.Jobs != want {
		t.Errorf("gain %.3f chose %d jobs, want %d", p.Gain, p.Jobs, want)
	}
	if s := p.String(); !strings.Contains(s, "1 run × 2 threads") || !strings.Contains(s, "2 runs × 1 thread") {
		t.Errorf("String: %s", s)
	}
	if p, err := ProbePacking(c, 2, "f32", 1, 2, 1); err != nil || p.Jobs != 1 || p.One != 0 {
		t.Errorf("one core: %+v, %v", p, err)
	}
	if _, err := ProbePacking(c, 2, "f32", 2, 0, 1); err == nil {
		t.Error("0 steps accepted")
	}
}

// TestPackingForResolvesAuto: a run config with train.precision = "auto" (a sweep's grid, say) is probed in
// the precision auto resolves to, recorded in precision.json beside the packing record, instead of failing.
func TestPackingForResolvesAuto(t *testing.T) {
	dir := t.TempDir()
	c := recipe.Default()
	c.Model.Config = arch.Config{Vocab: 64, Dim: 16, FFN: 32, Layers: 1, Heads: 2, SeqLen: 8, NormEps: 1e-5, Norm: arch.NormRMS,
		AttnGate: arch.GateNone, RopeTheta: 10000, FFNKind: arch.FFNDense}
	c.Train.BatchSize, c.Train.Precision = 2, PrecisionAuto
	pk, err := PackingFor(filepath.Join(dir, PackingFile), c, 2, nil)
	if err != nil {
		t.Fatalf("precision auto: %v", err)
	}
	if pk.Precision != "f32" && pk.Precision != "bf16" {
		t.Errorf("probed in %q, want the resolved f32 or bf16", pk.Precision)
	}
	if _, err := os.Stat(filepath.Join(dir, PrecisionFile)); err != nil {
		t.Errorf("the resolved precision is not recorded: %v", err)
	}
	again, err := PackingFor(filepath.Join(dir, PackingFile), c, 2, nil)
	if err != nil || again != pk {
		t.Errorf("second call: %+v, %v; want the recorded %+v", again, err, pk)
	}
}
