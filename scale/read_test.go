package scale

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/safetensors"
)

// written initialises a tiny model both ways and returns the in-memory reference and the open checkpoint.
func written(t *testing.T, c arch.Config, dtype safetensors.DType, shard int64) (*model.Model, safetensors.Reader) {
	t.Helper()
	r := recipe.Init{Rule: recipe.RuleGamma, Gamma: 0.5}
	ref, _ := applied(t, c, r, 5)
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := Init(dir, c, r, 5, InitOptions{DType: dtype, ShardSize: shard}); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.OpenModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ref, f
}

func TestScaleStream(t *testing.T) {
	c := preset(t, "tiny")
	ref, f := written(t, c, safetensors.F32, 200_000)
	specs := c.Tensors()
	for _, tc := range []struct {
		name string
		o    StreamOptions
	}{{"ordered", StreamOptions{}}, {"ordered 1 worker", StreamOptions{Workers: 1}}, {"ordered 5 workers", StreamOptions{Workers: 5}},
		{"concurrent", StreamOptions{Concurrent: true}}, {"concurrent 4 workers", StreamOptions{Concurrent: true, Workers: 4}}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			var last, total int64
			o := tc.o
			o.Progress = func(done, tot int64) { last, total = done, tot }
			err := Stream(f, specs, o, func(s arch.TensorSpec, w []float32) error {
				want := ref.Params.Flat[s.Offset : s.Offset+s.Size()]
				if !slices.Equal(w, want) {
					t.Errorf("%s: streamed values differ", s.Name)
				}
				mu.Lock()
				seen = append(seen, s.Name)
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != len(specs) || last != total || total != 4*c.NumParams() {
				t.Errorf("saw %d of %d tensors, progress %d of %d", len(seen), len(specs), last, total)
			}
			if !tc.o.Concurrent {
				for i, s := range specs {
					if seen[i] != s.Name {
						t.Fatalf("tensor %d is %s, want %s: not in order", i, seen[i], s.Name)
					}
				}
			}
		})
	}

	boom := errors.New("boom")
	for _, conc := range []bool{false, true} {
		calls := 0
		var mu sync.Mutex
		err := Stream(f, specs, StreamOptions{Concurrent: conc}, func(arch.TensorSpec, []float32) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 3 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || calls > 3+2 {
			t.Errorf("concurrent=%v: error %v after %d calls, want boom promptly", conc, err, calls)
		}
	}
	bad := slices.Clone(specs)
	bad[2].Shape = []int{bad[2].Shape[0], bad[2].Shape[1] + 1}
	if err := Stream(f, bad, StreamOptions{}, func(arch.TensorSpec, []float32) error { return nil }); err == nil || !strings.Contains(err.Error(), bad[2].Name) {
		t.Errorf("shape mismatch: %v", err)
	}
	bad[2].Name = "nope"
	if err := Stream(f, bad, StreamOptions{}, func(arch.TensorSpec, []float32) error { return nil }); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing tensor: %v", err)
	}
}

// TestScaleWeightReportMatchesDiag: the streaming weight report equals diag.WeightReport on the loaded model, with
// and without frequent tokens, from a sharded bf16 checkpoint.
func TestScaleWeightReportMatchesDiag(t *testing.T) {
	c := preset(t, "tiny", "tie_word_embeddings=false")
	_, f := written(t, c, safetensors.BF16, 150_000)
	m, err := model.New(c, 1, testPool(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadWeights(filepath.Dir(f.Path())); err != nil {
		t.Fatal(err)
	}
	o := diag.DefaultWeightOptions()
	o.MaxCosRows = 100
	for _, frequent := range [][]int{nil, {5, 3, 4000, 17, 9, 1, 2, 8}} {
		want := diag.WeightReport(m, o, frequent)
		got, err := WeightReport(f, c.Tensors(), o, frequent, StreamOptions{Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Errorf("frequent %v: streaming report differs from diag.WeightReport\n%s\n%s", frequent, a, b)
		}
		if len(got) == 0 || math.IsNaN(got[0].StableRank) {
			t.Errorf("empty or NaN report")
		}
	}
}
