package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"github.com/smallinit/smallinit/internal/allocs"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

// The fuzz targets of this package feed arbitrary bytes to the readers of outside input: token files, text and
// JSON-lines corpora (plain and gzip) and Parquet files. Each asserts that the reader returns either an error
// naming the file or a value that passes its own checks, never panics, and allocates no more than a bound
// derived from the size of the input. The allocation is measured as the growth of runtime.MemStats.TotalAlloc
// around the call: a fuzz worker runs one input at a time, so the delta is the reader's own allocation plus a
// little noise from the fuzzing engine, which the constant part of each bound absorbs. A header claiming 10^12
// tokens either is refused before allocating or shows up as a huge delta (or an out-of-memory crash, which
// the fuzzer reports as a failure too).
//
// Run one with, e.g.: go test -run='^$' -fuzz='^FuzzReadTokens$' -fuzztime=60s ./data/

// tokHeader is a token file header with the given fields.
func tokHeader(magic string, version, width uint32, count uint64) []byte {
	b := make([]byte, tokHeaderSize)
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[8:], version)
	binary.LittleEndian.PutUint32(b[12:], width)
	binary.LittleEndian.PutUint64(b[16:], count)
	return b
}

// FuzzReadTokens reads arbitrary bytes as a .tok file with an arbitrary vocabulary. A file it accepts holds
// exactly the header's count of ids of the header's width, all below the vocabulary; the allocation is at most
// the 1 MB read buffer plus 4 bytes per token (2 bytes per file byte) plus slack.
func FuzzReadTokens(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "good.tok")
	for _, ids := range [][]int32{{}, {0, 1, 2, 65535}, {70000, 3}} {
		if err := WriteTokens(good, ids); err != nil {
			f.Fatal(err)
		}
		b, _ := os.ReadFile(good)
		f.Add(b, uint32(0))
		f.Add(b, uint32(3))
		f.Add(b, uint32(1<<17))
	}
	f.Add(tokHeader(TokMagic, TokVersion, 2, 1e12), uint32(0))                              // a header claiming 10^12 tokens
	f.Add(append(tokHeader(TokMagic, TokVersion, 4, 1<<62), 1, 2, 3, 4), uint32(0))         // count·width overflows
	f.Add(append(tokHeader(TokMagic, TokVersion, 4, 1), 0xff, 0xff, 0xff, 0xff), uint32(0)) // id ≥ 2^31
	f.Add(tokHeader("SITOKENZ", TokVersion, 2, 0), uint32(0))
	f.Add(tokHeader(TokMagic, 2, 2, 0), uint32(0))
	f.Add(tokHeader(TokMagic, TokVersion, 3, 0), uint32(0))
	f.Add([]byte(TokMagic), uint32(0))
	f.Add([]byte{}, uint32(0))
	path := filepath.Join(dir, "fuzz.tok")
	f.Fuzz(func(t *testing.T, b []byte, vocab uint32) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		v := int(vocab % (1 << 20))
		var toks []int32
		var err error
		n := allocs.Bytes(func() { toks, err = ReadTokens(path, v) })
		if limit := uint64(2<<20 + 4*len(b)); n > limit {
			t.Fatalf("ReadTokens of a %d-byte file allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		width := int(binary.LittleEndian.Uint32(b[12:]))
		if len(b) != tokHeaderSize+width*len(toks) || uint64(len(toks)) != binary.LittleEndian.Uint64(b[16:]) {
			t.Fatalf("accepted %d tokens of width %d from a %d-byte file", len(toks), width, len(b))
		}
		for i, id := range toks {
			if id < 0 || (v > 0 && int(id) >= v) {
				t.Fatalf("token %d has id %d, vocabulary %d", i, id, v)
			}
		}
	})
}

// inputFormats are the formats FuzzInputReader reads its bytes as, with the document separator for text.
var inputFormats = []struct{ ext, sep string }{
	{"jsonl", ""}, {"jsonl.gz", ""}, {"txt", DocSepFile}, {"txt", DocSepBlank}, {"txt", DocSepLine}, {"txt.gz", DocSepLine},
}

