package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// rawTensor is a tensor for hand-built files: bytes exactly as stored.
type rawTensor struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// buildRaw assembles a safetensors file the way the Python reference does:
// compact JSON header in the given order, padded with spaces to a multiple of
// 8, then the tensor bytes in order.
func buildRaw(meta string, ts []rawTensor) []byte {
	var hdr strings.Builder
	hdr.WriteByte('{')
	if meta != "" {
		hdr.WriteString(`"__metadata__":` + meta)
	}
	var off int
	var data []byte
	for i, t := range ts {
		if i > 0 || meta != "" {
			hdr.WriteByte(',')
		}
		shape := make([]string, len(t.shape))
		for j, d := range t.shape {
			shape[j] = fmt.Sprint(d)
		}
		fmt.Fprintf(&hdr, `%q:{"dtype":%q,"shape":[%s],"data_offsets":[%d,%d]}`,
			t.name, t.dtype, strings.Join(shape, ","), off, off+len(t.data))
		off += len(t.data)
		data = append(data, t.data...)
	}
	hdr.WriteByte('}')
	h := hdr.String()
	for len(h)%8 != 0 {
		h += " "
	}
	return withHeader(h, data)
}

// withHeader prefixes the JSON header hdr with its length and appends data.
func withHeader(hdr string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	out = append(out, hdr...)
	return append(out, data...)
}

