package eval

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/tokenizer"
)

// TestTaskTruncationCountedWhereItHappens: on a model with a 16-token context and a byte tokenizer, every
// record of these tasks is longer than the context. Every scoring (each choice of a multiple-choice record; the
// gold answer of a generative one) loses the start of its context, and every generation prompt loses its start
// to leave room for the 4 new tokens (16 − 4 = 12 tokens kept): all are counted, by where it happened. A task
// whose records fit counts none.
func TestTaskTruncationCountedWhereItHappens(t *testing.T) {
	m := testModel(t, 257, 16, 2, 3)
	lm := NewLM(m, byteTokenizer{}, nil)
	long := strings.Repeat("a long question ", 3) // 48 bytes
	var mc, gen, short strings.Builder
	for i := range 5 {
		fmt.Fprintf(&mc, `{"query": "Question: %s%d", "choices": ["yes", "no", "maybe"], "gold": 1}`+"\n", long, i)
		fmt.Fprintf(&gen, `{"question": "%s%d", "answer": "so #### %d"}`+"\n", long, i, i)
		fmt.Fprintf(&short, `{"query": "Q%d", "choices": ["y", "n"], "gold": 0}`+"\n", i)
	}
	for _, c := range []struct {
		name string
		kind Kind
		text string
		want Truncation
	}{
		{"arc", KindMultipleChoice, mc.String(), Truncation{Scored: 15, ScoredTotal: 15}},
		{"gsm8k", KindGSM8K, gen.String(), Truncation{Scored: 5, ScoredTotal: 5, Generation: 5, GenerationTotal: 5}},
		{"piqa", KindMultipleChoice, short.String(), Truncation{ScoredTotal: 10}},
	} {
		spec := TaskSpec{Name: c.name, Kind: c.kind, File: writeFile(t, c.name+".jsonl", c.text)}
		res, err := RunTask(context.Background(), spec, lm, Options{MaxNewTokens: 4})
		if err != nil {
			t.Fatal(err)
		}
		if res.Truncation != c.want || res.Truncation.Any() != (c.want.Scored > 0) {
			t.Errorf("%s: truncation %+v, want %+v", c.name, res.Truncation, c.want)
		}
	}
}

// TestTaskLimitStopsReading: with Limit N, reading stops after N valid records, so malformed records after
// them are never parsed (nor counted), and progress ends at the records read (two scored, one skipped).
func TestTaskLimitStopsReading(t *testing.T) {
	var b strings.Builder
	b.WriteString("not json\n")
	for i := range 3 {
		fmt.Fprintf(&b, `{"query": "Q%d", "choices": ["a", "b"], "gold": 0}`+"\n", i)
	}
	for range 50000 { // 600 kB, several read buffers
		b.WriteString("{\"broken\": \n")
	}
	file := writeFile(t, "mc.jsonl", b.String())
	var done, total int64
	var warned int
	o := Options{Limit: 2, Chunk: 1, Progress: func(d, t int64) { done, total = d, t }, Malformed: func(*RecordError) { warned++ }}
	res, err := RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: file}, &fakeBackend{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 2 || res.Skipped != 1 || warned != 1 {
		t.Errorf("docs %d, skipped %d, warned %d; want 2, 1, 1", res.Docs, res.Skipped, warned)
	}
	if done != 3 || total != 3 {
		t.Errorf("progress ended at %d of %d records, want 3 of 3 (two scored, one skipped; the rest never read)", done, total)
	}
	// Without a limit every malformed record is counted, and at most maxListed are listed.
	res, err = RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: file}, &fakeBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Docs != 3 || res.Skipped != 50001 || len(res.Malformed) != maxListed {
		t.Errorf("docs %d, skipped %d, listed %d", res.Docs, res.Skipped, len(res.Malformed))
	}
}

