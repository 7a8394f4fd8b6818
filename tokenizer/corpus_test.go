package tokenizer

import (
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/smallinit/smallinit/corpus"
)

// corpusTok trains one tokenizer at DefaultVocabSize on the training part of the default corpus, shared by the
// tests and benchmarks of this file.
var corpusTok = sync.OnceValues(func() (*corpusRun, error) {
	run := &corpusRun{val: map[string][]string{}}
	var train []string
	for _, f := range corpus.Files() {
		docs, err := corpus.Documents(f.Name, corpus.Train)
		if err != nil {
			return nil, err
		}
		train = append(train, docs...)
		for _, d := range docs {
			run.trainBytes += len(d)
		}
		val, err := corpus.Documents(f.Name, corpus.Val)
		if err != nil {
			return nil, err
		}
		run.val[f.Lang] = append(run.val[f.Lang], val...)
	}
	start := time.Now()
	tok, err := Train(train, DefaultVocabSize)
	run.elapsed = time.Since(start)
	run.tok = tok
	return run, err
})

type corpusRun struct {
	tok        *Tokenizer
	elapsed    time.Duration
	trainBytes int
	val        map[string][]string // language -> validation documents
}

// TestTrainDefaultCorpus trains at V=4096 on the default corpus's training part and checks the result: full
// size, <|endoftext|> last, every token whole characters or a piece of one, exact round trip on the held-out
// part, and plausible compression. It logs the training time and held-out bytes per token per language.
func TestTrainDefaultCorpus(t *testing.T) {
	run, err := corpusTok()
	if err != nil {
		t.Fatal(err)
	}
	tok := run.tok
	t.Logf("trained V=%d on %.2f MB in %v", tok.VocabSize(), float64(run.trainBytes)/1e6, run.elapsed)
	if tok.VocabSize() != DefaultVocabSize || tok.EOT() != DefaultVocabSize-1 {
		t.Fatalf("VocabSize %d, EOT %d", tok.VocabSize(), tok.EOT())
	}
	for id := int32(0); id < tok.EOT(); id++ {
		if b := tok.TokenBytes(id); !wholeOrPiece(b) {
			t.Errorf("token %d %q spans a character boundary", id, b)
		}
	}
	for _, lang := range []string{"en", "zh"} {
		var nb, nt int
		for _, d := range run.val[lang] {
			ids := tok.Encode(d)
			if got := string(tok.Decode(ids)); got != d {
				t.Fatalf("%s: round trip failed on a validation document", lang)
			}
			nb += len(d)
			nt += len(ids)
		}
		bpt := float64(nb) / float64(nt)
		t.Logf("%s held-out: %d bytes, %d tokens, %.3f bytes/token", lang, nb, nt, bpt)
		if min := map[string]float64{"en": 3.2, "zh": 2.4}[lang]; bpt < min {
			t.Errorf("%s: %.3f bytes/token, want at least %.1f", lang, bpt, min)
		}
	}
}

// wholeOrPiece reports whether b is a sequence of whole UTF-8 characters or a piece of one character: a lead
// byte with fewer continuation bytes than it needs, or continuation bytes only.
func wholeOrPiece(b []byte) bool {
	if len(b) == 1 || utf8.Valid(b) {
		return true
	}
	allCont := func(b []byte) bool {
		for _, c := range b {
			if c&0xC0 != 0x80 {
				return false
			}
		}
		return true
	}
	if allCont(b) {
		return true
	}
	need := 0
	switch c := b[0]; {
	case c&0xE0 == 0xC0:
		need = 2
	case c&0xF0 == 0xE0:
		need = 3
	case c&0xF8 == 0xF0:
		need = 4
	}
	return len(b) < need && allCont(b[1:])
}

// BenchmarkEncodeCorpus measures encoding speed of the trained tokenizer over the whole default corpus (cache
// warm after the first iteration), reported as MB/s.
func BenchmarkEncodeCorpus(b *testing.B) {
	run, err := corpusTok()
	if err != nil {
		b.Fatal(err)
	}
	var texts []string
	n := 0
	for _, f := range corpus.Files() {
		text, err := corpus.Read(f.Name)
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, text)
		n += len(text)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	var ids []int32
	for b.Loop() {
		for _, text := range texts {
			ids = run.tok.AppendEncode(ids[:0], text)
		}
	}
}

// BenchmarkTrainCorpus measures training at DefaultVocabSize on the default corpus's training part.
func BenchmarkTrainCorpus(b *testing.B) {
	var train []string
	for _, f := range corpus.Files() {
		docs, err := corpus.Documents(f.Name, corpus.Train)
		if err != nil {
			b.Fatal(err)
		}
		train = append(train, docs...)
	}
	b.SetBytes(int64(len(strings.Join(train, ""))))
	for b.Loop() {
		if _, err := Train(train, DefaultVocabSize); err != nil {
			b.Fatal(err)
		}
	}
}
