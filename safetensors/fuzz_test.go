package safetensors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzOpen writes arbitrary bytes to a file, opens it and reads every tensor
// the header lists through every reader. Nothing may panic; a successful Open
// must describe tensors that tile the buffer, and errors must name the file.
// Run with: go test -fuzz=FuzzOpen ./safetensors/
func FuzzOpen(f *testing.F) {
	f.Add(buildRaw(`{"format":"pt"}`, []rawTensor{
		{"a", "F16", []int{2, 2}, le16(0x3c00, 0xc000, 0x7bff, 0x0001)},
		{"b", "BF16", []int{2}, le16(0x3f80, 0x7fc0)},
		{"c", "F32", []int{}, f32bits(1)},
		{"d", "I64", []int{1}, le64(1 << 40)},
		{"e", "F64", []int{1}, le64(0x3ff0000000000000)},
		{"f", "I32", []int{0, 3}, nil},
		{"g", "F8_E4M3", []int{2}, []byte{0x38, 0x7f}},
		{"h", "F4", []int{2}, []byte{0x21}},
	}))
	f.Add(buildRaw("", []rawTensor{{"x", "U8", []int{3}, []byte{1, 2, 3}}}))
	f.Add(withHeader(`{}`, nil))
	f.Add(withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Add(withHeader(`{"a":{"dtype":"F32","shape":[1000000,1000000],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(withHeader(`{"__metadata__":{"k":1}}`, nil))
	f.Add(withHeader(`{"a":`, nil))
	f.Add(le64(1 << 62))
	f.Add([]byte{})
	dir := f.TempDir()
	path := filepath.Join(dir, "fuzz.safetensors")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := Open(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		defer file.Close()
		var end int64
		for _, ti := range file.Tensors() {
			if ti.Begin != end || ti.End < ti.Begin {
				t.Fatalf("tensor %q at [%d,%d] does not follow %d", ti.Name, ti.Begin, ti.End, end)
			}
			end = ti.End
			if info, ok := file.Info(ti.Name); !ok || info.Begin != ti.Begin {
				t.Fatalf("Info(%q) = %+v, %v", ti.Name, info, ok)
			}
			n := ti.NumElements()
			if n < 0 || int64(n) > int64(len(data))*8 {
				t.Fatalf("tensor %q has %d elements in a %d-byte file", ti.Name, n, len(data))
			}
			if err := file.ReadBytes(ti.Name, make([]byte, ti.End-ti.Begin)); err != nil {
				t.Fatalf("ReadBytes(%q): %v", ti.Name, err)
			}
			_ = file.ReadFloat32(ti.Name, make([]float32, n))
			_ = file.ReadFloat64(ti.Name, make([]float64, n))
			_ = file.ReadInt32(ti.Name, make([]int32, n))
		}
		if want := int64(len(data)) - file.dataStart; end != want {
			t.Fatalf("tensors cover %d of %d buffer bytes", end, want)
		}
	})
}
