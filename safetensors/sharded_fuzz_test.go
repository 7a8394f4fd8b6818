package safetensors

import (
	"github.com/smallinit/smallinit/internal/allocs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzOpenSharded opens a sharded checkpoint whose model.safetensors.index.json is arbitrary, beside two valid
// shards (the ones of TestSharded, plus a subdirectory and a non-safetensors file the index may point at).
// Nothing may panic; errors must name the index; an index that opens must list only tensors its shards hold,
// each readable; and opening may allocate at most 1 MB plus 64 bytes per byte of the index (the shards' headers
// are small and fixed).
func FuzzOpenSharded(f *testing.F) {
	dir := f.TempDir()
	w := Create(filepath.Join(dir, "model-00001-of-00002.safetensors"), map[string]string{"format": "pt"})
	w.AddFloat32("embed", []int{2, 2}, []float32{1, 2, 3, 4})
	w.AddFloat32As("norm", BF16, []int{2}, []float32{0.5, -1})
	w.AddFloat32("orphan", []int{1}, []float32{9})
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	w = Create(filepath.Join(dir, "model-00002-of-00002.safetensors"), nil)
	w.AddFloat32As("head", F16, []int{3}, []float32{1, 2, 3})
	w.AddInt32("ids", []int{2}, []int32{5, 6})
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a safetensors file"), 0o644)

	f.Add([]byte(goodIndex))
	f.Add([]byte(`{"weight_map":{"embed":"model-00001-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"embed":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"x":"../model-00001-of-00002.safetensors","y":"/etc/passwd"}}`))
	f.Add([]byte(`{"weight_map":{"x":"sub","y":"notes.txt","z":"missing.safetensors"}}`))
	f.Add([]byte(`{"metadata":null,"weight_map":{"embed":"model-00001-of-00002.safetensors"},"weight_map":{}}`))
	f.Add([]byte(`{"metadata":{"total_size":1e999},"weight_map":{"ids":"model-00002-of-00002.safetensors"}} x`))
	f.Add([]byte(`{"weight_map":{"embed":5}}`))
	f.Add([]byte("\xff"))
	index := filepath.Join(dir, IndexFileName)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(index, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var s *Sharded
		var err error
		n := allocs.Bytes(func() { s, err = OpenSharded(dir) })
		if limit := uint64(1<<20 + 64*len(b)); n > limit {
			t.Fatalf("OpenSharded with a %d-byte index allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if err != nil {
			if !strings.Contains(err.Error(), index) {
				t.Fatalf("error does not name the index: %v", err)
			}
			return
		}
		defer s.Close()
		for _, ti := range s.Tensors() {
			info, ok := s.Info(ti.Name)
			if !ok || info.Name != ti.Name {
				t.Fatalf("Info(%q) = %+v, %v", ti.Name, info, ok)
			}
			if err := s.ReadBytes(ti.Name, make([]byte, ti.End-ti.Begin)); err != nil {
				t.Fatalf("ReadBytes(%q): %v", ti.Name, err)
			}
			if shard, ok := s.Shard(ti.Name); !ok || !strings.HasPrefix(shard.Path(), dir+string(filepath.Separator)) {
				t.Fatalf("tensor %q read from outside the checkpoint directory", ti.Name)
			}
		}
	})
}
