package tokenizer

import (
	"os"
	"testing"
)

// FuzzParse checks that parse never panics on arbitrary tokenizer.json bytes, and that whatever it accepts
// round-trips text exactly.
func FuzzParse(f *testing.F) {
	mini, err := os.ReadFile("testdata/gpt2_mini.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mini)
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[["a","a"]]},"added_tokens":[{"id":1,"content":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := parse(data)
		if err != nil {
			return
		}
		for _, s := range []string{"hello world", "中文\xff", string(data[:min(len(data), 64)])} {
			if got := string(tok.Decode(tok.EncodeWithSpecial(s))); got != s {
				t.Fatalf("round trip of %q gave %q", s, got)
			}
		}
	})
}

// FuzzRoundTrip checks Decode(Encode(s)) == s on arbitrary bytes with every pre-tokenizer.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range invalidUTF8 {
		f.Add([]byte(s))
	}
	f.Add([]byte("The cat's 12345 “whiskers”—\r\n\n  子曰：学而时习之 ひらがな"))
	tok := smallTok()
	var toks []*Tokenizer
	for _, sp := range []*splitter{smallinitSplitter, gpt2Splitter, llama3Splitter} {
		tk, err := newTokenizer(tok.vocab, tok.inModel, tok.merges, tok.added, sp)
		if err != nil {
			f.Fatal(err)
		}
		toks = append(toks, tk)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tk := range toks {
			if got := tk.Decode(tk.EncodeBytes(data)); string(got) != string(data) {
				t.Fatalf("%s: round trip of %q gave %q", tk.split.name, data, got)
			}
		}
	})
}
