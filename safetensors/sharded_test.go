package safetensors

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// writeShards makes a two-shard checkpoint in dir and returns nothing; the
// index is written by the caller so bad variants can be tested.
func writeShards(t *testing.T, dir string) {
	t.Helper()
	w := Create(filepath.Join(dir, "model-00001-of-00002.safetensors"), map[string]string{"format": "pt"})
	must(t, w.AddFloat32("embed", []int{2, 2}, []float32{1, 2, 3, 4}))
	must(t, w.AddFloat32As("norm", BF16, []int{2}, []float32{0.5, -1}))
	must(t, w.AddFloat32("orphan", []int{1}, []float32{9})) // not in the weight_map
	must(t, w.Close())
	w = Create(filepath.Join(dir, "model-00002-of-00002.safetensors"), nil)
	must(t, w.AddFloat32As("head", F16, []int{3}, []float32{1, 2, 3}))
	must(t, w.AddInt32("ids", []int{2}, []int32{5, 6}))
	must(t, w.Close())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const goodIndex = `{
  "metadata": {"total_size": 42, "format": "pt", "nested": {"a": [1, 2]}},
  "weight_map": {
    "head": "model-00002-of-00002.safetensors",
    "embed": "model-00001-of-00002.safetensors",
    "ids": "model-00002-of-00002.safetensors",
    "norm": "model-00001-of-00002.safetensors"
  }
}`

func writeIndex(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, IndexFileName)
	must(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestSharded(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir)
	indexPath := writeIndex(t, dir, goodIndex)
	s, err := OpenSharded(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != indexPath {
		t.Errorf("Path = %s", s.Path())
	}
	wantMeta := map[string]string{"total_size": "42", "format": "pt", "nested": `{"a":[1,2]}`}
	if got := s.Metadata(); !reflect.DeepEqual(got, wantMeta) {
		t.Errorf("metadata = %q, want %q", got, wantMeta)
	}
	var names []string
	for _, ti := range s.Tensors() {
		names = append(names, ti.Name)
	}
	if want := []string{"embed", "norm", "head", "ids"}; !slices.Equal(names, want) {
		t.Errorf("tensors = %v, want %v", names, want)
	}
	if _, ok := s.Info("orphan"); ok {
		t.Error("tensor missing from the weight_map is visible")
	}
	if info, ok := s.Info("head"); !ok || info.DType != F16 || !slices.Equal(info.Shape, []int{3}) {
		t.Errorf("Info(head) = %+v, %v", info, ok)
	}
	if f, ok := s.Shard("head"); !ok || filepath.Base(f.Path()) != "model-00002-of-00002.safetensors" {
		t.Errorf("Shard(head) = %v, %v", f, ok)
	}
	checkModel(t, s)
	if err := s.ReadFloat32("orphan", make([]float32, 1)); err == nil || !strings.Contains(err.Error(), indexPath) {
		t.Errorf("orphan read: %v", err)
	}
}

// checkModel reads the tensors of the sharded test checkpoint through the
// Reader interface.
func checkModel(t *testing.T, r Reader) {
	t.Helper()
	got := make([]float32, 4)
	must(t, r.ReadFloat32("embed", got))
	if !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("embed = %v", got)
	}
	got = got[:2]
	must(t, r.ReadFloat32("norm", got))
	if !slices.Equal(got, []float32{0.5, -1}) {
		t.Errorf("norm = %v", got)
	}
	g64 := make([]float64, 3)
	must(t, r.ReadFloat64("head", g64))
	if !slices.Equal(g64, []float64{1, 2, 3}) {
		t.Errorf("head = %v", g64)
	}
	ids := make([]int32, 2)
	must(t, r.ReadInt32("ids", ids))
	if !slices.Equal(ids, []int32{5, 6}) {
		t.Errorf("ids = %v", ids)
	}
	raw := make([]byte, 8)
	must(t, r.ReadBytes("ids", raw))
	if err := r.ReadFloat32("missing", nil); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("missing tensor: %v", err)
	}
}

