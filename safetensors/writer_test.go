package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirNames lists the entries of dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// withExisting makes a directory holding target with known old content.
func withExisting(t *testing.T) (dir, target string) {
	t.Helper()
	dir = t.TempDir()
	target = filepath.Join(dir, "model.safetensors")
	if err := os.WriteFile(target, []byte("old contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, target
}

func assertUnchanged(t *testing.T, dir, target string) {
	t.Helper()
	got, err := os.ReadFile(target)
	if err != nil || string(got) != "old contents" {
		t.Errorf("target changed: %q, %v", got, err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{filepath.Base(target)}) {
		t.Errorf("directory holds %v, want only the target (temp file left behind?)", names)
	}
}

func TestWriterReplacesExisting(t *testing.T) {
	dir, target := withExisting(t)
	w := Create(target, nil)
	if err := w.AddFloat32("x", []int{2}, []float32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"model.safetensors"}) {
		t.Errorf("directory holds %v", names)
	}
	f, err := Open(target)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata() != nil {
		t.Errorf("metadata = %v, want nil", f.Metadata())
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), target) {
		t.Errorf("second Close: %v", err)
	}
	if err := w.AddFloat32("y", nil, []float32{1}); err == nil {
		t.Error("Add after Close succeeded")
	}
}

func TestWriterAbort(t *testing.T) {
	dir, target := withExisting(t)
	w := Create(target, map[string]string{"a": "b"})
	if err := w.AddFloat32("x", []int{2}, []float32{1, 2}); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	assertUnchanged(t, dir, target)
	if err := w.Close(); err == nil {
		t.Error("Close after Abort succeeded")
	}
	assertUnchanged(t, dir, target)
	w.Abort() // idempotent
}

func TestWriterFailedClose(t *testing.T) {
	t.Run("directory removed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "sub")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, "m.safetensors")
		w := Create(target, nil)
		if err := w.AddFloat32("x", []int{1}, []float32{1}); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		err := w.Close()
		if err == nil || !strings.Contains(err.Error(), target) || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Close: %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("directory reappeared: %v", err)
		}
	})
	t.Run("failure before rename", func(t *testing.T) {
		dir, target := withExisting(t)
		testHookBeforeRename = func(tmp string) error {
			// The temp file is complete, valid and next to the target.
			if filepath.Dir(tmp) != dir {
				t.Errorf("temp file %s not in %s", tmp, dir)
			}
			f, err := Open(tmp)
			if err != nil {
				t.Errorf("temp file invalid: %v", err)
			} else {
				f.Close()
			}
			return errors.New("injected failure")
		}
		defer func() { testHookBeforeRename = nil }()
		w := Create(target, nil)
		if err := w.AddFloat32As("x", F16, []int{3}, []float32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), "injected failure") || !strings.Contains(err.Error(), target) {
			t.Fatalf("Close: %v", err)
		}
		assertUnchanged(t, dir, target)
	})
	t.Run("rename onto directory", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "m.safetensors")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		w := Create(target, nil)
		if err := w.AddInt32("x", []int{1}, []int32{1}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), target) {
			t.Fatalf("Close: %v", err)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"m.safetensors"}) {
			t.Errorf("directory holds %v (temp file left behind?)", names)
		}
	})
	t.Run("earlier Add error", func(t *testing.T) {
		dir, target := withExisting(t)
		w := Create(target, nil)
		if err := w.AddFloat32("ok", []int{1}, []float32{1}); err != nil {
			t.Fatal(err)
		}
		if err := w.AddFloat32("bad", []int{3}, []float32{1}); err == nil {
			t.Fatal("mismatched Add succeeded")
		}
		if err := w.AddFloat32("later", []int{1}, []float32{1}); err != nil {
			t.Fatal(err)
		}
		err := w.Close()
		if err == nil || !strings.Contains(err.Error(), `"bad"`) {
			t.Fatalf("Close: %v, want the Add error", err)
		}
		assertUnchanged(t, dir, target)
	})
	t.Run("invalid metadata", func(t *testing.T) {
		dir, target := withExisting(t)
		w := Create(target, map[string]string{"k": "\xff"})
		if err := w.Close(); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Fatalf("Close: %v", err)
		}
		assertUnchanged(t, dir, target)
	})
}

func TestWriterAddErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	tests := []struct {
		desc string
		add  func(w *Writer) error
		want string
	}{
		{"length mismatch", func(w *Writer) error { return w.AddFloat32("a", []int{2, 2}, make([]float32, 3)) }, "has 4 elements but data has 3"},
		{"scalar mismatch", func(w *Writer) error { return w.AddFloat32("a", nil, nil) }, "has 1 elements but data has 0"},
		{"negative dim", func(w *Writer) error { return w.AddInt32("a", []int{-1}, nil) }, "invalid shape"},
		{"overflow", func(w *Writer) error { return w.AddFloat64("a", []int{1 << 40, 1 << 40}, nil) }, "invalid shape"},
		{"empty name", func(w *Writer) error { return w.AddFloat32("", []int{1}, []float32{1}) }, "name is empty"},
		{"reserved name", func(w *Writer) error { return w.AddFloat32("__metadata__", []int{1}, []float32{1}) }, "reserved"},
		{"invalid UTF-8 name", func(w *Writer) error { return w.AddFloat32("\xff", []int{1}, []float32{1}) }, "UTF-8"},
		{"bad dtype", func(w *Writer) error { return w.AddFloat32As("a", I32, []int{1}, []float32{1}) }, "cannot store float32 data as dtype"},
		{"duplicate", func(w *Writer) error {
			if err := w.AddFloat32("a", []int{1}, []float32{1}); err != nil {
				return nil
			}
			return w.AddInt32("a", []int{1}, []int32{1})
		}, `"a" added twice`},
	}
	for _, tc := range tests {
		w := Create(path, nil)
		err := tc.add(w)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one containing %q and the path", tc.desc, err, tc.want)
		}
		w.Abort()
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("aborted writers created %s", path)
	}
}

// TestWriterShapeCopied checks that changing the shape slice after Add does
// not change the written header.
func TestWriterShapeCopied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	w := Create(path, nil)
	shape := []int{2, 1}
	if err := w.AddFloat32("a", shape, []float32{1, 2}); err != nil {
		t.Fatal(err)
	}
	shape[0], shape[1] = 1, 2
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if info, _ := f.Info("a"); !slices.Equal(info.Shape, []int{2, 1}) {
		t.Errorf("shape %v", info.Shape)
	}
}

func BenchmarkReadF32(b *testing.B) {
	path := filepath.Join(b.TempDir(), "b.safetensors")
	data := make([]float32, 1<<22)
	w := Create(path, nil)
	w.AddFloat32("x", []int{len(data)}, data)
	w.AddFloat32As("h", BF16, []int{len(data)}, data)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, name := range []string{"x", "h"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(data)))
			for b.Loop() {
				if err := f.ReadFloat32(name, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEncodeHeader: the rendering Writer uses, by hand on a small case (length prefix, metadata first, offsets
// from shape × dtype size, space padding to 8), and refusals of what cannot be encoded.
func TestEncodeHeader(t *testing.T) {
	got, err := EncodeHeader(map[string]string{"format": "pt"}, []HeaderTensor{
		{Name: "a", DType: BF16, Shape: []int{2, 3}}, {Name: "b", DType: F32, Shape: []int{}}})
	if err != nil {
		t.Fatal(err)
	}
	json := `{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[],"data_offsets":[12,16]}}`
	for len(json)%8 != 0 {
		json += " "
	}
	want := binary.LittleEndian.AppendUint64(nil, uint64(len(json)))
	if want = append(want, json...); !bytes.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if nometa, _ := EncodeHeader(nil, nil); string(nometa[8:]) != "{}      " {
		t.Errorf("empty header %q", nometa)
	}
	for _, bad := range []HeaderTensor{{Name: "x", DType: "Q4", Shape: []int{1}}, {Name: "x", DType: F32, Shape: []int{-1}}} {
		if _, err := EncodeHeader(nil, []HeaderTensor{bad}); err == nil {
			t.Errorf("%+v encoded", bad)
		}
	}
}