// gzipped compresses b.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// FuzzInputReader reads arbitrary bytes as a JSON-lines or plain-text corpus (format chosen by the second
// argument; the bytes are gzip-compressed first for the .gz formats on even third arguments, taken as they
// are otherwise). Every record must be a document or a *BadRecordError, any other error must name the file,
// indices must increase, JSON texts must be valid UTF-8, documents must not hold more text than the input,
// and the reader may allocate at most 4 MB plus 64 bytes per byte of (uncompressed) input.
func FuzzInputReader(f *testing.F) {
	for i := range inputFormats {
		f.Add([]byte("{\"text\":\"hello\"}\n\n{\"text\":\"a\\u00e9\\ud800\"}\r\n[1]\n{\"text\":3}\n{\"id\":1}\nnot json\n{\"text\":\"x\"} trailing\n\"str\"\n{\"text\":\"\"}\n\uFEFF{\"text\":\"bom\"}"), uint8(i), uint8(0))
		f.Add([]byte("para one\nline two\n\n  \n\npara two\r\n\xff\xfe invalid utf-8\n"), uint8(i), uint8(0))
		f.Add([]byte{}, uint8(i), uint8(0))
	}
	f.Add(gzipped([]byte("{\"text\":\"zipped\"}\n")), uint8(1), uint8(1)) // already compressed: taken as is
	f.Add([]byte("\x1f\x8b\x08\x00garbage"), uint8(5), uint8(1))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, format, raw uint8) {
		in := inputFormats[int(format)%len(inputFormats)]
		path := filepath.Join(dir, "fuzz."+in.ext)
		plain := b
		file := b
		if strings.HasSuffix(in.ext, ".gz") {
			if raw%2 == 0 {
				file = gzipped(b)
			} else {
				// Compressed bytes as given: bound the work by the decompressed size, skipping gzip bombs.
				zr, err := gzip.NewReader(bytes.NewReader(b))
				if err != nil {
					plain = nil
				} else {
					plain, _ = io.ReadAll(io.LimitReader(zr, 1<<22+1))
					if len(plain) > 1<<22 {
						t.Skip("fuzz input out of scope: decompresses to more than 4 MB")
					}
				}
			}
		}
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		var docs []Document
		var fatal error
		n := allocs.Bytes(func() {
			r, err := OpenInput(path, InputOptions{DocSep: in.sep})
			if err != nil {
				fatal = err
				return
			}
			defer r.Close()
			for i := 0; ; i++ {
				if i > len(plain)+2 {
					fatal = errors.New("more records than bytes: the reader does not advance")
					return
				}
				d, err := r.Next()
				if err == io.EOF {
					if r.Offset() != int64(len(file)) {
						t.Errorf("Offset %d at the end of a %d-byte file", r.Offset(), len(file))
					}
					return
				}
				var bad *BadRecordError
				if errors.As(err, &bad) {
					if bad.Path != path || bad.Where == "" {
						t.Errorf("bad record error without its place: %v", bad)
					}
					continue
				}
				if err != nil {
					fatal = err
					return
				}
				docs = append(docs, d)
			}
		})
		if limit := uint64(4<<20 + 64*len(plain)); n > limit {
			t.Fatalf("reading %d bytes as .%s allocated %d bytes (limit %d)", len(plain), in.ext, n, limit)
		}
		if fatal != nil && !strings.Contains(fatal.Error(), path) {
			t.Fatalf("error does not name the file: %v", fatal)
		}
		total := 0
		for i, d := range docs {
			if i > 0 && d.Index <= docs[i-1].Index {
				t.Fatalf("document %d has index %d after %d", i, d.Index, docs[i-1].Index)
			}
			if strings.HasPrefix(in.ext, "jsonl") && !utf8.ValidString(d.Text) {
				t.Fatalf("JSON document %d is not valid UTF-8: %q", i, d.Text)
			}
			if in.sep == DocSepLine && strings.ContainsAny(d.Text, "\n") {
				t.Fatalf("line document %d holds a line break: %q", i, d.Text)
			}
			total += len(d.Text)
		}
		// JSON can turn one invalid byte into the 3-byte U+FFFD; plain text is verbatim.
		if total > 3*len(plain) {
			t.Fatalf("%d bytes of text from %d bytes of input", total, len(plain))
		}
	})
}

