package eval

import (
	"bytes"
	"context"
	"github.com/smallinit/smallinit/internal/allocs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fuzzKinds are the task kinds FuzzTaskFile reads its bytes as (chosen by its second argument): every row of
// the kind table, so that a new kind is fuzzed without a line here.
var fuzzKinds = slices.Sorted(maps.Keys(kindSpecs))

// FuzzTaskFile runs a benchmark task whose record file (and few-shot file, the same bytes) is arbitrary, on a
// real LM backend: a two-layer model over a byte tokenizer, context 16, so that long records are truncated and
// generation hits the context's end. Nothing may panic; a task that succeeds must have scored at least one
// record, no more records than the file has non-blank lines, and finite metrics; an error must name the task;
// the run may allocate at most 16 MB plus 512 bytes per byte of the file (parsing, prompts and token ids).
func FuzzTaskFile(f *testing.F) {
	for i, k := range fuzzKinds {
		for _, s := range sampleFiles {
			if kind, _ := KindOf(s.task); kind == k {
				path := filepath.Join("testdata", s.file)
				if st, err := os.Stat(path); err == nil && st.IsDir() { // per-subject CSVs: the first file
					ents, _ := os.ReadDir(path)
					path = filepath.Join(path, ents[0].Name())
				}
				b, err := os.ReadFile(path)
				if err != nil {
					f.Fatal(err)
				}
				lines := bytes.SplitAfter(b, []byte("\n"))
				f.Add(bytes.Join(lines[:min(3, len(lines))], nil), uint8(i), uint8(1))
			}
		}
	}
	f.Add([]byte(`{"prompt":"add: 1 2 =","answer":"3","kind":"add"}`+"\n"+`{"prompt":"x","answer":"a\nb","kind":"k"}`), uint8(8), uint8(2))
	f.Add([]byte("The quick brown fox.\n\nJumps over the lazy dog \xff\xfe.\n"), uint8(9), uint8(0))
	f.Add([]byte(`{"query":"q","choices":["a","b"],"gold":"1"}`+"\n"+`{"query":"q","choices":["a"],"gold":5}`+"\n[]\n"), uint8(1), uint8(0))
	f.Add([]byte("question\t1,000\nbad line\n\t\n"), uint8(6), uint8(3))
	f.Add([]byte{}, uint8(0), uint8(0))
	f.Add([]byte(",Question,A,B,C,D,Answer\n0,\"q\nq\",a,b,c,d,E\n1,\"unterminated,a,b,c,d,A\n"), uint8(10), uint8(1))
	f.Add([]byte("\uFEFFid,question,A,B,C,D,answer\n0,q,1,2,3\n1,q,1,2,3,4,D\n"), uint8(11), uint8(2))
	m := testModel(f, 257, 16, 2, 1)
	lm := NewLM(m, byteTokenizer{}, NewPrefixStepper(m))
	dir := f.TempDir()
	path := filepath.Join(dir, "records")
	f.Fuzz(func(t *testing.T, b []byte, kind, shots uint8) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		spec := TaskSpec{Name: "fuzz", Kind: fuzzKinds[int(kind)%len(fuzzKinds)], File: path}
		o := Options{MaxNewTokens: 4, Chunk: 4, Limit: 16}
		if spec.Kind != KindLM && shots%4 > 0 {
			spec.Fewshot, o.Shots = path, int(shots%4)
		}
		var res *TaskResult
		var err error
		n := allocs.Bytes(func() { res, err = RunTask(context.Background(), spec, lm, o) })
		if limit := uint64(16<<20 + 512*len(b)); n > limit {
			t.Fatalf("%s task on %d bytes allocated %d bytes (limit %d)", spec.Kind, len(b), n, limit)
		}
		if err != nil {
			if !strings.Contains(err.Error(), spec.Name) {
				t.Fatalf("error does not name the task: %v", err)
			}
			return
		}
		lines := 0
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		if res.Docs < 1 || (spec.Kind != KindLM && res.Docs+res.Skipped > 2*lines) {
			t.Fatalf("%d records scored and %d skipped from %d lines", res.Docs, res.Skipped, lines)
		}
		for _, mt := range res.Metrics {
			if math.IsInf(mt.Value, 0) || math.IsNaN(mt.Value) {
				t.Fatalf("metric %s = %v over %d", mt.Name, mt.Value, mt.N)
			}
		}
	})
}
