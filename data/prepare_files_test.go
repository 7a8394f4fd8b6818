package data

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/tokenizer"
)

// genDocs returns n pseudo-random documents of English and Chinese words, with single line breaks (never blank
// lines, so they survive DocSepBlank).
func genDocs(n int, seed uint64) []string {
	words := []string{"the", "whale", "sea", "ship", "captain", "and", "of", "a", "storm", "Ishmael", "harpoon",
		"天", "地", "玄黄", "宇宙", "洪荒", "日月", "盈昃", "2024", "!", "—"}
	r := rand.New(rand.NewPCG(seed, 1))
	docs := make([]string, n)
	for i := range docs {
		var sb strings.Builder
		for j := range 5 + r.IntN(40) {
			if j > 0 {
				if r.IntN(10) == 0 {
					sb.WriteByte('\n')
				} else {
					sb.WriteByte(' ')
				}
			}
			sb.WriteString(words[r.IntN(len(words))])
		}
		docs[i] = sb.String()
	}
	return docs
}

func jsonlOf(t testing.TB, docs []string) string {
	var sb strings.Builder
	for i, d := range docs {
		b, err := json.Marshal(map[string]any{"id": i, "text": d})
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func parquetRows(docs []string) []pqText {
	rows := make([]pqText, len(docs))
	for i, d := range docs {
		rows[i] = pqText{ID: int64(i), Text: d}
	}
	return rows
}

// keyedDocs is the ground truth of one input: its validation-split key and its documents in order.
type keyedDocs struct {
	key  string
	docs []string
}

// checkPrepared checks a prepared directory against an independent re-encoding of the ground-truth documents
// with the directory's tokenizer: train.tok and val.tok must hold exactly those tokens, every id below the
// vocabulary, and stats.json must count them.
func checkPrepared(t *testing.T, dir string, st *FileStats, want []keyedDocs, frac float64) {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join(dir, TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.VocabSize != tok.VocabSize() {
		t.Errorf("stats vocab %d, tokenizer %d", st.VocabSize, tok.VocabSize())
	}
	var wantTrain, wantVal []int32
	var trainDocs, valDocs int
	for _, in := range want {
		for i, d := range in.docs {
			ids := append(tok.Encode(d), tok.EOT())
			if IsValidation(in.key, int64(i), frac) {
				wantVal = append(wantVal, ids...)
				valDocs++
			} else {
				wantTrain = append(wantTrain, ids...)
				trainDocs++
			}
		}
	}
	train, err := ReadTokens(filepath.Join(dir, TrainFile), tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	val, err := ReadTokens(filepath.Join(dir, ValFile), tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(train, wantTrain) {
		t.Errorf("train.tok: %d tokens, re-encoding gives %d (or they differ)", len(train), len(wantTrain))
	}
	if !slices.Equal(val, wantVal) && len(val)+len(wantVal) > 0 {
		t.Errorf("val.tok: %d tokens, re-encoding gives %d (or they differ)", len(val), len(wantVal))
	}
	if st.Train.Tokens != int64(len(train)) || st.Val.Tokens != int64(len(val)) ||
		st.Train.Documents != trainDocs || st.Val.Documents != valDocs {
		t.Errorf("stats train %+v val %+v; files hold %d/%d tokens of %d/%d documents", st.Train, st.Val, len(train), len(val), trainDocs, valDocs)
	}
	disk, err := ReadStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if disk.Train != st.Train || disk.Val != st.Val || len(disk.Inputs) != len(want) || disk.VocabSize != st.VocabSize {
		t.Errorf("stats.json %+v differs from the returned stats %+v", disk, st.Stats)
	}
	var sum SplitStats
	for _, in := range st.Inputs {
		sum.add(in.Train)
		sum.add(in.Val)
		if n := in.Train.Tokens + in.Val.Tokens; n > 0 && math.Abs(in.BytesPerToken-float64(in.Train.Bytes+in.Val.Bytes)/float64(n)) > 1e-12 {
			t.Errorf("%s: bytes per token %g", in.Name, in.BytesPerToken)
		}
	}
	if sum.Tokens != st.Train.Tokens+st.Val.Tokens || sum.Documents != st.Train.Documents+st.Val.Documents {
		t.Errorf("per-input counts %+v do not add up to the totals", sum)
	}
	assertNoTemp(t, dir)
}

// TestPrepareFilesFormats prepares a corpus in each format (and a directory of mixed formats) and checks the
// token files against a re-encoding of the same documents.
func TestPrepareFilesFormats(t *testing.T) {
	src := t.TempDir()
	docs := genDocs(80, 1)
	const frac = 0.2
	mixed := filepath.Join(src, "mixed")
	writeTestFile(t, mixed, "b/one.jsonl.gz", jsonlOf(t, docs[:20]))
	writeParquet(t, mixed, "a.parquet", parquetRows(docs[20:50]), 7)
	writeTestFile(t, mixed, "c.txt", strings.Join(docs[50:], "\n\n\n"))
	writeTestFile(t, mixed, ".ignored.jsonl", "not even JSON")
	for _, tc := range []struct {
		name   string
		inputs []string
		docSep string
		want   []keyedDocs
	}{
		{"txt", []string{writeTestFile(t, src, "all.txt", strings.Join(docs, "\n\n"))}, DocSepBlank, []keyedDocs{{"all.txt", docs}}},
		{"txt whole file", []string{writeTestFile(t, src, "one.txt", docs[0]), writeTestFile(t, src, "two.txt", docs[1])}, "",
			[]keyedDocs{{"one.txt", docs[:1]}, {"two.txt", docs[1:2]}}},
		{"txt.gz lines", []string{writeTestFile(t, src, "lines.txt.gz", strings.Join(docs, "\n"))}, DocSepLine,
			[]keyedDocs{{"lines.txt.gz", strings.Split(strings.Join(docs, "\n"), "\n")}}},
		{"jsonl", []string{writeTestFile(t, src, "all.jsonl", jsonlOf(t, docs))}, "", []keyedDocs{{"all.jsonl", docs}}},
		{"jsonl.gz", []string{writeTestFile(t, src, "all.jsonl.gz", jsonlOf(t, docs))}, "", []keyedDocs{{"all.jsonl.gz", docs}}},
		{"parquet", []string{writeParquet(t, src, "all.parquet", parquetRows(docs), 16)}, "", []keyedDocs{{"all.parquet", docs}}},
		{"directory", []string{mixed}, DocSepBlank,
			[]keyedDocs{{"a.parquet", docs[20:50]}, {"b/one.jsonl.gz", docs[:20]}, {"c.txt", docs[50:]}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var last, total int64
			st, err := PrepareFiles(out, PrepareOptions{Inputs: tc.inputs, Vocab: 320, ValFraction: frac, DocSep: tc.docSep,
				Workers: 2, Progress: func(done, tot int64) { last, total = done, tot }})
			if err != nil {
				t.Fatal(err)
			}
			checkPrepared(t, out, st, tc.want, frac)
			if last != total || total == 0 {
				t.Errorf("last progress %d of %d, want all", last, total)
			}
			for i, in := range st.Inputs {
				if in.Name != filepathOf(tc.inputs, i, st) || in.Format == "" {
					t.Errorf("input %d: %+v", i, in)
				}
			}
		})
	}
}

// filepathOf returns the name stats should give input i: the path as given, for file inputs.
func filepathOf(inputs []string, i int, st *FileStats) string {
	if len(inputs) == len(st.Inputs) {
		return inputs[i]
	}
	return st.Inputs[i].Name // a directory: checked by ExpandInputs' test
}

// TestPrepareFilesWorkers: the output does not depend on the number of workers, also when batches are tiny and
// finish out of order.
func TestPrepareFilesWorkers(t *testing.T) {
	defer func(b, d int) { batchBytes, batchDocs = b, d }(batchBytes, batchDocs)
	batchBytes, batchDocs = 200, 3
	in := writeTestFile(t, t.TempDir(), "c.jsonl", jsonlOf(t, genDocs(300, 2)))
	var ref map[string][]byte
	for _, workers := range []int{1, 2, 5} {
		out := t.TempDir()
		if _, err := PrepareFiles(out, PrepareOptions{Inputs: []string{in}, Vocab: 300, ValFraction: 0.1, Workers: workers, Source: "x"}); err != nil {
			t.Fatal(err)
		}
		got := map[string][]byte{}
		for _, f := range []string{TokenizerFile, TrainFile, ValFile, StatsFile} {
			b, err := os.ReadFile(filepath.Join(out, f))
			if err != nil {
				t.Fatal(err)
			}
			got[f] = b
		}
		if ref == nil {
			ref = got
			continue
		}
		for f, b := range got {
			if !slices.Equal(b, ref[f]) {
				t.Errorf("%d workers: %s differs from 1 worker's", workers, f)
			}
		}
	}
}

// TestPrepareFilesBadRecords: malformed JSON lines fail with the file and line, unless SkipBad, which counts them
// per input in stats.json; a missing Parquet column fails even with SkipBad; empty documents are counted.
func TestPrepareFilesBadRecords(t *testing.T) {
	src := t.TempDir()
	docs := genDocs(30, 3)
	good := jsonlOf(t, docs)
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	bad := strings.Join(slices.Concat(lines[:2], []string{`{"text": "oops`, `{"id": 1}`, `{"text": 12}`, `{"text": ""}`}, lines[2:]), "\n")
	badPath := writeTestFile(t, src, "bad.jsonl", bad)
	goodPath := writeTestFile(t, src, "good.jsonl", good)
	noCol := writeParquet(t, src, "nocol.parquet", []pqNoText{{"x", "en"}}, 10)
	for _, tc := range []struct {
		name    string
		inputs  []string
		skipBad bool
		err     []string // nil: success
	}{
		{"invalid JSON", []string{goodPath, badPath}, false, []string{"bad.jsonl line 3", "invalid JSON"}},
		{"missing column", []string{goodPath, noCol}, true, []string{"nocol.parquet", `no column "text"`}},
		{"skip bad", []string{goodPath, badPath}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			st, err := PrepareFiles(out, PrepareOptions{Inputs: tc.inputs, Vocab: 300, ValFraction: 0.1, SkipBad: tc.skipBad})
			if tc.err != nil {
				if err == nil {
					t.Fatalf("no error, want %q", tc.err)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if ents, _ := os.ReadDir(out); len(ents) != 0 {
					t.Errorf("failed run left %d files in the output directory", len(ents))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Inputs[0].BadRecords != 0 || st.Inputs[1].BadRecords != 3 || st.BadRecords != 3 || st.Inputs[1].EmptyDocuments != 1 {
				t.Errorf("bad/empty counts: %+v", st.Inputs)
			}
			// The bad file's documents keep their record indices: 0, 1, then 6.. for the lines after the 4 skipped.
			b, _ := os.ReadFile(filepath.Join(out, StatsFile))
			if !strings.Contains(string(b), `"bad_records": 3`) {
				t.Errorf("stats.json does not count the bad records:\n%s", b)
			}
			tok, _ := tokenizer.Load(filepath.Join(out, TokenizerFile))
			var n int64
			for i, d := range docs {
				if !IsValidation("good.jsonl", int64(i), 0.1) {
					n += int64(len(tok.Encode(d)) + 1)
				}
				idx := int64(i)
				if i >= 2 {
					idx += 4
				}
				if !IsValidation("bad.jsonl", idx, 0.1) {
					n += int64(len(tok.Encode(d)) + 1)
				}
			}
			if st.Train.Tokens != n {
				t.Errorf("train tokens %d, re-encoding gives %d", st.Train.Tokens, n)
			}
		})
	}
}

// TestPrepareFilesEmptyCorpus: inputs without text fail, naming the input, whether the tokenizer is trained or
// loaded.
func TestPrepareFilesEmptyCorpus(t *testing.T) {
	src := t.TempDir()
	tokDir := t.TempDir()
	if _, err := PrepareFiles(tokDir, PrepareOptions{Inputs: []string{writeTestFile(t, src, "seed.jsonl", jsonlOf(t, genDocs(20, 4)))}, Vocab: 300}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		inputs []string
		opt    PrepareOptions
		want   []string
	}{
		{"empty txt", []string{writeTestFile(t, src, "empty.txt", "")}, PrepareOptions{}, []string{"empty corpus", "empty.txt"}},
		{"blank txt", []string{writeTestFile(t, src, "blank.txt", "\n \n\t\n")}, PrepareOptions{DocSep: DocSepBlank}, []string{"empty corpus", "blank.txt"}},
		{"empty texts", []string{writeTestFile(t, src, "e.jsonl", `{"text":""}`+"\n\n")}, PrepareOptions{}, []string{"empty corpus", "e.jsonl"}},
		{"all bad, skipped", []string{writeTestFile(t, src, "b.jsonl", "{}\n[]\n")}, PrepareOptions{SkipBad: true}, []string{"empty corpus", "b.jsonl"}},
		{"loaded tokenizer", []string{filepath.Join(src, "empty.txt"), filepath.Join(src, "e.jsonl")},
			PrepareOptions{TokenizerFile: filepath.Join(tokDir, TokenizerFile)}, []string{"empty corpus", "empty.txt", "e.jsonl"}},
		{"empty parquet", []string{writeParquet(t, src, "e.parquet", []pqText{}, 10)}, PrepareOptions{}, []string{"empty corpus", "e.parquet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			opt.Inputs = tc.inputs
			_, err := PrepareFiles(t.TempDir(), opt)
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

// TestPrepareFilesTokenizerReuse: preparing with the tokenizer.json of an earlier run copies it byte for byte and
// gives identical token files.
func TestPrepareFilesTokenizerReuse(t *testing.T) {
	in := writeTestFile(t, t.TempDir(), "c.jsonl.gz", jsonlOf(t, genDocs(60, 5)))
	first, second := t.TempDir(), t.TempDir()
	if _, err := PrepareFiles(first, PrepareOptions{Inputs: []string{in}, Vocab: 400, ValFraction: 0.2}); err != nil {
		t.Fatal(err)
	}
	st, err := PrepareFiles(second, PrepareOptions{Inputs: []string{in}, TokenizerFile: filepath.Join(first, TokenizerFile), ValFraction: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if st.Tokenizer != filepath.Join(first, TokenizerFile) || st.TokenizerSample != 0 {
		t.Errorf("stats tokenizer %q, sample %d", st.Tokenizer, st.TokenizerSample)
	}
	for _, f := range []string{TokenizerFile, TrainFile, ValFile} {
		a, _ := os.ReadFile(filepath.Join(first, f))
		b, _ := os.ReadFile(filepath.Join(second, f))
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%s differs between the trained and the reused tokenizer", f)
		}
	}
	// A tokenizer file and a vocabulary size to train contradict each other.
	_, err = PrepareFiles(t.TempDir(), PrepareOptions{Inputs: []string{in}, TokenizerFile: filepath.Join(first, TokenizerFile), Vocab: 300})
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("tokenizer and vocab together: %v", err)
	}
}

// TestPrepareFilesOptionsAndOutput: bad options and an unwritable output directory fail before any work with
// one clear error; a failed run leaves an earlier complete preparation as it was.
func TestPrepareFilesOptionsAndOutput(t *testing.T) {
	src := t.TempDir()
	in := writeTestFile(t, src, "c.jsonl", jsonlOf(t, genDocs(20, 6)))
	for _, tc := range []struct {
		name string
		out  string
		opt  PrepareOptions
		want string
	}{
		{"negative fraction", t.TempDir(), PrepareOptions{ValFraction: -0.1}, "validation fraction"},
		{"large fraction", t.TempDir(), PrepareOptions{ValFraction: 0.6}, "must be in [0, 0.5]"},
		{"NaN fraction", t.TempDir(), PrepareOptions{ValFraction: math.NaN()}, "validation fraction"},
		{"doc sep", t.TempDir(), PrepareOptions{DocSep: "paragraph"}, `"paragraph"`},
		{"vocab", t.TempDir(), PrepareOptions{Vocab: 100}, "vocabulary size 100"},
		{"unwritable output", filepath.Join(in, "out"), PrepareOptions{}, "output directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := tc.opt
			opt.Inputs = []string{in}
			_, err := PrepareFiles(tc.out, opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}

	out := t.TempDir()
	if _, err := PrepareFiles(out, PrepareOptions{Inputs: []string{in}, Vocab: 300, ValFraction: 0.1}); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, f := range []string{TokenizerFile, TrainFile, ValFile, StatsFile} {
		before[f], _ = os.ReadFile(filepath.Join(out, f))
	}
	bad := writeTestFile(t, src, "bad.jsonl", jsonlOf(t, genDocs(5, 7))+"{broken\n")
	if _, err := PrepareFiles(out, PrepareOptions{Inputs: []string{bad}, Vocab: 300, ValFraction: 0.1}); err == nil {
		t.Fatal("no error on a broken line")
	}
	for f, b := range before {
		if now, _ := os.ReadFile(filepath.Join(out, f)); !slices.Equal(now, b) {
			t.Errorf("%s changed by a failed run", f)
		}
	}
	assertNoTemp(t, out)
}

// TestPrepareFilesSample: the tokenizer is trained on at most TokenizerSample bytes of training text, and
// every document is still encoded.
func TestPrepareFilesSample(t *testing.T) {
	docs := genDocs(50, 8)
	in := writeParquet(t, t.TempDir(), "s.parquet", parquetRows(docs), 20)
	out := t.TempDir()
	st, err := PrepareFiles(out, PrepareOptions{Inputs: []string{in}, Vocab: 300, ValFraction: 0.1, TokenizerSample: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if st.TokenizerSample == 0 || st.TokenizerSample > 1000 {
		t.Errorf("tokenizer sample %d bytes, want (0, 1000]", st.TokenizerSample)
	}
	checkPrepared(t, out, st, []keyedDocs{{"s.parquet", docs}}, 0.1)
}

// TestIsValidation pins the split rule (values computed with Python's hashlib, as in the doc comment) and
// checks that the held-out share is close to the fraction and grows monotonically with it.
func TestIsValidation(t *testing.T) {
	for _, tc := range []struct {
		key   string
		index int64
		frac  float64
		want  bool
	}{
		{"a.jsonl", 0, 0.5, false},           // u/2^64 = 0.7358
		{"a.jsonl", 0, 0.0, false},           // nothing at 0
		{"a.jsonl", 1, 0.5, false},           // 0.5545
		{"sub/x.parquet", 12345, 0.31, true}, // 0.3063
		{"sub/x.parquet", 12345, 0.30, false},
		{"a.jsonl", 344, 0.01, true}, // 0.00295
		{"a.jsonl", 350, 0.01, true}, // 0.00823
		{"a.jsonl", 350, 0.008, false},
	} {
		if got := IsValidation(tc.key, tc.index, tc.frac); got != tc.want {
			t.Errorf("IsValidation(%q, %d, %g) = %v, want %v", tc.key, tc.index, tc.frac, got, tc.want)
		}
	}
	const n = 20000
	for _, frac := range []float64{0.01, 0.1, 0.5} {
		k := 0
		for i := range int64(n) {
			v := IsValidation("doc.jsonl", i, frac)
			if v {
				k++
			}
			if v && !IsValidation("doc.jsonl", i, frac*1.5) {
				t.Fatalf("document %d is validation at %g but not at %g", i, frac, frac*1.5)
			}
		}
		if share := float64(k) / n; math.Abs(share-frac) > 4*math.Sqrt(frac*(1-frac)/n) {
			t.Errorf("fraction %g: held out %.4f", frac, share)
		}
	}
}

// TestPrepareFilesAbort: a failure in the middle of the pipeline, in the reader (a bad line after many batches)
// or in the writer (a token file that cannot be written), ends every goroutine and returns the error.
func TestPrepareFilesAbort(t *testing.T) {
	defer func(b, d int) { batchBytes, batchDocs = b, d }(batchBytes, batchDocs)
	batchBytes, batchDocs = 100, 1
	goroutines := runtime.NumGoroutine()
	src := t.TempDir()
	in := writeTestFile(t, src, "c.jsonl", jsonlOf(t, genDocs(300, 9))+"{\"text\": 1}\n"+jsonlOf(t, genDocs(50, 10)))
	out := t.TempDir()
	_, err := PrepareFiles(out, PrepareOptions{Inputs: []string{in}, Vocab: 300, Workers: 3, TokenizerSample: 500}) // a small sample: the encoding pass meets the bad line
	if err == nil || !strings.Contains(err.Error(), "c.jsonl line 301") {
		t.Errorf("error %v, want one naming c.jsonl line 301", err)
	}
	assertNoTemp(t, out)

	tok, err := tokenizer.Train(genDocs(20, 11), 300)
	if err != nil {
		t.Fatal(err)
	}
	files, err := ExpandInputs([]string{writeTestFile(t, src, "ok.jsonl", jsonlOf(t, genDocs(300, 12)))})
	if err != nil {
		t.Fatal(err)
	}
	train, _ := NewTokWriter(filepath.Join(out, TrainFile), tok.VocabSize())
	val, _ := NewTokWriter(filepath.Join(out, ValFile), tok.VocabSize())
	train.Abort() // every Write fails from now on
	defer val.Abort()
	st := &FileStats{Inputs: make([]FileInputStats, len(files))}
	err = encodeAll(files, InputOptions{}, PrepareOptions{Workers: 3}, tok, train, val, st, 0)
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("encodeAll with a failing writer: %v", err)
	}
	for range 100 {
		if runtime.NumGoroutine() <= goroutines {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines left running, %d before", n, goroutines)
	}
}

// TestCheckVocabOneBound: every reader of a vocabulary size to train refuses the same range, [MinVocab,
// MaxVocab], and MaxVocab is the largest vocab_size a model config takes.
func TestCheckVocabOneBound(t *testing.T) {
	for _, tc := range []struct {
		vocab int
		ok    bool
	}{{MinVocab - 1, false}, {MinVocab, true}, {4096, true}, {MaxVocab, true}, {MaxVocab + 1, false}, {1e9, false}, {-3, false}} {
		err := CheckVocab("--vocab", tc.vocab)
		if (err == nil) != tc.ok {
			t.Errorf("CheckVocab(%d) = %v, want ok %v", tc.vocab, err, tc.ok)
		}
		// PrepareEmbedded refuses before training a tokenizer (a vocabulary of 1e9 would train for minutes).
		if !tc.ok {
			dir := filepath.Join(t.TempDir(), "out")
			if _, err := PrepareEmbedded(dir, tc.vocab, nil); err == nil || !strings.Contains(err.Error(), "vocabulary size") {
				t.Errorf("PrepareEmbedded(vocab %d) = %v, want the vocabulary refused", tc.vocab, err)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("PrepareEmbedded(vocab %d) left %s behind", tc.vocab, dir)
			}
		}
	}
	c := arch.Config{Vocab: MaxVocab + 1, Dim: 16, FFN: 32, Layers: 1, Heads: 2, SeqLen: 16, NormEps: 1e-5, RopeTheta: 10000}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "vocab_size") {
		t.Errorf("a model config of vocab_size MaxVocab+1: %v, want it refused", err)
	}
}

// TestFormatOptionsNeedTheirInputs: --doc-sep cuts .txt inputs only and --text-column reads .jsonl and .parquet
// inputs only; set while no input has such a format, each did nothing in silence (issue 48, 5), and is refused
// naming the option, its value and the inputs, before anything is written. A JSON line without the text column
// names the fields it has and is ErrNoColumn (the command names --text-column).
func TestFormatOptionsNeedTheirInputs(t *testing.T) {
	src := t.TempDir()
	txt := writeTestFile(t, src, "a.txt", strings.Join(genDocs(8, 1), "\n\n"))
	jl := writeTestFile(t, src, "b.jsonl", jsonlOf(t, genDocs(8, 2)))
	jdir := filepath.Join(src, "jdir")
	writeTestFile(t, jdir, "c.jsonl", jsonlOf(t, genDocs(8, 3)))
	for _, tc := range []struct {
		name   string
		inputs []string
		opt    PrepareOptions
		want   string // "": prepared
	}{
		{"doc-sep on text", []string{txt}, PrepareOptions{DocSep: DocSepBlank}, ""},
		{"text-column on JSON lines", []string{jl}, PrepareOptions{TextColumn: "text"}, ""},
		{"both on both", []string{txt, jl}, PrepareOptions{DocSep: DocSepLine, TextColumn: "text"}, ""},
		{"text-column on text only", []string{txt}, PrepareOptions{TextColumn: "body"},
			"--text-column body: only for .jsonl, .jsonl.gz, .parquet inputs, and no input is one (" + txt + " is .txt)"},
		{"doc-sep on JSON lines only", []string{jl}, PrepareOptions{DocSep: DocSepLine},
			"--doc-sep line: only for .txt, .txt.gz inputs, and no input is one (" + jl + " is .jsonl)"},
		{"doc-sep on a directory of JSON lines", []string{jdir}, PrepareOptions{DocSep: DocSepBlank},
			"--doc-sep blank: only for .txt, .txt.gz inputs, and no input is one (" + filepath.Join(jdir, "c.jsonl") + " is .jsonl)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			opt := tc.opt
			opt.Inputs, opt.Vocab = tc.inputs, 300
			_, err := PrepareFiles(out, opt)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, serr := os.Stat(out); tc.want != "" && serr == nil {
				t.Errorf("a refused run created %s", out)
			}
		})
	}
	_, err := PrepareFiles(filepath.Join(t.TempDir(), "out"), PrepareOptions{Inputs: []string{jl}, TextColumn: "body", Vocab: 300})
	if !errors.Is(err, ErrNoColumn) || !strings.Contains(err.Error(), `b.jsonl line 1: no "body" field (the object has: id, text)`) {
		t.Errorf("a JSON line without the column: %v, want ErrNoColumn naming the line and its fields", err)
	}
}
