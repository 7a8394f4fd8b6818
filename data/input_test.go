package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// writeTestFile writes data to dir/name (gzip-compressed when name ends in .gz), creating parent directories.
func writeTestFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b := []byte(data)
	if strings.HasSuffix(name, ".gz") {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		b = buf.Bytes()
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Parquet row types for the fixtures.
type (
	pqText struct {
		ID   int64  `parquet:"id"`
		Text string `parquet:"text"`
	}
	pqDict struct {
		Text string `parquet:"text,dict"`
	}
	pqOptional struct {
		Content *string `parquet:"content,optional"`
	}
	pqNoText struct {
		Content string `parquet:"content"`
		Lang    string `parquet:"lang"`
	}
	pqIntText struct {
		Text int64 `parquet:"text"`
	}
)

// writeParquet writes rows to dir/name as Parquet with at most perGroup rows per row group.
func writeParquet[T any](t testing.TB, dir, name string, rows []T, perGroup int64, opts ...parquet.WriterOption) string {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, append(opts, parquet.MaxRowsPerRowGroup(perGroup))...)
	for i := 0; i < len(rows); i += int(perGroup) {
		if _, err := w.Write(rows[i:min(i+int(perGroup), len(rows))]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func strp(s string) *string { return &s }

// readAll reads every document and bad record of path.
func readAll(t *testing.T, path string, opt InputOptions) (docs []Document, bad []*BadRecordError, err error) {
	t.Helper()
	r, err := OpenInput(path, opt)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for {
		d, err := r.Next()
		if err == io.EOF {
			if r.Offset() != fileSize(t, path) {
				t.Errorf("%s: Offset %d at the end, file size %d", path, r.Offset(), fileSize(t, path))
			}
			return docs, bad, nil
		}
		var be *BadRecordError
		if errors.As(err, &be) {
			bad = append(bad, be)
			continue
		}
		if err != nil {
			return docs, bad, err
		}
		docs = append(docs, d)
	}
}

func fileSize(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func texts(docs []Document) []string {
	var s []string
	for _, d := range docs {
		s = append(s, d.Text)
	}
	return s
}

// TestInputFormats reads every format (plain and gzip, Parquet with several row groups, dictionary encoding,
// Snappy compression and another column) and checks the documents, their indices and locations.
func TestInputFormats(t *testing.T) {
	dir := t.TempDir()
	const txt = "Call me Ishmael.\nSome years ago.\n\n\n  \nIt is a way\r\nI have.\r\n\r\n天地玄黄\n"
	const jsonl = "{\"text\": \"one\", \"id\": 1}\n\n{\"id\": 2, \"text\": \"two\\nlines é \\u5929\"}\n   \n{\"text\":\"\"}\n"
	many := make([]pqText, 7)
	for i := range many {
		many[i] = pqText{ID: int64(i), Text: strings.Repeat("row ", i+1)}
	}
	var manyTexts, manyWhere []string
	for i, r := range many {
		manyTexts = append(manyTexts, r.Text)
		manyWhere = append(manyWhere, []string{"row group 0 row 0", "row group 0 row 1", "row group 0 row 2",
			"row group 1 row 0", "row group 1 row 1", "row group 1 row 2", "row group 2 row 0"}[i])
	}
	for _, tc := range []struct {
		name  string
		path  string
		opt   InputOptions
		want  []string
		where []string
	}{
		{"txt file", writeTestFile(t, dir, "a.txt", txt), InputOptions{}, []string{txt}, []string{""}},
		{"txt blank", writeTestFile(t, dir, "b.txt", txt), InputOptions{DocSep: DocSepBlank},
			[]string{"Call me Ishmael.\nSome years ago.", "It is a way\r\nI have.", "天地玄黄"}, []string{"line 1", "line 6", "line 9"}},
		{"txt line", writeTestFile(t, dir, "c.txt", txt), InputOptions{DocSep: DocSepLine},
			[]string{"Call me Ishmael.", "Some years ago.", "It is a way", "I have.", "天地玄黄"},
			[]string{"line 1", "line 2", "line 6", "line 7", "line 9"}},
		{"txt.gz blank", writeTestFile(t, dir, "d.txt.gz", txt), InputOptions{DocSep: DocSepBlank},
			[]string{"Call me Ishmael.\nSome years ago.", "It is a way\r\nI have.", "天地玄黄"}, []string{"line 1", "line 6", "line 9"}},
		{"txt no final newline", writeTestFile(t, dir, "e.TXT", "x\n\ny"), InputOptions{DocSep: DocSepBlank},
			[]string{"x", "y"}, []string{"line 1", "line 3"}},
		{"empty txt", writeTestFile(t, dir, "f.txt", ""), InputOptions{}, []string{""}, []string{""}},
		{"jsonl", writeTestFile(t, dir, "a.jsonl", jsonl), InputOptions{},
			[]string{"one", "two\nlines é 天", ""}, []string{"line 1", "line 3", "line 5"}},
		{"jsonl.gz", writeTestFile(t, dir, "b.jsonl.gz", jsonl), InputOptions{},
			[]string{"one", "two\nlines é 天", ""}, []string{"line 1", "line 3", "line 5"}},
		{"jsonl column", writeTestFile(t, dir, "c.jsonl", "\uFEFF{\"content\":\"c1\",\"text\":5}\n{\"content\":\"c2\"}"),
			InputOptions{TextColumn: "content"}, []string{"c1", "c2"}, []string{"line 1", "line 2"}},
		{"parquet", writeParquet(t, dir, "a.parquet", many, 3), InputOptions{}, manyTexts, manyWhere},
		{"parquet dict snappy", writeParquet(t, dir, "b.parquet", []pqDict{{"x"}, {"y"}, {"x"}, {"x"}}, 10, parquet.Compression(&parquet.Snappy)),
			InputOptions{}, []string{"x", "y", "x", "x"}, []string{"row group 0 row 0", "row group 0 row 1", "row group 0 row 2", "row group 0 row 3"}},
		{"parquet optional column", writeParquet(t, dir, "c.parquet", []pqOptional{{strp("p")}, {strp("q")}}, 1),
			InputOptions{TextColumn: "content"}, []string{"p", "q"}, []string{"row group 0 row 0", "row group 1 row 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, bad, err := readAll(t, tc.path, tc.opt)
			if err != nil || len(bad) > 0 {
				t.Fatalf("err %v, bad %v", err, bad)
			}
			if got := texts(docs); !slices.Equal(got, tc.want) {
				t.Errorf("documents %q, want %q", got, tc.want)
			}
			for i, d := range docs {
				if d.Index != int64(i) {
					t.Errorf("document %d has index %d", i, d.Index)
				}
				if i < len(tc.where) && d.Where != tc.where[i] {
					t.Errorf("document %d at %q, want %q", i, d.Where, tc.where[i])
				}
			}
		})
	}
}

// TestInputBadRecords: malformed JSON lines and null Parquet values are *BadRecordErrors naming the file and
// line (row group and row) and the problem; reading goes on after them and indices count them.
func TestInputBadRecords(t *testing.T) {
	dir := t.TempDir()
	jl := writeTestFile(t, dir, "bad.jsonl", strings.Join([]string{
		`{"text": "ok 1"}`,
		`{"text": "ok 2"}`,
		`{"text": "unterminated`,
		`{"id": 4}`,
		`{"text": 5}`,
		`[1, 2]`,
		`{"text": null}`,
		`{"text": ["a"]}`,
		`{"text": "ok 9"} trailing`,
		`{"text": "ok 10"}`,
	}, "\n"))
	pq := writeParquet(t, dir, "null.parquet", []pqOptional{{strp("a")}, {nil}, {strp("c")}, {nil}}, 2)
	for _, tc := range []struct {
		name    string
		path    string
		opt     InputOptions
		docs    []string
		indices []int64
		bad     []string
	}{
		{"jsonl", jl, InputOptions{}, []string{"ok 1", "ok 2", "ok 10"}, []int64{0, 1, 9}, []string{
			"bad.jsonl line 3: invalid JSON",
			`bad.jsonl line 4: no "text" field`,
			`bad.jsonl line 5: field "text" is a number, want a string`,
			`bad.jsonl line 6: the line is an array, want a JSON object`,
			`bad.jsonl line 7: field "text" is null, want a string`,
			`bad.jsonl line 8: field "text" is an array`,
			"bad.jsonl line 9: invalid JSON",
		}},
		{"parquet nulls", pq, InputOptions{TextColumn: "content"}, []string{"a", "c"}, []int64{0, 2}, []string{
			`null.parquet row group 0 row 1: column "content" is null`,
			`null.parquet row group 1 row 1: column "content" is null`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, bad, err := readAll(t, tc.path, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(docs); !slices.Equal(got, tc.docs) {
				t.Errorf("documents %q, want %q", got, tc.docs)
			}
			for i, d := range docs {
				if i < len(tc.indices) && d.Index != tc.indices[i] {
					t.Errorf("document %q has index %d, want %d", d.Text, d.Index, tc.indices[i])
				}
			}
			if len(bad) != len(tc.bad) {
				t.Fatalf("%d bad records, want %d: %v", len(bad), len(tc.bad), bad)
			}
			for i, b := range bad {
				if !strings.Contains(b.Error(), tc.bad[i]) || !strings.HasPrefix(b.Error(), "read "+tc.path) {
					t.Errorf("bad record %d: %q, want it to contain %q", i, b.Error(), tc.bad[i])
				}
			}
		})
	}
}

// TestInputFileErrors: problems with a whole file are errors from OpenInput or Next (not bad records) naming it.
func TestInputFileErrors(t *testing.T) {
	dir := t.TempDir()
	truncated := writeTestFile(t, dir, "cut.jsonl.gz", strings.Repeat(`{"text":"some text here"}`+"\n", 500))
	b, _ := os.ReadFile(truncated)
	os.WriteFile(truncated, b[:len(b)/2], 0o644)
	for _, tc := range []struct {
		name, path string
		opt        InputOptions
		want       []string
	}{
		{"missing column", writeParquet(t, dir, "nocol.parquet", []pqNoText{{"x", "en"}}, 10), InputOptions{},
			[]string{"nocol.parquet", `no column "text"`, "content, lang", "the text column"}},
		{"int column", writeParquet(t, dir, "int.parquet", []pqIntText{{1}}, 10), InputOptions{}, []string{"int.parquet", "want strings"}},
		{"not parquet", writeTestFile(t, dir, "fake.parquet", "hello, I am text"), InputOptions{}, []string{"fake.parquet"}},
		{"not gzip", writeTestFile(t, dir, "plain.txt", "x"), InputOptions{}, nil}, // control: reads fine
		{"truncated gzip", truncated, InputOptions{}, []string{"cut.jsonl.gz", "line", "unexpected EOF"}},
		{"missing file", filepath.Join(dir, "nope.jsonl"), InputOptions{}, []string{"nope.jsonl", "no such file"}},
		{"bad doc sep", writeTestFile(t, dir, "sep.txt", "x"), InputOptions{DocSep: "para"}, []string{`"para"`}},
		{"unknown extension", writeTestFile(t, dir, "notes.md", "x"), InputOptions{}, []string{"notes.md", ".jsonl.gz", ".parquet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, bad, err := readAll(t, tc.path, tc.opt)
			if len(bad) > 0 {
				t.Errorf("bad records %v, want a file error", bad)
			}
			if tc.want == nil {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestExpandInputs: directories expand recursively in sorted order, hidden files and directories are skipped,
// keys are relative to the directory (or the base name of a file), and unknown extensions, duplicates, missing
// paths and empty directories are errors.
func TestExpandInputs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"corpus/b.jsonl", "corpus/a/z.txt", "corpus/a.txt.gz", "corpus/sub/x.parquet",
		"corpus/.hidden.jsonl", "corpus/.git/HEAD", "other/c.TXT", "mixed/ok.txt", "mixed/README.md"} {
		writeTestFile(t, dir, name, "x")
	}
	os.MkdirAll(filepath.Join(dir, "emptydir", ".cache"), 0o755)
	writeTestFile(t, dir, "emptydir/.cache/x.txt", "x")
	corpus, other := filepath.Join(dir, "corpus"), filepath.Join(dir, "other", "c.TXT")

	files, err := ExpandInputs([]string{corpus, other})
	if err != nil {
		t.Fatal(err)
	}
	var keys, formats []string
	for _, f := range files {
		keys = append(keys, f.Key)
		formats = append(formats, f.Format)
		if f.Size != 1 && f.Format != FormatTextGzip {
			t.Errorf("%s: size %d", f.Path, f.Size)
		}
		if _, err := os.Stat(f.Path); err != nil {
			t.Errorf("path %s: %v", f.Path, err)
		}
	}
	if want := []string{"a.txt.gz", "a/z.txt", "b.jsonl", "sub/x.parquet", "c.TXT"}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if want := []string{"txt.gz", "txt", "jsonl", "parquet", "txt"}; !slices.Equal(formats, want) {
		t.Errorf("formats %q, want %q", formats, want)
	}
	for _, tc := range []struct {
		name   string
		inputs []string
		want   []string
	}{
		{"unknown extension in a directory", []string{filepath.Join(dir, "mixed")}, []string{"README.md", "supported: .txt, .txt.gz, .jsonl, .jsonl.gz, .parquet"}},
		{"duplicate", []string{corpus, filepath.Join(corpus, "b.jsonl")}, []string{"b.jsonl", "given twice"}},
		{"missing", []string{filepath.Join(dir, "nope")}, []string{"nope", "no such file"}},
		{"empty directory", []string{filepath.Join(dir, "emptydir")}, []string{"emptydir", "no files"}},
		{"none", nil, []string{"no inputs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ExpandInputs(tc.inputs)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