func TestOpenModel(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir)
	writeIndex(t, dir, goodIndex)
	r, err := OpenModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(*Sharded); !ok {
		t.Errorf("OpenModel(dir with index) = %T", r)
	}
	checkModel(t, r)
	must(t, r.Close())

	// A single file wins over the index, as in transformers.
	w := Create(filepath.Join(dir, SingleFileName), nil)
	must(t, w.AddFloat32("only", nil, []float32{7}))
	must(t, w.Close())
	r, err = OpenModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Info("only"); !ok || r.Path() != filepath.Join(dir, SingleFileName) {
		t.Errorf("OpenModel did not pick %s: %s", SingleFileName, r.Path())
	}
	must(t, r.Close())

	// A file path is opened directly.
	r, err = OpenModel(filepath.Join(dir, "model-00002-of-00002.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Info("head"); !ok {
		t.Error("shard opened directly lacks head")
	}
	must(t, r.Close())

	empty := t.TempDir()
	if r, err := OpenModel(empty); err == nil || r != nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("OpenModel(empty dir) = %v, %v", r, err)
	}
	// A failed open returns a nil interface, not a typed nil.
	bad := t.TempDir()
	must(t, os.WriteFile(filepath.Join(bad, SingleFileName), []byte("junk"), 0o644))
	if r, err := OpenModel(bad); err == nil || r != nil {
		t.Errorf("OpenModel(junk) = %v, %v", r, err)
	}
	badIdx := t.TempDir()
	writeIndex(t, badIdx, `{}`)
	if r, err := OpenModel(badIdx); err == nil || r != nil {
		t.Errorf("OpenModel(bad index) = %v, %v", r, err)
	}
}

func TestBadIndex(t *testing.T) {
	outside := t.TempDir()
	writeShards(t, outside)
	tests := []struct {
		name  string
		index string
		want  string
	}{
		{"parent traversal", `{"weight_map":{"embed":"../x.safetensors"}}`, "not inside"},
		{"nested traversal", `{"weight_map":{"embed":"a/../../x.safetensors"}}`, "not inside"},
		{"absolute path", `{"weight_map":{"embed":"` + filepath.Join(outside, "model-00001-of-00002.safetensors") + `"}}`, "not inside"},
		{"backslash", `{"weight_map":{"embed":"..\\x.safetensors"}}`, "not inside"},
		{"empty shard name", `{"weight_map":{"embed":""}}`, "not inside"},
		{"missing shard", `{"weight_map":{"embed":"model-00003-of-00003.safetensors"}}`, "no such file"},
		{"tensor absent from shard", `{"weight_map":{"head":"model-00001-of-00002.safetensors"}}`, `tensor "head" in shard "model-00001-of-00002.safetensors"`},
		{"invalid shard", `{"weight_map":{"x":"junk.safetensors"}}`, "too short"},
		{"shard is directory", `{"weight_map":{"x":"subdir"}}`, "directory"},
		{"invalid JSON", `{"weight_map":`, "invalid JSON"},
		{"not an object", `[]`, "expected a JSON object"},
		{"trailing data", `{"weight_map":{"embed":"model-00001-of-00002.safetensors"}} x`, "unexpected data"},
		{"missing weight_map", `{"metadata":{}}`, "weight_map is missing or empty"},
		{"empty weight_map", `{"weight_map":{}}`, "weight_map is missing or empty"},
		{"weight_map not object", `{"weight_map":["a"]}`, "expected a JSON object"},
		{"weight_map number", `{"weight_map":{"embed":1}}`, "must be a string"},
		{"duplicate tensor", `{"weight_map":{"embed":"model-00001-of-00002.safetensors","embed":"model-00001-of-00002.safetensors"}}`, `duplicate key "embed"`},
		{"duplicate weight_map", `{"weight_map":{},"weight_map":{}}`, `duplicate key "weight_map"`},
		{"metadata not object", `{"metadata":3,"weight_map":{"embed":"model-00001-of-00002.safetensors"}}`, "expected a JSON object"},
		{"invalid UTF-8", "{\"weight_map\":{\"\xff\":\"a\"}}", "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeShards(t, dir)
			must(t, os.WriteFile(filepath.Join(dir, "junk.safetensors"), []byte("junk"), 0o644))
			must(t, os.Mkdir(filepath.Join(dir, "subdir"), 0o755))
			indexPath := writeIndex(t, dir, tc.index)
			s, err := OpenSharded(dir)
			if err == nil {
				s.Close()
				t.Fatalf("OpenSharded succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), indexPath) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want one containing the index path and %q", err, tc.want)
			}
		})
	}
	t.Run("no index", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := OpenSharded(dir); err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("error %v", err)
		}
	})
}
