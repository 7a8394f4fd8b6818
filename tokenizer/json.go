package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// fileSections keeps the sections of a loaded tokenizer.json that this package does not interpret (or only
// approximates), so that Save writes them back unchanged and Python still sees the original tokenizer.
type fileSections struct {
	truncation, padding, normalizer, preTokenizer, postProcessor, decoder json.RawMessage
	unkToken                                                              json.RawMessage
	fuseUnk                                                               bool
}

// Sections written for a trained tokenizer: Llama 3's layout, a Split with smallinit's regex followed by a
// ByteLevel step that only maps bytes.
func defaultPreTokenizerJSON(sp *splitter) json.RawMessage {
	re, _ := jsonString(sp.regex)
	return json.RawMessage(`{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + re +
		`},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]}`)
}

const defaultDecoderJSON = `{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`

// jsonString returns s as a JSON string literal, without Go's HTML escaping of <, > and &.
func jsonString(s string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// Save writes the tokenizer to path as a Hugging Face tokenizer.json (vocabulary one token per line, merges as
// "a b" strings, in rank order). It writes a temporary file in the same directory and renames it over path, so
// a reader never sees a half-written file. A tokenizer that was loaded keeps the sections this package does not
// interpret (normalizer, pre_tokenizer, post_processor, decoder, truncation, padding) as they were.
func (t *Tokenizer) Save(path string) error {
	data, err := t.marshal()
	if err != nil {
		return fmt.Errorf("tokenizer: save %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("tokenizer: save: %w", err)
	}
	return nil
}

// marshal returns the tokenizer.json bytes.
func (t *Tokenizer) marshal() ([]byte, error) {
	sec := t.file
	if sec == nil {
		sec = &fileSections{preTokenizer: defaultPreTokenizerJSON(t.split), decoder: json.RawMessage(defaultDecoderJSON)}
	}
	raw := func(m json.RawMessage) string {
		if len(m) == 0 {
			return "null"
		}
		var b bytes.Buffer
		if err := json.Compact(&b, m); err != nil {
			return "null" // cannot happen: m was checked when loaded or is a constant
		}
		return b.String()
	}
	var b bytes.Buffer
	b.WriteString("{\n  \"version\": \"1.0\",\n")
	fmt.Fprintf(&b, "  \"truncation\": %s,\n  \"padding\": %s,\n", raw(sec.truncation), raw(sec.padding))
	b.WriteString("  \"added_tokens\": [")
	for i, a := range t.added {
		if i > 0 {
			b.WriteString(",")
		}
		var ab bytes.Buffer
		enc := json.NewEncoder(&ab)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(a); err != nil {
			return nil, err
		}
		b.WriteString("\n    ")
		b.Write(bytes.TrimSuffix(ab.Bytes(), []byte("\n")))
	}
	if len(t.added) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("],\n")
	fmt.Fprintf(&b, "  \"normalizer\": %s,\n  \"pre_tokenizer\": %s,\n  \"post_processor\": %s,\n  \"decoder\": %s,\n",
		raw(sec.normalizer), raw(sec.preTokenizer), raw(sec.postProcessor), raw(sec.decoder))
	fmt.Fprintf(&b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": %s,\n", raw(sec.unkToken))
	b.WriteString("    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n")
	fmt.Fprintf(&b, "    \"fuse_unk\": %v,\n    \"byte_fallback\": false,\n    \"ignore_merges\": %v,\n", sec.fuseUnk, t.ignoreMerges)
	// A vocabulary entry that is also an added token was keyed by the token's content, not its byte-level
	// encoding (GPT-NeoX lists raw runs of spaces so): Load keeps the content, so write it back as it was.
	addedKey := make(map[int32]string, len(t.added))
	for _, a := range t.added {
		addedKey[a.ID] = a.Content
	}
	key := func(id int32) string {
		if k, ok := addedKey[id]; ok {
			return k
		}
		return byteLevelEncode([]byte(t.vocab[id]))
	}
	b.WriteString("    \"vocab\": {")
	first := true
	for id := range t.vocab {
		if !t.inModel[id] {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		k, err := jsonString(key(int32(id)))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "\n      %s: %d", k, id)
	}
	b.WriteString("\n    },\n    \"merges\": [")
	for r, m := range t.merges {
		if r > 0 {
			b.WriteString(",")
		}
		k, err := jsonString(key(m[0]) + " " + key(m[1]))
		if err != nil {
			return nil, err
		}
		b.WriteString("\n      ")
		b.WriteString(k)
	}
	b.WriteString("\n    ]\n  }\n}\n")
	return b.Bytes(), nil
}

// Load reads a Hugging Face tokenizer.json holding a byte-level BPE model: one saved by Save, or a GPT-2 or
// Llama 3 style file. Merges may be "a b" strings or ["a", "b"] pairs.
//
// Pre-tokenisation follows the file's pre_tokenizer as closely as this package can without a regex engine: a
// ByteLevel pre-tokenizer with use_regex, or a Split with GPT-2's regex, uses the GPT-2 splitter; a Split with
// Llama 3's regex uses the Llama 3 splitter; smallinit's regex uses smallinit's splitter. Any other regex (Qwen,
// DeepSeek, GPT-4o, ...) or layout is approximated with the Llama 3 splitter, so token ids can then differ from
// Hugging Face's on some text; the round trip Decode(Encode(s)) == s stays exact in every case. PreTokenizer
// reports which splitter is in use. An NFC normalizer is ignored (text is encoded as given, which keeps the round
// trip exact); other normalizers are refused. A post_processor is kept for Save but not applied: Encode never adds
// BOS or EOS tokens. In a loaded file the byte tokens have the ids the file gives them, not id = byte value.
//
// Load refuses, with an error naming the file and the problem, and never a panic: invalid JSON, a missing model
// or one that is not "BPE", BPE options this package does not implement (dropout, continuing_subword_prefix,
// end_of_word_suffix, byte_fallback), a vocabulary that is not byte-level or lacks a single-byte token,
// duplicate tokens or ids, ids that are not dense (0..n-1 with vocabulary and added tokens together), merges that
// are malformed, repeated or refer to unknown tokens.
func Load(path string) (*Tokenizer, error) {
	data, err := inputfile.ReadFile(path, inputfile.MaxTokenizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load: %w", err)
	}
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load %s: %w", path, err)
	}
	return t, nil
}

type modelJSON struct {
	Type                    *string           `json:"type"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                json.RawMessage   `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	FuseUnk                 bool              `json:"fuse_unk"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Vocab                   json.RawMessage   `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
}

// parse builds a Tokenizer from tokenizer.json bytes; errors do not name the file (Load adds it).
func parse(data []byte) (*Tokenizer, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if isNull(top["model"]) {
		return nil, errors.New(`no "model" section`)
	}
	var m modelJSON
	if err := json.Unmarshal(top["model"], &m); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	switch {
	case m.Type == nil:
		return nil, errors.New(`model: no "type" (want "BPE")`)
	case *m.Type != "BPE":
		return nil, fmt.Errorf("model: type %s, want \"BPE\"", q(*m.Type))
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("model: dropout %g is not supported", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return nil, errors.New("model: continuing_subword_prefix is not supported (not a byte-level BPE)")
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, errors.New("model: end_of_word_suffix is not supported (not a byte-level BPE)")
	case m.ByteFallback:
		return nil, errors.New("model: byte_fallback is not supported (not a byte-level BPE)")
	}

	var added []addedToken
	if !isNull(top["added_tokens"]) {
		if err := json.Unmarshal(top["added_tokens"], &added); err != nil {
			return nil, fmt.Errorf("added_tokens: %w", err)
		}
	}
	keys, ids, err := parseVocab(m.Vocab)
	if err != nil {
		return nil, err
	}

	// Ids: vocabulary and added tokens together must be exactly 0..n-1, each used once (an added token may also
	// be in the vocabulary, with the same id, as GPT-2's <|endoftext|> is).
	n := 0
	for _, id := range ids {
		n = max(n, id+1)
	}
	for _, a := range added {
		if a.ID < 0 {
			return nil, fmt.Errorf("added token %s: negative id %d", q(a.Content), a.ID)
		}
		n = max(n, int(a.ID)+1)
	}
	if n > len(keys)+len(added) {
		return nil, fmt.Errorf("ids are not dense: %d tokens, but ids go up to %d", len(keys)+len(added), n-1)
	}
	vocab := make([]string, n)
	inModel := make([]bool, n)
	used := make([]bool, n)
	owner := make([]string, n) // for error messages
	addedContent := make(map[string]bool, len(added))
	for _, a := range added {
		addedContent[a.Content] = true
	}
	for i, k := range keys {
		id := ids[i]
		if used[id] {
			return nil, fmt.Errorf("vocab: duplicate id %d (%s and %s)", id, q(owner[id]), q(k))
		}
		raw, ok := byteLevelDecode(k)
		if !ok {
			if !addedContent[k] {
				return nil, fmt.Errorf("vocab: token %s (id %d) is not byte-level: it has a character outside the GPT-2 byte alphabet", q(k), id)
			}
			raw = []byte(k)
		}
		vocab[id], inModel[id], used[id], owner[id] = string(raw), true, true, k
	}
	seen := make(map[string]bool, len(added))
	for _, a := range added {
		if seen[a.Content] {
			return nil, fmt.Errorf("added_tokens: %s is listed twice", q(a.Content))
		}
		seen[a.Content] = true
		if used[a.ID] {
			if inModel[a.ID] && owner[a.ID] == a.Content {
				vocab[a.ID] = a.Content
				continue
			}
			return nil, fmt.Errorf("added_tokens: duplicate id %d (%s and %s)", a.ID, q(owner[a.ID]), q(a.Content))
		}
		vocab[a.ID], used[a.ID], owner[a.ID] = a.Content, true, a.Content
	}
	for id, u := range used {
		if !u {
			return nil, fmt.Errorf("ids are not dense: %d tokens with ids up to %d, but no token has id %d", len(keys)+len(added), n-1, id)
		}
	}

	// Merges: "a b" or ["a", "b"], both parts byte-level vocabulary tokens.
	byKey := make(map[string]int32, len(keys))
	for i, k := range keys {
		byKey[k] = int32(ids[i])
	}
	merges := make([][2]int32, len(m.Merges))
	for r, mj := range m.Merges {
		var parts []string
		var s string
		if err := json.Unmarshal(mj, &s); err == nil {
			parts = strings.Split(s, " ")
		} else if err := json.Unmarshal(mj, &parts); err != nil {
			return nil, fmt.Errorf("merge %d: %s is neither \"a b\" nor [\"a\", \"b\"]", r, truncate(mj))
		}
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("merge %d: %s does not name two tokens", r, truncate(mj))
		}
		for i, p := range parts {
			id, ok := byKey[p]
			if !ok {
				return nil, fmt.Errorf("merge %d: %s refers to unknown token %s", r, truncate(mj), q(p))
			}
			merges[r][i] = id
		}
	}

	sp, approx, err := chooseSplitter(top["pre_tokenizer"])
	if err != nil {
		return nil, err
	}
	if norm := top["normalizer"]; !isNull(norm) {
		var nj struct{ Type string }
		if err := json.Unmarshal(norm, &nj); err != nil || nj.Type != "NFC" {
			return nil, fmt.Errorf("normalizer %s is not supported (only null or NFC)", truncate(norm))
		}
	}
	t, err := newTokenizer(vocab, inModel, merges, added, sp)
	if err != nil {
		return nil, err
	}
	t.splitApprox = approx
	t.ignoreMerges = m.IgnoreMerges
	t.file = &fileSections{
		truncation: top["truncation"], padding: top["padding"], normalizer: top["normalizer"],
		preTokenizer: top["pre_tokenizer"], postProcessor: top["post_processor"], decoder: top["decoder"],
		unkToken: m.UnkToken, fuseUnk: m.FuseUnk,
	}
	return t, nil
}

// parseVocab reads the vocab object in file order, refusing duplicate keys and ids that are not non-negative
// integers.
func parseVocab(raw json.RawMessage) (keys []string, ids []int, err error) {
	if isNull(raw) {
		return nil, nil, errors.New(`model: no "vocab"`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, errors.New("model: vocab is not an object")
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("vocab: %w", err)
		}
		k := tok.(string) // object keys are always strings
		var num json.Number
		if err := dec.Decode(&num); err != nil {
			return nil, nil, fmt.Errorf("vocab: token %s: id is not a number", q(k))
		}
		id, err := num.Int64()
		if err != nil || id < 0 || id >= math.MaxInt32 {
			return nil, nil, fmt.Errorf("vocab: token %s: id %s is not a valid id", q(k), truncate(json.RawMessage(num)))
		}
		if seen[k] {
			return nil, nil, fmt.Errorf("vocab: token %s is listed twice", q(k))
		}
		seen[k] = true
		keys = append(keys, k)
		ids = append(ids, int(id))
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, nil, fmt.Errorf("vocab: %w", err)
	}
	return keys, ids, nil
}

// chooseSplitter picks the splitter for a file's pre_tokenizer section; approx reports that it only
// approximates the file's rules. The file must be byte-level: a ByteLevel step must appear.
func chooseSplitter(raw json.RawMessage) (sp *splitter, approx bool, err error) {
	if isNull(raw) {
		return nil, false, errors.New("pre_tokenizer is null: not a byte-level BPE (want ByteLevel, alone or in a Sequence)")
	}
	type preJSON struct {
		Type           string
		UseRegex       *bool `json:"use_regex"`
		AddPrefixSpace bool  `json:"add_prefix_space"`
		Pattern        struct{ Regex, String *string }
		Behavior       string
		Invert         bool
		Pretokenizers  []json.RawMessage
	}
	var regexes []string
	byteLevel, byteLevelRegex, other := false, false, false
	var walk func(raw json.RawMessage, depth int) error
	walk = func(raw json.RawMessage, depth int) error {
		var p preJSON
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("pre_tokenizer: %w", err)
		}
		switch p.Type {
		case "ByteLevel":
			byteLevel = true
			other = other || p.AddPrefixSpace // a space added in front of the text: not implemented
			if p.UseRegex == nil || *p.UseRegex {
				byteLevelRegex = true
			}
		case "Split":
			if p.Pattern.Regex != nil && p.Behavior == "Isolated" && !p.Invert {
				regexes = append(regexes, *p.Pattern.Regex)
			} else {
				other = true
			}
		case "Sequence":
			if depth > 8 {
				return errors.New("pre_tokenizer: Sequences nested too deep")
			}
			for _, q := range p.Pretokenizers {
				if err := walk(q, depth+1); err != nil {
					return err
				}
			}
		case "":
			return errors.New(`pre_tokenizer: step without "type"`)
		default:
			other = true // Digits, Punctuation, ...: approximated
		}
		return nil
	}
	if err := walk(raw, 0); err != nil {
		return nil, false, err
	}
	if !byteLevel {
		return nil, false, fmt.Errorf("pre_tokenizer %s has no ByteLevel step: not a byte-level BPE", truncate(raw))
	}
	if byteLevelRegex {
		regexes = append(regexes, gpt2Regex)
	}
	if len(regexes) == 1 && !other {
		for _, s := range []*splitter{gpt2Splitter, llama3Splitter, smallinitSplitter} {
			if regexes[0] == s.regex {
				return s, false, nil
			}
		}
	}
	return llama3Splitter, true, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// truncate returns raw JSON shortened for an error message.
// q quotes a string of the file for an error message, cut to a sensible length (a 50 MB token made a 52 MB
// error line).
func q(s string) string { return inputfile.Quote(s) }

func truncate(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