func writeTemp(t *testing.T, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func le16(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func le64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func f32bits(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestReadPythonStyleFile reads bytes laid out as Python's safetensors writes
// them: metadata first, padded header, F16/BF16/F32/I64/U8 tensors.
func TestReadPythonStyleFile(t *testing.T) {
	content := buildRaw(`{"format":"pt"}`, []rawTensor{
		{"a.f16", "F16", []int{2, 2}, le16(0x3c00, 0xc000, 0x7bff, 0x0001)},
		{"b.bf16", "BF16", []int{3}, le16(0x3f80, 0xbfc0, 0x7f80)},
		{"c.f32", "F32", []int{}, f32bits(3.5)},
		{"d.i64", "I64", []int{2}, le64(7, uint64(1<<64-3))},
		{"e.u8", "U8", []int{3}, []byte{1, 2, 3}},
	})
	if n := binary.LittleEndian.Uint64(content); content[8+n-1] != ' ' {
		t.Fatal("test header is not padded")
	}
	path := writeTemp(t, "python.safetensors", content)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Metadata(); !reflect.DeepEqual(got, map[string]string{"format": "pt"}) {
		t.Errorf("metadata = %v", got)
	}
	var names []string
	for _, ti := range f.Tensors() {
		names = append(names, ti.Name)
	}
	if want := []string{"a.f16", "b.bf16", "c.f32", "d.i64", "e.u8"}; !slices.Equal(names, want) {
		t.Errorf("tensors = %v, want %v", names, want)
	}
	a := make([]float32, 4)
	if err := f.ReadFloat32("a.f16", a); err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, -2, 65504, float32(math.Ldexp(1, -24))}; !slices.Equal(a, want) {
		t.Errorf("a.f16 = %v, want %v", a, want)
	}
	b := make([]float32, 3)
	if err := f.ReadFloat32("b.bf16", b); err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, -1.5, float32(math.Inf(1))}; !slices.Equal(b, want) {
		t.Errorf("b.bf16 = %v, want %v", b, want)
	}
	c := make([]float32, 1)
	if err := f.ReadFloat32("c.f32", c); err != nil || c[0] != 3.5 {
		t.Errorf("c.f32 = %v, %v", c, err)
	}
	d := make([]int32, 2)
	if err := f.ReadInt32("d.i64", d); err != nil || !slices.Equal(d, []int32{7, -3}) {
		t.Errorf("d.i64 = %v, %v", d, err)
	}
	e := make([]byte, 3)
	if err := f.ReadBytes("e.u8", e); err != nil || !slices.Equal(e, []byte{1, 2, 3}) {
		t.Errorf("e.u8 = %v, %v", e, err)
	}
	if info, ok := f.Info("b.bf16"); !ok || info.DType != BF16 || !slices.Equal(info.Shape, []int{3}) || info.Begin != 8 || info.End != 14 {
		t.Errorf("Info(b.bf16) = %+v, %v", info, ok)
	}
	if _, ok := f.Info("nope"); ok {
		t.Error("Info(nope) found")
	}
}

// TestRoundTrip writes every dtype the Writer supports and reads it back with
// every reader that accepts it.
func TestRoundTrip(t *testing.T) {
	vals := []float32{0, 1, -2.5, 1e-3, 65504, float32(math.Inf(-1)), float32(math.Ldexp(1, -24)), 3.14159}
	tests := []struct {
		dtype DType
		shape []int
		data  []float32
	}{
		{F32, []int{2, 4}, vals},
		{F16, []int{8}, vals},
		{BF16, []int{4, 2}, vals},
		{F64, []int{2, 2, 2}, vals},
		{F32, []int{}, []float32{42}},       // scalar
		{F16, []int{}, []float32{0.5}},      // scalar
		{F32, []int{0}, nil},                // empty
		{BF16, []int{3, 0, 2}, []float32{}}, // empty, middle zero
	}
	path := filepath.Join(t.TempDir(), "rt.safetensors")
	meta := map[string]string{"format": "pt", "note": "ünïcode \"quoted\" <tag> & \n"}
	w := Create(path, meta)
	for i, tc := range tests {
		if err := w.AddFloat32As(fmt.Sprintf("t%d.%s", i, tc.dtype), tc.dtype, tc.shape, tc.data); err != nil {
			t.Fatal(err)
		}
	}
	i32 := []int32{math.MinInt32, -1, 0, 1, math.MaxInt32}
	f64 := []float64{math.Pi, -math.SmallestNonzeroFloat64, math.MaxFloat64}
	if err := w.AddInt32("ints", []int{5}, i32); err != nil {
		t.Fatal(err)
	}
	if err := w.AddInt32("int.scalar", nil, []int32{9}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddInt32("int.empty", []int{0, 4}, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.AddFloat64("f64", []int{3}, f64); err != nil {
		t.Fatal(err)
	}
	if err := w.AddFloat64("f64.empty", []int{0}, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint64(raw); (8+n)%8 != 0 {
		t.Errorf("header length %d leaves data unaligned", n)
	}

	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Metadata(); !reflect.DeepEqual(got, meta) {
		t.Errorf("metadata = %q, want %q", got, meta)
	}
	// Tensors come back in Add order (that is the data order).
	var names []string
	for _, ti := range f.Tensors() {
		names = append(names, ti.Name)
	}
	if len(names) != len(tests)+5 || names[0] != "t0.F32" || names[len(names)-1] != "f64.empty" {
		t.Errorf("tensor order = %v", names)
	}
	for i, tc := range tests {
		name := fmt.Sprintf("t%d.%s", i, tc.dtype)
		info, ok := f.Info(name)
		if !ok || info.DType != tc.dtype || !slices.Equal(info.Shape, tc.shape) && len(tc.shape) != 0 {
			t.Errorf("%s: info %+v", name, info)
		}
		if info.NumElements() != len(tc.data) {
			t.Errorf("%s: NumElements %d, want %d", name, info.NumElements(), len(tc.data))
		}
		want := make([]float32, len(tc.data))
		for j, v := range tc.data {
			switch tc.dtype {
			case F16:
				want[j] = f16ToF32(f32ToF16(v))
			case BF16:
				want[j] = bf16ToF32(F32ToBF16(v))
			default:
				want[j] = v
			}
		}
		got := make([]float32, len(tc.data))
		if err := f.ReadFloat32(name, got); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
		got64 := make([]float64, len(tc.data))
		if err := f.ReadFloat64(name, got64); err != nil {
			t.Errorf("%s: ReadFloat64: %v", name, err)
		}
		for j := range got64 {
			if got64[j] != float64(want[j]) {
				t.Errorf("%s[%d]: ReadFloat64 %v, want %v", name, j, got64[j], want[j])
			}
		}
	}
	gi := make([]int32, 5)
	if err := f.ReadInt32("ints", gi); err != nil || !slices.Equal(gi, i32) {
		t.Errorf("ints = %v, %v", gi, err)
	}
	gs := make([]int32, 1)
	if err := f.ReadInt32("int.scalar", gs); err != nil || gs[0] != 9 {
		t.Errorf("int.scalar = %v, %v", gs, err)
	}
	if err := f.ReadInt32("int.empty", nil); err != nil {
		t.Errorf("int.empty: %v", err)
	}
	g64 := make([]float64, 3)
	if err := f.ReadFloat64("f64", g64); err != nil || !slices.Equal(g64, f64) {
		t.Errorf("f64 = %v, %v", g64, err)
	}
	g32 := make([]float32, 3)
	if err := f.ReadFloat32("f64", g32); err != nil || g32[0] != float32(math.Pi) || !math.IsInf(float64(g32[2]), 1) {
		t.Errorf("f64 as float32 = %v, %v", g32, err)
	}
}

// TestOtherDTypes checks that files with dtypes the Writer does not produce
// open, report the right sizes, and are readable raw or converted.
func TestOtherDTypes(t *testing.T) {
	ts := []rawTensor{
		{"i64", "I64", []int{2}, le64(1, 2)},
		{"i32", "I32", []int{1}, le32(5)},
		{"i16", "I16", []int{2}, le16(1, 2)},
		{"i8", "I8", []int{3}, []byte{1, 2, 3}},
		{"u8", "U8", []int{1}, []byte{9}},
		{"bool", "BOOL", []int{2}, []byte{0, 1}},
		{"u16", "U16", []int{1}, le16(7)},
		{"u32", "U32", []int{1}, le32(7)},
		{"u64", "U64", []int{1}, le64(7)},
		{"c64", "C64", []int{1}, f32bits(1, 2)},
		{"e4m3", "F8_E4M3", []int{2}, []byte{0x38, 0xb8}},
		{"e5m2", "F8_E5M2", []int{2}, []byte{0x3c, 0x7c}},
		{"e8m0", "F8_E8M0", []int{1}, []byte{127}},
		{"f4", "F4", []int{4}, []byte{0x12, 0x34}},
		{"f6", "F6_E2M3", []int{4}, []byte{1, 2, 3}},
	}
	f, err := Open(writeTemp(t, "other.safetensors", buildRaw("", ts)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, rt := range ts {
		buf := make([]byte, len(rt.data))
		if err := f.ReadBytes(rt.name, buf); err != nil || !slices.Equal(buf, rt.data) {
			t.Errorf("%s: ReadBytes = %v, %v", rt.name, buf, err)
		}
	}
	fl := make([]float32, 2)
	if err := f.ReadFloat32("e4m3", fl); err != nil || !slices.Equal(fl, []float32{1, -1}) {
		t.Errorf("e4m3 = %v, %v", fl, err)
	}
	if err := f.ReadFloat32("e5m2", fl); err != nil || fl[0] != 1 || !math.IsInf(float64(fl[1]), 1) {
		t.Errorf("e5m2 = %v, %v", fl, err)
	}
	// Unsupported conversions are errors naming the file, tensor and dtype.
	for _, tc := range []struct {
		name string
		read func() error
	}{
		{"u8", func() error { return f.ReadFloat32("u8", make([]float32, 1)) }},
		{"i64", func() error { return f.ReadFloat32("i64", make([]float32, 2)) }},
		{"f4", func() error { return f.ReadFloat32("f4", make([]float32, 4)) }},
		{"u32", func() error { return f.ReadInt32("u32", make([]int32, 1)) }},
		{"i16", func() error { return f.ReadFloat64("i16", make([]float64, 2)) }},
	} {
		err := tc.read()
		if err == nil || !strings.Contains(err.Error(), f.Path()) || !strings.Contains(err.Error(), "cannot read dtype") ||
			!strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: error %v", tc.name, err)
		}
	}
}

func TestReadErrors(t *testing.T) {
	content := buildRaw("", []rawTensor{
		{"big", "I64", []int{2}, le64(1, 1<<40)},
		{"x", "F32", []int{2}, f32bits(1, 2)},
	})
	path := writeTemp(t, "readerr.safetensors", content)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc string
		err  error
		want string
	}{
		{"missing tensor", f.ReadFloat32("nope", nil), `no tensor "nope"`},
		{"length mismatch", f.ReadFloat32("x", make([]float32, 3)), "has 2 elements"},
		{"bytes mismatch", f.ReadBytes("x", make([]byte, 3)), "has 8 bytes"},
		{"int64 out of range", f.ReadInt32("big", make([]int32, 2)), "does not fit in int32"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), path) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q and the path", tc.desc, tc.err, tc.want)
		}
	}
	// The file shrinks after Open: reads fail with a short read, not garbage.
	if err := os.Truncate(path, int64(len(content)-4)); err != nil {
		t.Fatal(err)
	}
	if err := f.ReadFloat32("x", make([]float32, 2)); err == nil || !strings.Contains(err.Error(), "short read") || !strings.Contains(err.Error(), path) {
		t.Errorf("truncated read: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.ReadFloat32("x", make([]float32, 2)); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("read after close: %v", err)
	}
}

// TestBadFiles feeds malformed files to Open: each must fail with an error
// naming the file and the problem.
func TestBadFiles(t *testing.T) {
	good := `"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	tensor := func(dtype, shape, offsets string) string {
		return fmt.Sprintf(`"a":{"dtype":%s,"shape":%s,"data_offsets":%s}`, dtype, shape, offsets)
	}
	hugeLen := binary.LittleEndian.AppendUint64(nil, 200_000_000)
	tests := []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty file", nil, "too short"},
		{"short prefix", []byte{1, 2, 3}, "too short"},
		{"zero header length", le64(0), "header is empty"},
		{"header length past end", append(le64(100), `{}`...), "exceeds the 2 bytes"},
		{"header length over limit", append(hugeLen, `{}`...), "exceeds the 100000000-byte limit"},
		{"header length near 2^64", append(le64(1<<64-1), `{}`...), "limit"},
		{"invalid JSON", withHeader(`{"a":`, nil), "invalid JSON"},
		{"invalid JSON token", withHeader(`{"a":nope}`, nil), "invalid JSON"},
		{"not an object", withHeader(`[1,2]`, nil), "expected a JSON object"},
		{"string header", withHeader(`"hello"`, nil), "expected a JSON object"},
		{"trailing garbage", withHeader(`{}x`, nil), "unexpected data after"},
		{"two objects", withHeader(`{}{}`, nil), "unexpected data after"},
		{"invalid UTF-8", withHeader("{\"\xff\":1}", nil), "UTF-8"},
		{"tensor not an object", withHeader(`{"a":[1]}`, nil), "expected a JSON object"},
		{"wrong dtype", withHeader(`{`+tensor(`"F33"`, `[2]`, `[0,8]`)+`}`, make([]byte, 8)), `unknown dtype "F33"`},
		{"lowercase dtype", withHeader(`{`+tensor(`"f32"`, `[2]`, `[0,8]`)+`}`, make([]byte, 8)), `unknown dtype`},
		{"dtype not string", withHeader(`{`+tensor(`4`, `[2]`, `[0,8]`)+`}`, make([]byte, 8)), "dtype must be a string"},
		{"missing dtype", withHeader(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), "missing dtype"},
		{"missing shape", withHeader(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, make([]byte, 8)), "missing shape"},
		{"missing offsets", withHeader(`{"a":{"dtype":"F32","shape":[2]}}`, make([]byte, 8)), "missing data_offsets"},
		{"negative dim", withHeader(`{`+tensor(`"F32"`, `[-1]`, `[0,8]`)+`}`, make([]byte, 8)), "non-negative"},
		{"fractional dim", withHeader(`{`+tensor(`"F32"`, `[2.0]`, `[0,8]`)+`}`, make([]byte, 8)), "non-negative"},
		{"exponent dim", withHeader(`{`+tensor(`"F32"`, `[2e0]`, `[0,8]`)+`}`, make([]byte, 8)), "non-negative"},
		{"string dim", withHeader(`{`+tensor(`"F32"`, `["2"]`, `[0,8]`)+`}`, make([]byte, 8)), "must be integers"},
		{"shape not array", withHeader(`{`+tensor(`"F32"`, `2`, `[0,8]`)+`}`, make([]byte, 8)), "must be an array"},
		{"dim beyond int64", withHeader(`{`+tensor(`"F32"`, `[99999999999999999999]`, `[0,8]`)+`}`, make([]byte, 8)), "non-negative 64-bit"},
		{"overflowing shape", withHeader(`{`+tensor(`"F32"`, `[4294967296,4294967296]`, `[0,8]`)+`}`, make([]byte, 8)), "too many elements"},
		{"overflowing bytes", withHeader(`{`+tensor(`"F64"`, `[2305843009213693952]`, `[0,8]`)+`}`, make([]byte, 8)), "too many elements"},
		{"10^12 elements", withHeader(`{`+tensor(`"F32"`, `[1000000,1000000]`, `[0,8]`)+`}`, make([]byte, 8)), "needs 4000000000000 bytes"},
		{"size mismatch", withHeader(`{`+tensor(`"F32"`, `[3]`, `[0,8]`)+`}`, make([]byte, 8)), "needs 12 bytes"},
		{"scalar size mismatch", withHeader(`{`+tensor(`"F32"`, `[]`, `[0,8]`)+`}`, make([]byte, 8)), "needs 4 bytes"},
		{"sub-byte misaligned", withHeader(`{`+tensor(`"F4"`, `[3]`, `[0,2]`)+`}`, make([]byte, 2)), "whole number of bytes"},
		{"offsets past buffer", withHeader(`{`+tensor(`"F32"`, `[2]`, `[0,8]`)+`}`, make([]byte, 4)), "data_offsets [0,8] out of range (buffer is 4 bytes)"},
		{"offsets reversed", withHeader(`{`+tensor(`"F32"`, `[0]`, `[8,0]`)+`}`, make([]byte, 8)), "out of range"},
		{"one offset", withHeader(`{`+tensor(`"F32"`, `[2]`, `[8]`)+`}`, make([]byte, 8)), "must have 2 entries"},
		{"three offsets", withHeader(`{`+tensor(`"F32"`, `[2]`, `[0,8,8]`)+`}`, make([]byte, 8)), "must have 2 entries"},
		{"negative offset", withHeader(`{`+tensor(`"F32"`, `[2]`, `[-8,0]`)+`}`, make([]byte, 8)), "non-negative"},
		{"huge offset", withHeader(`{`+tensor(`"F32"`, `[2]`, `[9223372036854775800,9223372036854775807]`)+`}`, make([]byte, 8)), "out of range"},
		{"overlap", withHeader(`{`+good+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)), "overlap"},
		{"same range", withHeader(`{`+good+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), "overlap"},
		{"empty inside other", withHeader(`{`+good+`,"b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}`, make([]byte, 8)), "overlap"},
		{"hole", withHeader(`{`+good+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}}`, make([]byte, 16)), "hole"},
		{"hole at start", withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)), "hole"},
		{"trailing bytes", withHeader(`{`+good+`}`, make([]byte, 12)), "cover only the first 8"},
		{"no tensors but data", withHeader(`{}`, make([]byte, 4)), "cover only the first 0"},
		{"truncated data", withHeader(`{`+good+`}`, make([]byte, 5)), "out of range (buffer is 5 bytes)"},
		{"duplicate names", withHeader(`{`+good+`,`+good+`}`, make([]byte, 16)), `duplicate key "a"`},
		{"duplicate field", withHeader(`{"a":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), `duplicate key "dtype"`},
		{"duplicate metadata", withHeader(`{"__metadata__":{},"__metadata__":{}}`, nil), `duplicate key "__metadata__"`},
		{"duplicate metadata key", withHeader(`{"__metadata__":{"k":"1","k":"2"}}`, nil), `duplicate key "k"`},
		{"metadata number", withHeader(`{"__metadata__":{"k":1}}`, nil), `value of "k" must be a string`},
		{"metadata object", withHeader(`{"__metadata__":{"k":{"x":"y"}}}`, nil), `value of "k" must be a string`},
		{"metadata null value", withHeader(`{"__metadata__":{"k":null}}`, nil), `must be a string`},
		{"metadata array", withHeader(`{"__metadata__":["k"]}`, nil), "expected a JSON object"},
		{"metadata string", withHeader(`{"__metadata__":"k"}`, nil), "expected a JSON object"},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("bad-%02d.safetensors", i))
			if err := os.WriteFile(path, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatalf("Open succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want one containing the path and %q", err, tc.want)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "directory") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(dir, "missing.safetensors")
		_, err := Open(path)
		if err == nil || !strings.Contains(err.Error(), path) || !os.IsNotExist(unwrapAll(err)) {
			t.Errorf("error %v", err)
		}
	})
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// TestAcceptedOddities covers inputs the reference reader accepts.
func TestAcceptedOddities(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
		tensors int
	}{
		{"empty header object", withHeader(`{}`, nil), 0},
		{"whitespace padding", withHeader("{}      \n\t ", nil), 0},
		{"null metadata", withHeader(`{"__metadata__":null}`, nil), 0},
		{"unknown tensor field", withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":{"x":[1]}}}`, make([]byte, 4)), 1},
		{"empty tensors at shared offsets", withHeader(`{"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"I8","shape":[2,0],"data_offsets":[4,4]}}`, make([]byte, 4)), 3},
		{"huge dim times zero", withHeader(`{"a":{"dtype":"F32","shape":[0,9223372036854775807],"data_offsets":[0,0]}}`, nil), 1},
		{"huge dims then zero", withHeader(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, nil), 1},
		{"escaped name", withHeader(`{"a\u00e9\"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(writeTemp(t, "ok.safetensors", tc.content))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if n := len(f.Tensors()); n != tc.tensors {
				t.Errorf("%d tensors, want %d", n, tc.tensors)
			}
			for _, ti := range f.Tensors() {
				if err := f.ReadBytes(ti.Name, make([]byte, ti.End-ti.Begin)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestHostileErrorsStayShort checks that megabyte-sized names and shapes in a
// hostile header do not end up verbatim in error messages.
func TestHostileErrorsStayShort(t *testing.T) {
	long := strings.Repeat("é", 1<<15)
	dims := strings.TrimSuffix(strings.Repeat("1,", 1<<15), ",")
	tests := map[string]string{
		"long name":      `{"` + long + `":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}`,
		"long dtype":     `{"a":{"dtype":"` + long + `","shape":[1],"data_offsets":[0,4]}}`,
		"long shape":     `{"a":{"dtype":"F32","shape":[` + dims + `],"data_offsets":[0,8]}}`,
		"duplicate":      `{"` + long + `":1,"` + long + `":1}`,
		"metadata":       `{"__metadata__":{"` + long + `":1}}`,
		"long number":    `{"a":{"dtype":"F32","shape":[` + strings.Repeat("9", 1<<16) + `],"data_offsets":[0,4]}}`,
		"long overlap":   `{"` + long + `":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`,
		"long str shape": `{"a":{"dtype":"F32","shape":["` + long + `"],"data_offsets":[0,4]}}`,
	}
	for name, hdr := range tests {
		path := writeTemp(t, "long.safetensors", withHeader(hdr, make([]byte, 4)))
		_, err := Open(path)
		if err == nil {
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		if len(err.Error()) > 1000 || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error is %d bytes: %.300s", name, len(err.Error()), err)
		}
	}
}