// parquetSeeds are valid Parquet files of the kinds the reader meets: plain, dictionary-encoded, Snappy,
// optional (nullable) text, several row groups, no text column, a non-string text column.
func parquetSeeds(f *testing.F) [][]byte {
	dir := f.TempDir()
	docs := []string{"first document", "", "天地玄黄 second", "third\nwith a line break", strings.Repeat("long ", 200)}
	var rows []pqText
	var dict []pqDict
	var opt []pqOptional
	for i, d := range docs {
		rows = append(rows, pqText{ID: int64(i), Text: d})
		dict = append(dict, pqDict{Text: d})
		if i == 1 {
			opt = append(opt, pqOptional{})
		} else {
			opt = append(opt, pqOptional{Content: strp(d)})
		}
	}
	paths := []string{
		writeParquet(f, dir, "plain.parquet", rows, 2),
		writeParquet(f, dir, "dict.parquet", dict, 10),
		writeParquet(f, dir, "snappy.parquet", rows, 3, parquet.Compression(&snappy.Codec{})),
		writeParquet(f, dir, "optional.parquet", opt, 2),
		writeParquet(f, dir, "notext.parquet", []pqNoText{{"a", "en"}}, 1),
		writeParquet(f, dir, "inttext.parquet", []pqIntText{{7}}, 1),
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzParquetInput reads arbitrary bytes as a Parquet corpus, with the text in column "text" or "content"
// (chosen by the second argument). Corrupt files must give errors naming the file, never panics (the
// Parquet library's panics are recovered by the reader), row indices must increase, and the reader may
// allocate at most 16 MB plus 1 kB per byte of input: Parquet pages are compressed, and the reader accepts a
// page expanding up to maxPageExpansion times, but a footer or page header claiming a gigabyte must not be
// believed (see parquet_check.go).
func FuzzParquetInput(f *testing.F) {
	for _, b := range parquetSeeds(f) {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte("PAR1PAR1"), false)
	f.Add([]byte{}, false)
	dir := f.TempDir()
	path := filepath.Join(dir, "fuzz.parquet")
	f.Fuzz(func(t *testing.T, b []byte, content bool) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		col := "text"
		if content {
			col = "content"
		}
		var docs []Document
		var fatal error
		var n uint64
		done := make(chan struct{})
		go func() {
			defer close(done)
			n = allocs.Bytes(func() { docs, fatal = readParquetDocs(path, col, len(b)) })
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			stack := make([]byte, 1<<20)
			t.Fatalf("reading a %d-byte Parquet file hangs:\n%s", len(b), stack[:runtime.Stack(stack, true)])
		}
		if limit := uint64(16<<20 + 1024*len(b)); n > limit {
			t.Fatalf("reading a %d-byte Parquet file allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if fatal != nil && !strings.Contains(fatal.Error(), path) {
			t.Fatalf("error does not name the file: %v", fatal)
		}
		for i := 1; i < len(docs); i++ {
			if docs[i].Index <= docs[i-1].Index {
				t.Fatalf("row %d has index %d after %d", i, docs[i].Index, docs[i-1].Index)
			}
		}
	})
}

// readParquetDocs reads every document of a Parquet file of size bytes, skipping bad records, and returns
// them with the error that ended the reading (nil at the end of the file).
func readParquetDocs(path, col string, size int) ([]Document, error) {
	r, err := OpenInput(path, InputOptions{TextColumn: col})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var docs []Document
	for i := 0; i <= 64*size+16; i++ {
		d, err := r.Next()
		if err == io.EOF {
			return docs, nil
		}
		var bad *BadRecordError
		if errors.As(err, &bad) {
			continue
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, d)
	}
	return docs, errors.New("more rows than the file can hold: the reader does not advance")
}
