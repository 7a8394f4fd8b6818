package sweep

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/override"
)

// writeFile writes text to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const gridBase = `
[base]
model.vocab_size = 64
model.hidden_size = 32
model.num_hidden_layers = 2
model.num_attention_heads = 2
model.max_position_embeddings = 16
train.batch_size = 2
train.steps = 4
data.train = "train.tok"
`

// TestGridExpandOrderAndCount checks the cartesian product: axes sorted by key, the last varying fastest,
// each axis's values in file order, and every run's config carrying its values.
func TestGridExpandOrderAndCount(t *testing.T) {
	dir := t.TempDir()
	g, err := ParseGrid(writeFile(t, dir, "grid.toml", gridBase+`
[axes]
seed = [0, 1, 2]
"init.gamma" = [0.5, 0.75, 1, 1.25, 1.5]
"model.norm_eps" = [1e-5, 1e-12]
"model.attn_gate" = ["none", "elementwise"]
"model.preset" = ["tiny", "small"]
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 5*2*2*2*3 {
		t.Fatalf("%d runs, want 120", len(p.Runs))
	}
	var keys []string
	for _, a := range p.Axes {
		keys = append(keys, a.Key)
	}
	if got := strings.Join(keys, " "); got != "init.gamma model.attn_gate model.norm_eps model.preset seed" {
		t.Fatalf("axis order %q", got)
	}
	// Run 0 takes every axis's first value; run 1 the next seed; run 3 the next preset.
	check := func(i int, want map[string]string) {
		t.Helper()
		r := p.Runs[i]
		for k, v := range want {
			if got := override.Format(r.Values[k]); got != v {
				t.Errorf("run %d: %s = %s, want %s", i, k, got, v)
			}
		}
	}
	check(0, map[string]string{"init.gamma": "0.5", "model.attn_gate": "none", "model.norm_eps": "1e-05", "model.preset": "tiny", "seed": "0"})
	check(1, map[string]string{"init.gamma": "0.5", "seed": "1"})
	check(3, map[string]string{"model.preset": "small", "seed": "0"})
	check(119, map[string]string{"init.gamma": "1.5", "model.attn_gate": "elementwise", "model.norm_eps": "1e-12", "model.preset": "small", "seed": "2"})
	last := p.Runs[119].Config
	if last.Init.Gamma != 1.5 || last.Model.NormEps != 1e-12 || last.Model.AttnGate != "elementwise" || last.Seed != 2 {
		t.Errorf("run 119 config: γ %g ε %g gate %s seed %d", last.Init.Gamma, last.Model.NormEps, last.Model.AttnGate, last.Seed)
	}
	// The base's model keys apply over the preset: "small" keeps the base's width.
	if last.Model.Dim != 32 || last.Model.Vocab != 64 || p.Runs[3].N != p.Runs[0].N {
		t.Errorf("base keys lost under the preset: d=%d V=%d", last.Model.Dim, last.Model.Vocab)
	}
}

