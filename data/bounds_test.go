package data

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// allocated returns the bytes allocated while fn runs.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// readBounded reads every document of path, returning the errors met (bad records are skipped, as --skip-bad does).
func readBounded(t *testing.T, path string, opt InputOptions) (docs []string, bad []error, err error) {
	t.Helper()
	r, err := OpenInput(path, opt)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for {
		d, err := r.Next()
		var br *BadRecordError
		switch {
		case err == io.EOF:
			return docs, bad, nil
		case errors.As(err, &br):
			bad = append(bad, err)
		case err != nil:
			return docs, bad, err
		default:
			docs = append(docs, d.Text)
		}
	}
}

// TestGzipBombIsRefused: 256 MiB of zeros, gzip-compressed to a few hundred KiB, read as one document, is
// refused as a decompression bomb after reading a few MiB, not expanded whole.
func TestGzipBombIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb.txt.gz")
	f, _ := os.Create(path)
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	zeros := make([]byte, 1<<20)
	for range 256 {
		zw.Write(zeros)
	}
	zw.Close()
	f.Close()
	var err error
	n := allocated(func() { _, _, err = readBounded(t, path, InputOptions{}) })
	if err == nil || !strings.Contains(err.Error(), "decompression bomb") || !strings.Contains(err.Error(), path) {
		t.Fatalf("reading a gzip bomb: %v, want it refused as a decompression bomb naming the file", err)
	}
	if n > 128<<20 { // expanded whole it is 256 MiB, and a growing buffer allocates twice that
		t.Errorf("reading the bomb allocated %d MiB before refusing it", n>>20)
	}
}

// TestOverlongLineIsABadRecord: a JSON line longer than MaxDocument is a malformed record, of which at most
// MaxDocument bytes are held (the reader goes on to the next line), and a plain-text file over MaxDocument read as one document is
// refused with what to do instead.
func TestOverlongLineIsABadRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "long.jsonl")
	f, _ := os.Create(path)
	w := bufio.NewWriter(f)
	w.WriteString(`{"text": "before"}` + "\n" + `{"text": "`)
	chunk := strings.Repeat("x", 1<<20)
	for range MaxDocument>>20 + 2 {
		w.WriteString(chunk)
	}
	w.WriteString(`"}` + "\n" + `{"text": "after"}` + "\n")
	w.Flush()
	f.Close()
	docs, bad, err := readBounded(t, path, InputOptions{})
	if err != nil || strings.Join(docs, ",") != "before,after" || len(bad) != 1 || !strings.Contains(bad[0].Error(), "line 2") {
		t.Fatalf("docs %q, bad records %v, error %v: want before and after, and line 2 as a bad record", docs, bad, err)
	}

	txt := filepath.Join(dir, "big.txt")
	os.WriteFile(txt, make([]byte, MaxDocument+1), 0o644)
	if _, _, err := readBounded(t, txt, InputOptions{}); err == nil || !strings.Contains(err.Error(), "split it into documents") {
		t.Fatalf("a %d-byte text file as one document: %v", MaxDocument+1, err)
	}
	if docs, _, err := readBounded(t, txt, InputOptions{DocSep: DocSepLine}); err != nil || len(docs) != 0 {
		t.Fatalf("the same file, line by line (all NUL bytes, one line over the bound): %v %d", err, len(docs))
	}
}

// TestReplacedUTF8IsCounted: JSON records whose bytes are not valid UTF-8 (decoded with U+FFFD in their place)
// are counted per input and overall in stats.json, and the tokenizer's pre-tokenizer is recorded.
func TestReplacedUTF8IsCounted(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		if i%10 == 3 {
			b.WriteString("{\"text\": \"bad \xff\xfe byte " + strings.Repeat("y", i) + "\"}\n")
		} else {
			b.WriteString(`{"text": "good text number ` + strings.Repeat("x", i) + `"}` + "\n")
		}
	}
	in := writeTestFile(t, t.TempDir(), "mixed.jsonl", b.String())
	st, err := PrepareFiles(t.TempDir(), PrepareOptions{Inputs: []string{in}, Vocab: 300, ValFraction: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if st.ReplacedUTF8 != 4 || st.Inputs[0].ReplacedUTF8 != 4 {
		t.Errorf("replaced_utf8_records = %d (input %d), want 4", st.ReplacedUTF8, st.Inputs[0].ReplacedUTF8)
	}
	if st.PreTokenizer != "smallinit" {
		t.Errorf("pre_tokenizer = %q, want smallinit for a trained tokenizer", st.PreTokenizer)
	}
}
