package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/smallinit/smallinit/tokenizer"
)

// TestPrepareEmbeddedFailureLeavesNoMarker: re-preparing a directory that a failure stops part-way (here val.tok
// cannot be replaced: a directory stands in its place) leaves no stats.json, the marker of a complete directory,
// beside the new tokenizer and train.tok; the demo would otherwise reuse the mixed directory as it is.
func TestPrepareEmbeddedFailureLeavesNoMarker(t *testing.T) {
	dir := t.TempDir()
	tokA, err := tokenizer.Train([]string{"hello world, hello there"}, 260)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareEmbedded(dir, 0, tokA); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStats(dir); err != nil {
		t.Fatalf("the first, complete preparation has no stats: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, ValFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ValFile, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	tokB, err := tokenizer.Train([]string{"the quick brown fox jumps over the lazy dog again and again"}, 280)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareEmbedded(dir, 0, tokB); err == nil {
		t.Fatal("preparing over a directory in place of val.tok succeeded")
	}
	if st, err := ReadStats(dir); err == nil {
		t.Errorf("stats.json (vocab %d) survives a preparation that failed after replacing tokenizer.json", st.VocabSize)
	}
}
