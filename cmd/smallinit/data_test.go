package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/parquet-go/parquet-go"

	"github.com/smallinit/smallinit/data"
)

// dataTestCorpus writes a small corpus: dir/docs.jsonl, dir/more/part.jsonl.gz, dir/more/rows.parquet and
// dir/notes.txt (blank-line separated), and returns dir.
func dataTestCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	doc := func(i int) string {
		return fmt.Sprintf("Document %d: the whale and the sea, 天地玄黄 %d.\nIt goes on for a line or two.", i, i*i)
	}
	var jl bytes.Buffer
	for i := range 40 {
		b, _ := json.Marshal(map[string]any{"text": doc(i), "id": i})
		jl.Write(append(b, '\n'))
	}
	os.MkdirAll(filepath.Join(dir, "more"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "docs.jsonl"), jl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(jl.Bytes())
	zw.Close()
	os.WriteFile(filepath.Join(dir, "more", "part.jsonl.gz"), gz.Bytes(), 0o644)
	var txt []string
	for i := 40; i < 60; i++ {
		txt = append(txt, doc(i))
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(strings.Join(txt, "\n\n")), 0o644)
	type row struct {
		Text string `parquet:"text"`
	}
	f, err := os.Create(filepath.Join(dir, "more", "rows.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[row](f)
	for i := 60; i < 90; i++ {
		w.Write([]row{{doc(i)}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir
}

// TestDataPrepareCommand parses `smallinit data prepare` with kong and runs it on a directory of mixed formats:
// the output directory holds readable token files with ids below the vocabulary, and stats.json counts them.
func TestDataPrepareCommand(t *testing.T) {
	corpus := dataTestCorpus(t)
	out := filepath.Join(t.TempDir(), "prepared")
	var c struct {
		Data dataCmd `cmd:""`
	}
	parser, err := kong.New(&c, kong.Name("smallinit"), vars(), kong.Exit(func(code int) { t.Fatalf("kong exit %d", code) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := parser.Parse([]string{"data", "prepare", "--in", corpus, "--out", out, "--vocab", "320",
		"--val-fraction", "0.2", "--doc-sep", "blank", "--workers", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Run(); err != nil {
		t.Fatal(err)
	}
	st, err := data.ReadStats(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Inputs) != 4 || st.VocabSize > 320 || st.Train.Documents+st.Val.Documents != 40+40+20+30 || st.Val.Documents == 0 {
		t.Errorf("stats: %+v", st)
	}
	for _, f := range []string{data.TrainFile, data.ValFile} {
		toks, err := data.ReadTokens(filepath.Join(out, f), st.VocabSize)
		if err != nil {
			t.Fatal(err)
		}
		want := st.Train.Tokens
		if f == data.ValFile {
			want = st.Val.Tokens
		}
		if int64(len(toks)) != want {
			t.Errorf("%s: %d tokens, stats say %d", f, len(toks), want)
		}
	}
}

// TestDataPrepareRun runs the command struct's Run directly: --skip-bad, a bad line without it, the embedded
// corpus with a reused tokenizer, and option errors.
func TestDataPrepareRun(t *testing.T) {
	src := t.TempDir()
	bad := filepath.Join(src, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"text\":\"fine words here\"}\n{\"text\":\"more words\"}\n{\"text\": 3}\n{\"text\":\"last words\"}\n"), 0o644)
	good := t.TempDir()
	if err := (&dataPrepareCmd{In: []string{bad}, Out: good, Vocab: intp(300), ValFraction: 0, TextColumn: "text", DocSep: "file",
		SkipBad: true}).Run(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(good, data.StatsFile))
	if !strings.Contains(string(b), `"bad_records": 1`) {
		t.Errorf("stats.json does not count the bad record:\n%s", b)
	}
	tokFile := filepath.Join(good, data.TokenizerFile)

	for _, tc := range []struct {
		name string
		cmd  dataPrepareCmd
		want string // "" for success
	}{
		{"bad line", dataPrepareCmd{In: []string{bad}, Vocab: intp(300), ValFraction: 0.01, TextColumn: "text", DocSep: "file"},
			"bad.jsonl line 3"},
		{"tokenizer and vocab", dataPrepareCmd{In: []string{bad}, Tokenizer: tokFile, Vocab: intp(300), ValFraction: 0.01, TextColumn: "text", DocSep: "file"},
			"--tokenizer and --vocab"},
		{"embedded with file options", dataPrepareCmd{ValFraction: 0.1, TextColumn: "text", DocSep: "file", SkipBad: true},
			"--val-fraction, --skip-bad: only for --in"},
		{"embedded", dataPrepareCmd{Tokenizer: tokFile, ValFraction: 0.01, TextColumn: "text", DocSep: "file"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.cmd
			cmd.Out = t.TempDir()
			err := cmd.Run()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				st, err := data.ReadStats(cmd.Out)
				if err != nil || st.Source != "embedded" {
					t.Fatalf("stats %+v, %v", st, err)
				}
				if _, err := data.ReadTokens(filepath.Join(cmd.Out, data.ValFile), st.VocabSize); err != nil {
					t.Error(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTokenizerSampleFlag: --tokenizer-sample-mb absent takes the input kind's default (50 MiB for files, 16 MiB
// for package archives); a value given is that many MiB for either, 50 included; a negative one is an error
// naming the flag.
func TestTokenizerSampleFlag(t *testing.T) {
	for _, tc := range []struct {
		mb   *int
		def  int64
		want int64
	}{
		{nil, data.DefaultTokenizerSample, 50 << 20},
		{nil, data.DefaultArchiveTokenizerSample, 16 << 20},
		{ptr(50), data.DefaultArchiveTokenizerSample, 50 << 20},
		{ptr(3), data.DefaultTokenizerSample, 3 << 20},
	} {
		got, err := (&dataPrepareCmd{SampleMB: tc.mb}).tokenizerSample(tc.def)
		if err != nil || got != tc.want {
			t.Errorf("--tokenizer-sample-mb %v (default %d): %d, %v; want %d", tc.mb, tc.def, got, err, tc.want)
		}
	}
	for _, mb := range []int{-1, 0} {
		if _, err := (&dataPrepareCmd{SampleMB: ptr(mb)}).tokenizerSample(data.DefaultTokenizerSample); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--tokenizer-sample-mb %d", mb)) {
			t.Errorf("--tokenizer-sample-mb %d: %v", mb, err)
		}
	}
}

// ptr is a pointer to v, for optional flags.
func ptr[T any](v T) *T { return &v }
