package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/internal/allocs"
)

// FuzzParseGrid reads arbitrary bytes as a grid file. Errors must name the file; parsing may allocate at most
// 1 MB plus 512 bytes per byte of the file; a grid of at most 64 runs is expanded too, and its runs must have
// distinct ids, consecutive indices and configs that pass Validate (larger grids are legal, up to 2^20 runs,
// and cost time in proportion: Expand is not fuzzed on them).
func FuzzParseGrid(f *testing.F) {
	f.Add([]byte("[base]\nmodel.hidden_size = 32\ndata.train = \"t.tok\"\n\n[axes]\n\"init.gamma\" = [0.5, 1]\nseed = [0, 1]\n"))
	f.Add([]byte("base = \"run.toml\"\n[axes]\nseed = [0]\n"))
	f.Add([]byte("base = \"missing.toml\"\n[axes]\nseed = [0]\n"))
	f.Add([]byte("[base.model]\npreset = \"tiny-moe\"\n[base.data]\ntrain = \"t\"\n[axes.model]\nnorm_eps = [1e-5, 1e-12]\nattn_gate = [\"none\", \"elementwise\"]\n"))
	f.Add([]byte("[axes]\nseed = [0, 0]\n"))
	f.Add([]byte("[axes]\nseed = [nan]\n\"init.gamma\" = [[1]]\n"))
	f.Add([]byte("[axes]\nx = []\n"))
	f.Add([]byte("other = 1\n"))
	f.Add([]byte("[base]\ndata.train = \"t\"\n[axes]\n\"model.vocab_size\" = [-1, 16777216]\n"))
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "run.toml"), []byte("[data]\ntrain = \"t.tok\"\n"), 0o644)
	path := filepath.Join(dir, "grid.toml")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var g *Grid
		var err error
		n := allocs.Bytes(func() { g, err = ParseGrid(path) })
		if limit := uint64(1<<20 + 512*len(b)); n > limit {
			t.Fatalf("ParseGrid of %d bytes allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the grid file: %v", err)
			}
			return
		}
		runs := 1
		for _, a := range g.Axes {
			runs *= len(a.Values)
			if runs > 64 {
				return
			}
		}
		p, err := g.Expand()
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the grid file: %v", err)
			}
			return
		}
		if len(p.Runs) != runs {
			t.Fatalf("%d runs, the axes make %d", len(p.Runs), runs)
		}
		ids := map[string]bool{}
		for i, r := range p.Runs {
			if r.Index != i || ids[r.ID] || strings.ContainsAny(r.ID, "/\\") {
				t.Fatalf("run %d: index %d, id %q (duplicate or not a directory name)", i, r.Index, r.ID)
			}
			ids[r.ID] = true
			if err := r.Config.Validate(); err != nil {
				t.Fatalf("run %s: %v", r.ID, err)
			}
		}
	})
}
