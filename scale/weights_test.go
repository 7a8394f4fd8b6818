package scale

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/safetensors"
)

// TestWeightReportMaxCosRowsAsDiag: the streaming report of a checkpoint equals diag.WeightReport on the model
// for every MaxCosRows, including the negative "every frequent row" (where they used to disagree: the stream
// took DefaultMaxCosRows of the 600 frequent tokens, diag all 600).
func TestWeightReportMaxCosRowsAsDiag(t *testing.T) {
	c := arch.Config{Vocab: 600, Dim: 16, FFN: 32, Layers: 1, Heads: 2, SeqLen: 8, NormEps: 1e-5, Norm: arch.NormRMS,
		AttnGate: arch.GateNone, RopeTheta: 10000}
	pool := kernel.NewPool(1)
	defer pool.Close()
	m, err := model.New(c, 1, pool)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range m.Params.Flat {
		m.Params.Flat[i] = float32(rng.NormFloat64())
	}
	dir := filepath.Join(t.TempDir(), "m")
	if err := m.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	r, err := safetensors.OpenModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	frequent := rng.Perm(c.Vocab)
	for _, maxCos := range []int{-1, 0, 50} {
		o := diag.WeightOptions{MaxCosRows: maxCos}
		want := diag.WeightReport(m, o, frequent)
		got, err := WeightReport(r, c.Tensors(), o, frequent, StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Errorf("MaxCosRows %d: streaming report differs from diag.WeightReport\n%s\n%s", maxCos, a, b)
		}
		if maxCos < 0 && (len(got) == 0 || got[0].CosRowsUsed != c.Vocab) {
			t.Errorf("MaxCosRows %d: the embedding used %d frequent rows, want all %d", maxCos, got[0].CosRowsUsed, c.Vocab)
		}
	}
}
