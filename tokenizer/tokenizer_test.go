package tokenizer

import (
	"bytes"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smallinit/smallinit/corpus"
)

// sampleText returns about n bytes of the default corpus's validation parts, English and Chinese interleaved.
func sampleText(n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		for _, f := range corpus.Files() {
			_, val, err := corpus.Split(f.Name)
			if err != nil {
				panic(err)
			}
			sb.WriteString(val[:min(len(val), n/5+1)])
		}
	}
	return sb.String()
}

// smallTok is a tokenizer trained quickly on a corpus sample, for tests that need a realistic one.
var smallTok = sync.OnceValue(func() *Tokenizer {
	tok, err := Train([]string{sampleText(300_000)}, 1024)
	if err != nil {
		panic(err)
	}
	return tok
})

// invalidUTF8 lists byte strings that are not valid UTF-8, alone and mixed with text.
var invalidUTF8 = []string{
	"\xff", "\xfe\xff", "\x80", "\xbf\x80", "\xe4\xb8", "a\xe4\xb8b", "\xe4\xb8中", "\xc0\xaf", "\xed\xa0\x80",
	"\xf4\x90\x80\x80", "\xf0\x9f\x98", "中\x80文", "the \xff\xfe cat", "\xe4\xb8\xad\xad", " \xff", "\n\xff\n",
	"'\xff", "1\xff2", strings.Repeat("\xe4", 100), strings.Repeat("\x80", 70) + "x",
}

// TestRoundTrip checks Decode(Encode(s)) == s for random bytes, invalid UTF-8, English and Chinese text, with
// the trained tokenizer and with loaded GPT-2 and Llama 3 style ones (which use other pre-tokenizers).
func TestRoundTrip(t *testing.T) {
	toks := map[string]*Tokenizer{"trained": smallTok(), "gpt2": loadMini(t, nil), "llama3": loadMini(t, llama3Style)}
	var texts []string
	texts = append(texts, invalidUTF8...)
	texts = append(texts, "", " ", "  ", "\n\n\n", "Hello, world!", "子曰：“学而时习之，不亦说乎？”", EndOfText)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		b := make([]byte, rng.Intn(300))
		rng.Read(b)
		texts = append(texts, string(b))
	}
	pool := []string{"a", "the", " ", "\n", "中", "文", "’", "\xe4", "\xb8", "\xff", "1", "。", "\t", "é"}
	for i := 0; i < 300; i++ {
		var sb strings.Builder
		for n := rng.Intn(100); n > 0; n-- {
			sb.WriteString(pool[rng.Intn(len(pool))])
		}
		texts = append(texts, sb.String())
	}
	long := make([]byte, 100_000) // one long pre-token for the heap merger
	rng.Read(long)
	texts = append(texts, string(long), strings.Repeat(" ", 5000)+"x", sampleText(100_000))
	for name, tok := range toks {
		for _, text := range texts {
			ids := tok.Encode(text)
			if got := tok.Decode(ids); string(got) != text {
				t.Fatalf("%s: round trip of %.60q gave %.60q", name, text, got)
			}
			if got := tok.EncodeBytes([]byte(text)); !slices.Equal(got, ids) {
				t.Fatalf("%s: EncodeBytes differs from Encode on %.60q", name, text)
			}
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() || (id == tok.EOT() && tok.EOT() >= 0) {
					t.Fatalf("%s: id %d out of range or special", name, id)
				}
			}
		}
	}
}

// TestEncodeWithSpecial checks that EncodeWithSpecial turns <|endoftext|> into its id and encodes the rest as
// Encode does, while Encode treats the same characters as text.
func TestEncodeWithSpecial(t *testing.T) {
	tok := smallTok()
	eot := tok.EOT()
	cases := []struct {
		text string
		want []int32
	}{
		{EndOfText, []int32{eot}},
		{"a" + EndOfText + "b", slices.Concat(tok.Encode("a"), []int32{eot}, tok.Encode("b"))},
		{EndOfText + EndOfText + " x", slices.Concat([]int32{eot, eot}, tok.Encode(" x"))},
		{"<|endoftext", tok.Encode("<|endoftext")},
		{"<<|endoftext|>|>", slices.Concat(tok.Encode("<"), []int32{eot}, tok.Encode("|>"))},
	}
	for _, c := range cases {
		if got := tok.EncodeWithSpecial(c.text); !slices.Equal(got, c.want) {
			t.Errorf("EncodeWithSpecial(%q) = %v, want %v", c.text, got, c.want)
		}
		if got := string(tok.Decode(tok.EncodeWithSpecial(c.text))); got != c.text {
			t.Errorf("round trip with special of %q gave %q", c.text, got)
		}
		if slices.Contains(tok.Encode(c.text), eot) {
			t.Errorf("Encode(%q) produced <|endoftext|>", c.text)
		}
	}
}