// TestLMSpecialTokens: a literal "<|endoftext|>" in a request is the end-of-text id with SpecialParse (NewLM's
// default, as Hugging Face tokenizers encode it) and plain text with SpecialLiteral; a tokenizer without
// EncodeWithSpecial encodes with Encode either way.
func TestLMSpecialTokens(t *testing.T) {
	tok := testTokenizer(t)
	m := testModel(t, tok.VocabSize(), 32, 1, 2)
	lm := NewLM(m, tok, nil)
	text := "The quick" + tokenizer.EndOfText + " brown fox."
	parsed := slices.Concat(tok.Encode("The quick"), []int32{tok.EOT()}, tok.Encode(" brown fox."))
	if lm.Special != SpecialParse || !slices.Equal(lm.encode(text), parsed) {
		t.Errorf("parse: %v, want %v", lm.encode(text), parsed)
	}
	lm.Special = SpecialLiteral
	if got := lm.encode(text); !slices.Equal(got, tok.Encode(text)) || slices.Contains(got, tok.EOT()) {
		t.Errorf("literal: %v", got)
	}
	// The choice reaches the scores: the two encodings score the same continuation differently.
	reqs := []Request{{Context: "The quick" + tokenizer.EndOfText, Continuation: " brown fox."}}
	lit, err := lm.Score(reqs)
	if err != nil {
		t.Fatal(err)
	}
	lm.Special = SpecialParse
	par, err := lm.Score(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if lit[0].LogProb == par[0].LogProb {
		t.Errorf("literal and parsed contexts score the same %v", lit[0].LogProb)
	}
	fake := NewLM(testModel(t, 257, 16, 1, 2), byteTokenizer{}, nil)
	if got := fake.encode("a<|endoftext|>"); len(got) != 14 {
		t.Errorf("byte tokenizer: %d tokens", len(got))
	}
	for _, s := range []string{"parse", "literal"} {
		if m, err := ParseSpecialTokens(s); err != nil || string(m) != s {
			t.Errorf("ParseSpecialTokens(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseSpecialTokens("strip"); err == nil {
		t.Error("ParseSpecialTokens(strip): no error")
	}
}

// TestProgressCountsRecords: progress counts records read (scored or skipped) against the file's record count,
// or against --limit when set, from 0 before the first record to the end; the old byte count sat at a few
// percent when a limit stopped reading early.
func TestProgressCountsRecords(t *testing.T) {
	var b strings.Builder
	for i := range 9 {
		fmt.Fprintf(&b, `{"query": "Q%d", "choices": ["a", "b"], "gold": 0}`+"\n", i)
	}
	b.WriteString("not json\n")
	for range 2000 { // a long tail that a limit never reaches
		b.WriteString(`{"query": "Q", "choices": ["a", "b"], "gold": 1}` + "\n")
	}
	file := writeFile(t, "mc.jsonl", b.String())
	for _, c := range []struct {
		limit int
		want  [][2]int64
	}{
		{0, [][2]int64{{0, 2010}, {4, 2010}, {2010, 2010}}},
		{8, [][2]int64{{0, 8}, {4, 8}, {8, 8}}},
	} {
		var got [][2]int64
		o := Options{Limit: c.limit, Chunk: 4, Progress: func(d, tot int64) { got = append(got, [2]int64{d, tot}) }}
		if _, err := RunTask(context.Background(), TaskSpec{Name: "arc", Kind: KindMultipleChoice, File: file}, &fakeBackend{}, o); err != nil {
			t.Fatal(err)
		}
		if len(got) < 3 || got[0] != c.want[0] || got[1] != c.want[1] || got[len(got)-1] != c.want[2] {
			t.Errorf("limit %d: progress %v, want first %v, %v and last %v", c.limit, got[:min(len(got), 4)], c.want[0], c.want[1], c.want[2])
		}
	}
}

// TestLimitSpreadsOverSubjects: with a limit, a directory of per-subject files is read round-robin, so two
// records of testdata/cmmlu/test cover both its subjects (in file order they were both agronomy's).
func TestLimitSpreadsOverSubjects(t *testing.T) {
	spec := TaskSpec{Name: "cmmlu", Kind: KindCMMLU, File: filepath.Join("testdata", "cmmlu", "test")}
	for _, c := range []struct {
		limit    int
		subjects []string
		n        []int
	}{
		{2, []string{"agronomy", "world_history"}, []int{1, 1}},
		{5, []string{"agronomy", "world_history"}, []int{3, 2}},
		{0, []string{"agronomy", "world_history"}, []int{4, 2}},
	} {
		res, err := RunTask(context.Background(), spec, &fakeBackend{}, Options{Limit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range c.subjects {
			if m, ok := res.Metrics.Get("acc_" + s); !ok || m.N != c.n[i] {
				t.Errorf("limit %d: acc_%s over %d records, want %d", c.limit, s, m.N, c.n[i])
			}
		}
		if res.Subjects.Scored != 2 {
			t.Errorf("limit %d: %d subjects scored", c.limit, res.Subjects.Scored)
		}
	}
}
