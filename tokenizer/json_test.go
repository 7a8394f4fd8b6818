package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// miniFile returns testdata/gpt2_mini.json (see gen_gpt2_mini.py) decoded, for tests that alter it.
func miniFile(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("testdata/gpt2_mini.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// writeJSON writes doc to a file in a test directory and returns its path.
func writeJSON(t *testing.T, doc any) string {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadMini loads the mini GPT-2 file after applying edit to it (if not nil).
func loadMini(t *testing.T, edit func(doc map[string]any)) *Tokenizer {
	t.Helper()
	doc := miniFile(t)
	if edit != nil {
		edit(doc)
	}
	tok, err := Load(writeJSON(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func model(doc map[string]any) map[string]any { return doc["model"].(map[string]any) }
func vocab(doc map[string]any) map[string]any { return model(doc)["vocab"].(map[string]any) }

// llama3Style turns the mini file into Llama 3's layout: Split with Llama 3's regex then ByteLevel without regex,
// merges as pairs, ignore_merges, <|endoftext|> only in added_tokens, and an extra special token.
func llama3Style(doc map[string]any) {
	doc["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Regex}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
	}}
	m := model(doc)
	m["ignore_merges"] = true
	var pairs []any
	for _, s := range m["merges"].([]any) {
		a, b, _ := strings.Cut(s.(string), " ")
		pairs = append(pairs, []any{a, b})
	}
	m["merges"] = pairs
	delete(vocab(doc), EndOfText)
	doc["added_tokens"] = append(doc["added_tokens"].([]any), map[string]any{"id": 267, "content": "<|end_of_text|>", "special": true})
}

// TestLoadGPT2Mini checks that a hand-made GPT-2 style file loads and encodes as GPT-2 would: " the" is one
// token after three merges, " cat" keeps a lone space byte (220, as in GPT-2) and merges "at".
func TestLoadGPT2Mini(t *testing.T) {
	tok := loadMini(t, nil)
	if tok.PreTokenizer() != "gpt2" || tok.VocabSize() != 267 || tok.EOT() != 266 {
		t.Fatalf("PreTokenizer %q, VocabSize %d, EOT %d", tok.PreTokenizer(), tok.VocabSize(), tok.EOT())
	}
	cases := []struct {
		text string
		want []int32
	}{
		{" the", []int32{262}},
		{"the", []int32{83, 258}},
		{" cat", []int32{220, 66, 265}},
		{" the cat", []int32{262, 220, 66, 265}},
		{"\n", []int32{198}},
		{"in re", []int32{259, 220, 260}},
		{"12345", []int32{16, 17, 18, 19, 20}},
		{"'s", []int32{6, 82}},
	}
	for _, c := range cases {
		if got := tok.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if got := tok.EncodeWithSpecial(" the" + EndOfText); !slices.Equal(got, []int32{262, 266}) {
		t.Errorf("EncodeWithSpecial = %v", got)
	}
}

// TestLoadLlama3Style checks a Llama 3 layout: merges given as pairs, the Llama 3 splitter (digits in threes),
// ignore_merges, a special token only in added_tokens, and no <|endoftext|>.
func TestLoadLlama3Style(t *testing.T) {
	tok := loadMini(t, llama3Style)
	if tok.PreTokenizer() != "llama3" || tok.VocabSize() != 268 || tok.EOT() != 266 {
		t.Fatalf("PreTokenizer %q, VocabSize %d, EOT %d", tok.PreTokenizer(), tok.VocabSize(), tok.EOT())
	}
	if id, ok := tok.SpecialID("<|end_of_text|>"); !ok || id != 267 {
		t.Errorf("SpecialID = %d, %v", id, ok)
	}
	if got := tok.Encode("12345 the"); !slices.Equal(got, []int32{16, 17, 18, 19, 20, 262}) {
		t.Errorf("Encode = %v", got)
	}
	if got := tok.EncodeWithSpecial("<|end_of_text|>the"); !slices.Equal(got, []int32{267, 83, 258}) {
		t.Errorf("EncodeWithSpecial = %v", got)
	}
	other := loadMini(t, func(doc map[string]any) {
		llama3Style(doc)
		doc["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\p{N}|\s+`}
	})
	if other.PreTokenizer() != "llama3 (approximate)" {
		t.Errorf("unknown regex: PreTokenizer %q", other.PreTokenizer())
	}
}

// TestSaveLoad checks that a saved tokenizer loads back with identical encodings, that saving the loaded one
// writes the same bytes, that merges given as pairs load the same, and that saving leaves no temporary file.
func TestSaveLoad(t *testing.T) {
	tok := smallTok()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := tok.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.VocabSize() != tok.VocabSize() || back.EOT() != tok.EOT() || back.PreTokenizer() != "smallinit" {
		t.Fatalf("loaded: VocabSize %d, EOT %d, PreTokenizer %q", back.VocabSize(), back.EOT(), back.PreTokenizer())
	}
	texts := append([]string{sampleText(50_000), EndOfText + "x"}, invalidUTF8...)
	for _, s := range texts {
		if !slices.Equal(back.Encode(s), tok.Encode(s)) || !slices.Equal(back.EncodeWithSpecial(s), tok.EncodeWithSpecial(s)) {
			t.Fatalf("loaded tokenizer encodes %.40q differently", s)
		}
	}
	path2 := filepath.Join(dir, "again.json")
	if err := back.Save(path2); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(path2)
	if !bytes.Equal(a, b) {
		t.Error("saving a loaded tokenizer changed the file")
	}

	var doc map[string]any
	if err := json.Unmarshal(a, &doc); err != nil {
		t.Fatal(err)
	}
	if model(doc)["type"] != "BPE" || doc["version"] != "1.0" || doc["added_tokens"].([]any)[0].(map[string]any)["content"] != EndOfText {
		t.Error("saved file lacks the expected fields")
	}
	var pairs []any
	for _, s := range model(doc)["merges"].([]any) {
		x, y, _ := strings.Cut(s.(string), " ")
		pairs = append(pairs, []any{x, y})
	}
	model(doc)["merges"] = pairs
	fromPairs, err := Load(writeJSON(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fromPairs.Encode(texts[0]), tok.Encode(texts[0])) {
		t.Error("merges as pairs load differently")
	}

	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d files after two saves, want 2", len(entries))
	}
	if err := tok.Save(filepath.Join(dir, "missing", "tokenizer.json")); err == nil {
		t.Error("Save into a missing directory succeeded")
	}
}

// TestSaveKeepsRawAddedKeys: a GPT-NeoX-style vocabulary entry keyed by raw text (a run of spaces, also an added
// token) beside the byte-level token of the same bytes is saved under its own key, so the saved file loads
// again, encodes the same and saves to the same bytes.
func TestSaveKeepsRawAddedKeys(t *testing.T) {
	tok := loadMini(t, func(doc map[string]any) {
		vocab(doc)["ĠĠ"] = 267
		model(doc)["merges"] = append(model(doc)["merges"].([]any), "Ġ Ġ")
		vocab(doc)["  "] = 268
		doc["added_tokens"] = append(doc["added_tokens"].([]any), map[string]any{"id": 268, "content": "  ",
			"single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false})
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := tok.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatalf("the saved file does not load: %v", err)
	}
	const text = "a  b   c\n  d"
	if got, want := back.Encode(text), tok.Encode(text); !slices.Equal(got, want) {
		t.Errorf("reloaded tokenizer encodes %q as %v, the original as %v", text, got, want)
	}
	if err := back.Save(filepath.Join(dir, "again.json")); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(filepath.Join(dir, "again.json"))
	if !bytes.Equal(a, b) || !bytes.Contains(a, []byte(`"  ": 268`)) {
		t.Errorf("saved files differ (%v) or lack the raw key", !bytes.Equal(a, b))
	}
}

// TestLoadMalformed checks that broken files are refused with an error that names the file and the problem.
func TestLoadMalformed(t *testing.T) {
	cases := []struct {
		name string
		edit func(doc map[string]any)
		raw  string // used instead of the edited mini file when set
		want string // in the error message
	}{
		{name: "invalid JSON", raw: `{"model": `, want: "invalid JSON"},
		{name: "not an object", raw: `[1, 2]`, want: "invalid JSON"},
		{name: "no model", edit: func(d map[string]any) { delete(d, "model") }, want: `no "model"`},
		{name: "null model", raw: `{"model": null}`, want: `no "model"`},
		{name: "model type", edit: func(d map[string]any) { model(d)["type"] = "WordPiece" }, want: `type "WordPiece"`},
		{name: "no type", edit: func(d map[string]any) { delete(model(d), "type") }, want: `no "type"`},
		{name: "no vocab", edit: func(d map[string]any) { delete(model(d), "vocab") }, want: `no "vocab"`},
		{name: "vocab array", edit: func(d map[string]any) { model(d)["vocab"] = []any{1} }, want: "not an object"},
		{name: "dropout", edit: func(d map[string]any) { model(d)["dropout"] = 0.1 }, want: "dropout"},
		{name: "byte fallback", edit: func(d map[string]any) { model(d)["byte_fallback"] = true }, want: "byte_fallback"},
		{name: "subword prefix", edit: func(d map[string]any) { model(d)["continuing_subword_prefix"] = "##" }, want: "continuing_subword_prefix"},
		{name: "unknown merge token", edit: func(d map[string]any) { model(d)["merges"] = []any{"Ġ zz"} }, want: `unknown token "zz"`},
		{name: "merge result missing", edit: func(d map[string]any) { model(d)["merges"] = []any{"x y"} }, want: "not in the vocabulary"},
		{name: "merge three parts", edit: func(d map[string]any) { model(d)["merges"] = []any{"a b c"} }, want: "two tokens"},
		{name: "merge bad pair", edit: func(d map[string]any) { model(d)["merges"] = []any{[]any{"a"}} }, want: "two tokens"},
		{name: "merge number", edit: func(d map[string]any) { model(d)["merges"] = []any{7} }, want: "neither"},
		{name: "duplicate merge", edit: func(d map[string]any) { model(d)["merges"] = []any{"h e", "h e"} }, want: "listed twice"},
		{name: "duplicate id", edit: func(d map[string]any) { vocab(d)["Ġthe"] = 0 }, want: "duplicate id 0"},
		{name: "ids not dense", edit: func(d map[string]any) { vocab(d)["Ġthe"] = 300 }, want: "not dense"},
		{name: "huge id", edit: func(d map[string]any) { vocab(d)["Ġthe"] = 1 << 30 }, want: "not dense"},
		{name: "negative id", edit: func(d map[string]any) { vocab(d)["Ġthe"] = -1 }, want: "not a valid id"},
		{name: "fractional id", edit: func(d map[string]any) { vocab(d)["Ġthe"] = 1.5 }, want: "not a valid id"},
		{name: "missing byte", edit: func(d map[string]any) { delete(vocab(d), "Ġ") }, want: "no token"},
		{name: "not byte-level", edit: func(d map[string]any) { delete(vocab(d), "Ġthe"); vocab(d)["a b"] = 262 }, want: "not byte-level"},
		{name: "added id clash", edit: func(d map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 5, "content": "<x>", "special": true}}
		}, want: "duplicate id 5"},
		{name: "added twice", edit: func(d map[string]any) {
			d["added_tokens"] = append(d["added_tokens"].([]any), map[string]any{"id": 267, "content": EndOfText})
		}, want: "listed twice"},
		{name: "added empty", edit: func(d map[string]any) {
			d["added_tokens"] = append(d["added_tokens"].([]any), map[string]any{"id": 267, "content": ""})
		}, want: "empty content"},
		{name: "no byte level", edit: func(d map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }, want: "no ByteLevel"},
		{name: "null pre-tokenizer", edit: func(d map[string]any) { d["pre_tokenizer"] = nil }, want: "pre_tokenizer is null"},
		{name: "normalizer", edit: func(d map[string]any) { d["normalizer"] = map[string]any{"type": "Lowercase"} }, want: "normalizer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.json")
			raw := []byte(c.raw)
			if c.raw == "" {
				doc := miniFile(t)
				c.edit(doc)
				var err error
				if raw, err = json.Marshal(doc); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			tok, err := Load(path)
			if err == nil {
				t.Fatalf("loaded: %d tokens", tok.VocabSize())
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name the file and %q", err, c.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
}

// TestByteLevelAlphabet checks the GPT-2 byte-to-character table against known values and that it is a
// bijection.
func TestByteLevelAlphabet(t *testing.T) {
	known := map[byte]rune{' ': 'Ġ', '\n': 'Ċ', '!': '!', 0: 'Ā', 0x7F: 'ġ', 0xAD: 'Ń', 0xFF: 'ÿ'}
	for b, r := range known {
		if byteToRune[b] != r {
			t.Errorf("byte 0x%02x -> %q, want %q", b, byteToRune[b], r)
		}
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	back, ok := byteLevelDecode(byteLevelEncode(all))
	if !ok || !bytes.Equal(back, all) || len(runeToByte) != 256 {
		t.Error("byte-level encoding does not round-trip")
	}
	if _, ok := byteLevelDecode("a b"); ok {
		t.Error(`"a b" decoded as byte-level`)
	}
}

// TestErrorsQuoteTokensShort: an error quoting a token of the file cuts it (a 50 MB token made a 52 MB line).
func TestErrorsQuoteTokensShort(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(path, []byte(`{"model": {"type": "BPE", "vocab": {"`+long+`": 0, "`+long+`": 1}, "merges": []}}`), 0o644)
	_, err := Load(path)
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "bytes in all") {
		t.Fatalf("error of %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}
