//go:build linux

package data

import (
	"fmt"
	"github.com/smallinit/smallinit/internal/fulldisk"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWritersOnFullDisk: WriteTokens, TokWriter and PrepareFiles on a full disk fail with an error naming
// the file, leave the previous files untouched and no temporary file behind.
func TestWritersOnFullDisk(t *testing.T) {
	dir, child := fulldisk.Run(t, "TestWritersOnFullDisk")
	if !child {
		return
	}
	old := []int32{1, 2, 3}
	a, b := filepath.Join(dir, "a.tok"), filepath.Join(dir, "b.tok")
	for _, p := range []string{a, b} {
		if err := WriteTokens(p, old); err != nil {
			t.Fatal(err)
		}
	}
	many := make([]int32, 1<<20)
	err := WriteTokens(a, many)
	if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), "file too large") {
		t.Errorf("WriteTokens: %v", err)
	}
	w, err := NewTokWriter(b, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	werr := w.Write(many)
	cerr := w.Close()
	if werr == nil && cerr == nil || cerr == nil || !strings.Contains(cerr.Error(), b) {
		t.Errorf("TokWriter: Write %v, Close %v", werr, cerr)
	}
	for _, p := range []string{a, b} {
		if got, err := ReadTokens(p, 0); err != nil || fmt.Sprint(got) != fmt.Sprint(old) {
			t.Errorf("%s after a failed write: %v %v, want the old file", p, got, err)
		}
	}
	fulldisk.NoTemps(t, dir)

	in := filepath.Join(t.TempDir(), "in.txt")
	text := make([]byte, 300<<10) // random letters: many tokens, more than the limit
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range text {
		text[i] = "abcdefghijklmnopqrstuvwxyz      "[rng.IntN(32)]
	}
	os.WriteFile(in, text, 0o644)
	out := filepath.Join(dir, "prepared")
	if _, err := PrepareFiles(out, PrepareOptions{Inputs: []string{in}, Vocab: 300}); err == nil || !strings.Contains(err.Error(), "file too large") {
		t.Errorf("PrepareFiles: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("PrepareFiles on a full disk left %s behind", out)
	}
}

// TestPrepareLeavesNothingOnError: a failed PrepareFiles removes the output directory it created; a vocabulary
// no model takes is refused.
func TestPrepareLeavesNothingOnError(t *testing.T) {
	src := t.TempDir()
	bad := filepath.Join(src, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"text\": \"ok\"}\nnot json\n"), 0o644)
	out := filepath.Join(t.TempDir(), "fresh")
	if _, err := PrepareFiles(out, PrepareOptions{Inputs: []string{bad}, Vocab: 300}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("PrepareFiles on a bad line: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("failed PrepareFiles left %s", out)
	}
	good := filepath.Join(src, "good.jsonl")
	os.WriteFile(good, []byte("{\"text\": \"ok\"}\n"), 0o644)
	if _, err := PrepareFiles(out, PrepareOptions{Inputs: []string{good}, Vocab: 1 << 30}); err == nil || !strings.Contains(err.Error(), "vocabulary size 1073741824: must be in [257, 16777216]") {
		t.Errorf("PrepareFiles with a vocabulary of 2^30: %v", err)
	}
	// Temporary files of a killed run are removed by the next one.
	os.MkdirAll(out, 0o755)
	stale := filepath.Join(out, "."+TrainFile+".tmp123")
	os.WriteFile(stale, []byte("partial"), 0o644)
	if _, err := PrepareFiles(out, PrepareOptions{Inputs: []string{good}, Vocab: 300}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("stale %s not removed", stale)
	}
}