// TestGridIDsStable checks that ids depend on the axes' keys and values only: reordering the axes in the file,
// moving the base to a file and writing 1 as 1.0 give the same ids and fingerprint, and ids are unique.
func TestGridIDsStable(t *testing.T) {
	dir := t.TempDir()
	a, err := ParseGrid(writeFile(t, dir, "a.toml", gridBase+`
[axes]
"init.gamma" = [0.5, 1]
seed = [0, 1]
"model.attn_gate" = ["none", "elementwise"]
`))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "run.toml", strings.Replace(gridBase, "[base]", "", 1))
	b, err := ParseGrid(writeFile(t, dir, "b.toml", `base = "run.toml"
[axes]
model.attn_gate = ["none", "elementwise"]
seed = [0, 1]
init.gamma = [0.5, 1.0]
`))
	if err != nil {
		t.Fatal(err)
	}
	pa, err := a.Expand()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.Expand()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range pa.Runs {
		if pa.Runs[i].ID != pb.Runs[i].ID {
			t.Errorf("run %d: id %s vs %s", i, pa.Runs[i].ID, pb.Runs[i].ID)
		}
		seen[pa.Runs[i].ID] = true
	}
	if len(seen) != 8 {
		t.Errorf("%d distinct ids for 8 runs", len(seen))
	}
	if pa.Fingerprint != pb.Fingerprint {
		t.Errorf("fingerprints differ: %s vs %s", pa.Fingerprint, pb.Fingerprint)
	}
	// Pinned: the scheme must not drift (a changed id orphans existing run directories).
	if got, want := pa.Runs[5].ID, "005-1_none_1-4228c265"; got != want {
		t.Errorf("run 5 id %s, want %s", got, want)
	}
	// The hash part identifies the combination in any grid: the same values in a grid with an extra axis
	// value keep their hash (the index moves).
	c, err := parseGrid([]byte(gridBase+`
[axes]
"init.gamma" = [0.25, 0.5, 1]
seed = [0, 1]
"model.attn_gate" = ["none", "elementwise"]
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := c.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if h := pc.Runs[9].ID[len(pc.Runs[9].ID)-8:]; h != pa.Runs[5].ID[len(pa.Runs[5].ID)-8:] {
		t.Errorf("hash of the same values differs: %s vs %s", pc.Runs[9].ID, pa.Runs[5].ID)
	}
}

// TestGridErrors checks that bad grids and bad runs are refused with messages naming the key or the run.
func TestGridErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, text, want string }{
		{"no axes", gridBase, "no [axes]"},
		{"empty list", gridBase + "[axes]\nseed = []\n", "empty list"},
		{"scalar", gridBase + "[axes]\nseed = 3\n", "want a list"},
		{"duplicate", gridBase + "[axes]\n\"init.gamma\" = [1, 1.0]\n", "listed twice"},
		{"table value", gridBase + "[axes]\n\"init.gamma\" = [{a = 1}]\n", "numbers, strings or booleans"},
		{"unknown top key", "steps = 3\n" + gridBase + "[axes]\nseed = [1]\n", "unknown top-level key"},
		{"missing base file", "base = \"nope.toml\"\n[axes]\nseed = [1]\n", "base:"},
		{"unknown config key", gridBase + "[axes]\n\"init.gama\" = [1]\n", "init.gama"},
		{"bad value names the run", gridBase + "[axes]\n\"init.gamma\" = [1, 9]\n", "run 001-9-"},
		{"bad value names the key", gridBase + "[axes]\n\"init.gamma\" = [1, 9]\n", "init.gamma=9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := ParseGrid(writeFile(t, dir, "g.toml", c.text))
			if err == nil {
				_, err = g.Expand()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestGridIndexSelection checks --index: one run is selected, out-of-range indices are refused.
func TestGridIndexSelection(t *testing.T) {
	dir := t.TempDir()
	g, err := ParseGrid(writeFile(t, dir, "g.toml", gridBase+"[axes]\nseed = [0, 1, 2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	sel, err := p.Select(2)
	if err != nil || len(sel) != 1 || sel[0].Index != 2 || sel[0].Config.Seed != 2 {
		t.Fatalf("Select(2) = %v, %v", sel, err)
	}
	if sel, err := p.Select(-1); err != nil || len(sel) != 3 {
		t.Fatalf("Select(-1) = %d runs, %v", len(sel), err)
	}
	for _, i := range []int{3, -2} {
		if _, err := p.Select(i); err == nil || !strings.Contains(err.Error(), "run index") {
			t.Errorf("Select(%d): error %v", i, err)
		}
	}
}

// TestGridDeployExample checks that the example grid shipped in deploy/ expands to its 120 runs.
func TestGridDeployExample(t *testing.T) {
	g, err := ParseGrid(filepath.Join("..", "deploy", "grid.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 120 || p.Runs[0].Config.Data.Train != "/shared/data/train.tok" {
		t.Errorf("%d runs, data.train %q", len(p.Runs), p.Runs[0].Config.Data.Train)
	}
}

// TestNewGridIsTheGridOfItsFile: a grid built from typed values (NewGrid, a study's sweep group) expands to the
// same runs, ids, inline base and fingerprint as its grid file read back (ParseGrid) (a key set twice takes its last value, as
// in the file's document), and its axes are checked as a file's are.
func TestNewGridIsTheGridOfItsFile(t *testing.T) {
	base := []override.Set{
		{Key: "model.vocab_size", Value: int64(64)}, {Key: "model.hidden_size", Value: int64(16)},
		{Key: "model.num_hidden_layers", Value: int64(2)}, {Key: "model.num_attention_heads", Value: int64(2)},
		{Key: "model.max_position_embeddings", Value: int64(16)}, {Key: "train.batch_size", Value: int64(2)},
		{Key: "train.steps", Value: int64(4)}, {Key: "data.train", Value: "train.tok"},
		{Key: "model.hidden_size", Value: int64(32)}, {Key: "model.norm_eps", Value: 1e-12},
	}
	axes := []Axis{{Key: "seed", Values: []any{int64(0), int64(1)}}, {Key: "init.gamma", Values: []any{0.5, int64(1)}}}
	g, err := NewGrid(base, axes)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := override.Document(base)
	if err != nil {
		t.Fatal(err)
	}
	text := "[base]\n" + doc + "[axes]\nseed = [0, 1]\n\"init.gamma\" = [0.5, 1]\n"
	f, err := ParseGrid(writeFile(t, t.TempDir(), "grid.toml", text))
	if err != nil {
		t.Fatal(err)
	}
	typed, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := f.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if typed.Fingerprint != parsed.Fingerprint || strings.Join(typed.Base, " ") != strings.Join(parsed.Base, " ") || len(typed.Runs) != 4 {
		t.Fatalf("typed: %s %v (%d runs); parsed: %s %v", typed.Fingerprint, typed.Base, len(typed.Runs), parsed.Fingerprint, parsed.Base)
	}
	for i := range typed.Runs {
		a, b := typed.Runs[i], parsed.Runs[i]
		if a.ID != b.ID || strings.Join(a.Sets, " ") != strings.Join(b.Sets, " ") || a.Config.Model.Dim != 32 || a.Config.Model.NormEps != 1e-12 {
			t.Errorf("run %d: typed %s %v (d %d, ε %g), parsed %s %v", i, a.ID, a.Sets, a.Config.Model.Dim, a.Config.Model.NormEps, b.ID, b.Sets)
		}
	}
	for _, c := range []struct {
		name string
		axes []Axis
		want string
	}{
		{"no axes", nil, "nothing to sweep"},
		{"a value twice", []Axis{{Key: "init.gamma", Values: []any{0.5, 0.5}}}, "listed twice"},
		{"a non-finite value", []Axis{{Key: "init.gamma", Values: []any{math.NaN()}}}, "non-finite"},
		{"an empty axis", []Axis{{Key: "init.gamma", Values: []any{}}}, "empty list"},
		{"a key twice", []Axis{{Key: "seed", Values: []any{int64(0)}}, {Key: "seed", Values: []any{int64(1)}}}, "given twice"},
	} {
		if _, err := NewGrid(base, c.axes); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
