package tokenizer

import (
	"github.com/smallinit/smallinit/internal/allocs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad loads arbitrary bytes as a tokenizer.json file (FuzzParse checks the parser's round trips; this
// target checks what the file readers rely on): errors name the file, a tokenizer that loads has every id
// below VocabSize, and loading allocates at most 1 MB plus 512 bytes per byte of the file, so that ids, merges
// or added tokens claiming a huge vocabulary are refused before it is allocated.
func FuzzLoad(f *testing.F) {
	mini, err := os.ReadFile("testdata/gpt2_mini.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mini)
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":2000000000},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{},"merges":[]},"added_tokens":[{"id":2147483647,"content":"x"}],"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":["a a","a"]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Sequence","pretokenizers":[]}]}}`))
	dir := f.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var tok *Tokenizer
		var err error
		n := allocs.Bytes(func() { tok, err = Load(path) })
		if limit := uint64(1<<20 + 512*len(b)); n > limit {
			t.Fatalf("Load of %d bytes allocated %d bytes (limit %d)", len(b), n, limit)
		}
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		v := tok.VocabSize()
		if eot := tok.EOT(); eot >= int32(v) {
			t.Fatalf("end-of-text id %d, vocabulary %d", eot, v)
		}
		for _, id := range tok.EncodeWithSpecial("hello <|endoftext|> world \xff") {
			if id < 0 || int(id) >= v {
				t.Fatalf("id %d outside the vocabulary of %d", id, v)
			}
		}
	})
}
