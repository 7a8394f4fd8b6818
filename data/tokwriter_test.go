package data

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTokWriterRoundTrip streams ids in several writes and reads them back: the header count is patched to
// the number written, the width follows the vocabulary, and the bytes equal WriteTokens' for the same ids.
func TestTokWriterRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vocab int
		ids   []int32
		width int
	}{
		{"empty", 4096, nil, 2},
		{"uint16", 4096, []int32{0, 1, 4095, 17, 256}, 2},
		{"uint16 edge", 65536, []int32{0, 65535}, 2},
		{"uint32", 128256, []int32{0, 65536, 128255, 3}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.tok")
			w, err := NewTokWriter(path, tc.vocab)
			if err != nil {
				t.Fatal(err)
			}
			if w.Width() != tc.width {
				t.Errorf("width %d, want %d", w.Width(), tc.width)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("final path exists before Close: %v", err)
			}
			for i := 0; i < len(tc.ids); i += 2 {
				if err := w.Write(tc.ids[i:min(i+2, len(tc.ids))]); err != nil {
					t.Fatal(err)
				}
			}
			if w.Count() != int64(len(tc.ids)) {
				t.Errorf("Count %d, want %d", w.Count(), len(tc.ids))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := binary.LittleEndian.Uint64(raw[16:24]); n != uint64(len(tc.ids)) {
				t.Errorf("header count %d, want %d", n, len(tc.ids))
			}
			got, err := ReadTokens(path, tc.vocab)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.ids) && !(len(got) == 0 && len(tc.ids) == 0) {
				t.Errorf("read back %v, want %v", got, tc.ids)
			}
			if tc.width == 2 { // WriteTokens picks 2 bytes too: the files must be identical
				ref := filepath.Join(dir, "ref.tok")
				if err := WriteTokens(ref, tc.ids); err != nil {
					t.Fatal(err)
				}
				want, _ := os.ReadFile(ref)
				if !slices.Equal(raw, want) {
					t.Errorf("bytes differ from WriteTokens'")
				}
			}
			assertNoTemp(t, dir)
		})
	}
}

// TestTokWriterErrors: an id outside the vocabulary fails and leaves nothing behind; Abort leaves the old file;
// an unwritable directory fails at creation.
func TestTokWriterErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.tok")
	if err := WriteTokens(path, []int32{7, 8, 9}); err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]int32{{1, 4096}, {-1}} {
		w, err := NewTokWriter(path, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(ids); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
			t.Errorf("Write(%v): %v, want an out-of-vocabulary error", ids, err)
		}
		if err := w.Close(); err == nil {
			t.Errorf("Close after a failed Write succeeded")
		}
	}
	w, err := NewTokWriter(path, 4096)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]int32{1, 2})
	w.Abort()
	w.Abort()
	if got, err := ReadTokens(path, 0); err != nil || !slices.Equal(got, []int32{7, 8, 9}) {
		t.Errorf("after Abort: %v %v, want the old file", got, err)
	}
	assertNoTemp(t, dir)
	if _, err := NewTokWriter(filepath.Join(dir, "missing", "x.tok"), 4096); err == nil {
		t.Errorf("writer in a missing directory: no error")
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
