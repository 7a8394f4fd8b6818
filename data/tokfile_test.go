package data

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokensRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		ids   []int32
		width int
	}{
		{"empty", nil, 2},
		{"uint16", []int32{0, 1, 65535, 7}, 2},
		{"uint32", []int32{0, 65536, 1 << 30}, 4},
	} {
		path := filepath.Join(dir, tc.name+".tok")
		if err := WriteTokens(path, tc.ids); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		if want := int64(tokHeaderSize + tc.width*len(tc.ids)); st.Size() != want {
			t.Errorf("%s: file is %d bytes, want %d", tc.name, st.Size(), want)
		}
		got, err := ReadTokens(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.ids) {
			t.Fatalf("%s: read %d tokens, wrote %d", tc.name, len(got), len(tc.ids))
		}
		for i := range got {
			if got[i] != tc.ids[i] {
				t.Errorf("%s: token %d = %d, want %d", tc.name, i, got[i], tc.ids[i])
			}
		}
	}
}

func TestReadTokensRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	header := func(magic string, version, width uint32, count uint64) []byte {
		b := make([]byte, tokHeaderSize)
		copy(b, magic)
		binary.LittleEndian.PutUint32(b[8:], version)
		binary.LittleEndian.PutUint32(b[12:], width)
		binary.LittleEndian.PutUint64(b[16:], count)
		return b
	}
	good := append(header(TokMagic, 1, 2, 2), 1, 0, 9, 0)
	for _, tc := range []struct {
		name, want string
		data       []byte
		vocab      int
	}{
		{"empty", "header", nil, 0},
		{"wrong magic", "not a token file", append(header("NOTTOKEN", 1, 2, 2), 1, 0, 2, 0), 0},
		{"version 2", "version 2", append(header(TokMagic, 2, 2, 2), 1, 0, 2, 0), 0},
		{"width 3", "3 bytes per token", append(header(TokMagic, 1, 3, 1), 1, 0, 0), 0},
		{"truncated", "header says 3 tokens", append(header(TokMagic, 1, 2, 3), 1, 0, 2, 0), 0},
		{"huge count", "header says", header(TokMagic, 1, 4, 1<<62), 0},
		{"id >= vocab", "outside the vocabulary", good, 5},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".tok")
		os.WriteFile(path, tc.data, 0o644)
		_, err := ReadTokens(path, tc.vocab)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming the file and containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadTokens(dir, 0); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: error %v", err)
	}
	if _, err := ReadTokens(filepath.Join(dir, "missing.tok"), 0); err == nil {
		t.Error("missing file: no error")
	}
}

func TestWindows(t *testing.T) {
	for _, tc := range []struct{ n, T, want int }{{0, 4, 0}, {4, 4, 0}, {5, 4, 1}, {9, 4, 2}, {12, 4, 2}, {13, 4, 3}} {
		if got := NumWindows(tc.n, tc.T); got != tc.want {
			t.Errorf("NumWindows(%d, %d) = %d, want %d", tc.n, tc.T, got, tc.want)
		}
	}
	toks := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8}
	in, tg := make([]int32, 4), make([]int32, 4)
	Window(toks, 1, in, tg)
	if in[0] != 4 || in[3] != 7 || tg[0] != 5 || tg[3] != 8 {
		t.Errorf("window 1 = %v -> %v", in, tg)
	}
}