// TestDecodeOutOfRange checks that ids outside the vocabulary decode as U+FFFD instead of panicking.
func TestDecodeOutOfRange(t *testing.T) {
	tok := smallTok()
	got := tok.Decode([]int32{'a', -1, int32(tok.VocabSize()), 'b'})
	if string(got) != "a\uFFFD\uFFFDb" {
		t.Errorf("Decode = %q", got)
	}
	if tok.TokenBytes(-1) != nil || tok.TokenBytes(int32(tok.VocabSize())) != nil {
		t.Error("TokenBytes out of range is not nil")
	}
}

// TestBPELongMatchesLinear checks that the heap merger used for long pre-tokens gives the same tokens as the
// linear merger, on random words built from a trained vocabulary's frequent pieces.
func TestBPELongMatchesLinear(t *testing.T) {
	tok := smallTok()
	rng := rand.New(rand.NewSource(2))
	pieces := []string{"th", "e", " ", "中", "in", "\xe4", "\xb8", "a", "s", "ing", "tion", "的", "\x80"}
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		for sb.Len() < maxSmallWord-4 && rng.Intn(20) > 0 {
			sb.WriteString(pieces[rng.Intn(len(pieces))])
		}
		w := sb.String()
		if len(w) < 2 || len(w) > maxSmallWord {
			continue
		}
		lin := tok.bpe(nil, w)
		heap := tok.bpeLong(nil, w)
		if !slices.Equal(lin, heap) {
			t.Fatalf("word %q: linear %v, heap %v", w, lin, heap)
		}
	}
}

// TestEncodeConcurrent checks that concurrent encoders, each with its own cache, agree with a sequential one.
func TestEncodeConcurrent(t *testing.T) {
	tok := smallTok()
	texts := []string{sampleText(20_000), sampleText(30_000)[5000:], string(bytes.Repeat([]byte("ab中 "), 3000))}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for k := 0; k < 3; k++ {
				i := (g + k) % len(texts)
				if got := tok.Encode(texts[i]); !slices.Equal(got, want[i]) {
					t.Errorf("goroutine %d: text %d encodes differently", g, i)
				}
			}
		})
	}
	wg.Wait()
}

// TestCacheReset checks that encoding stays right after the cache fills up and is emptied, and that the packed
// table grows correctly.
func TestCacheReset(t *testing.T) {
	tok := smallTok()
	c := newWordCache()
	text := sampleText(50_000)
	want := tok.Encode(text)
	var got []int32
	for i := 0; i < len(text); {
		j := tok.split.next(text, i)
		got = tok.appendWord(got, text[i:j], c)
		if c.size() > 500 {
			c.reset()
		}
		i = j
	}
	if !slices.Equal(got, want) {
		t.Error("encoding with cache resets differs")
	}
}

// TestLongPreTokenIsCutInBoundedPieces: a 3 MiB pre-token without a break (one "word" of letters) encodes as
// the concatenation of its MaxPreToken-byte pieces' encodings (merged whole, tokens of "abc"-runs would span
// the cuts, which fall inside the period), and decodes back.
func TestLongPreTokenIsCutInBoundedPieces(t *testing.T) {
	tok, err := Train([]string{strings.Repeat("abc", 4000)}, 300)
	if err != nil {
		t.Fatal(err)
	}
	word := strings.Repeat("abc", 1<<20)
	ids := tok.Encode(word)
	if got := string(tok.Decode(ids)); got != word {
		t.Fatalf("round trip lost the word (%d bytes back of %d)", len(got), len(word))
	}
	var want []int32
	for i := 0; i < len(word); i += MaxPreToken {
		want = append(want, tok.Encode(word[i:min(i+MaxPreToken, len(word))])...)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("a long pre-token is not the concatenation of its %d-byte pieces' encodings", MaxPreToken)
	}
}
