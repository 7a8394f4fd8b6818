// Package tokenizer is smallinit's byte-level BPE tokenizer: training, encoding, decoding, and Hugging Face
// tokenizer.json files.
//
// # Model
//
// A token is a byte string. Ids 0..255 of a trained tokenizer are the single bytes (id = byte value), so any
// byte string, invalid UTF-8 included, encodes and decodes back exactly; ids 256.. are the learned merges in
// the order they were learned; the last id is the special token <|endoftext|> (EndOfText), which separates
// documents. Text is first cut into pre-tokens (see below); BPE then runs inside each pre-token, applying the
// learned merges lowest rank first (leftmost first among equal ranks), exactly as training applied them.
//
// # Pre-tokenisation
//
// Trained tokenizers cut text with smallinit's pattern, implemented by hand (no regex engine at run time); the
// alternatives are tried in order at each position, as a regex engine does:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)                contractions
//	[^\r\n\p{L}\p{N}]?(?:(?!CJK)\p{L})+         a word, led by at most one non-letter (a space, a quote)
//	 ?CJK{1,2}                                  Han, Hiragana, Katakana: at most CJKMaxRun characters
//	\p{N}{1,3}                                  digits in groups of at most 3
//	 ?[^\s\p{L}\p{N}]+[\r\n]*                   punctuation and symbols, with the line breaks after them
//	\s*[\r\n]+ | \s+(?!\S) | \s+                whitespace; a space before a word goes with the word
//
// where CJK is [\p{Han}\p{Hiragana}\p{Katakana}]. Bytes that are not valid UTF-8 count as punctuation.
// This is Llama 3's pattern (GPT-4's cl100k_base) with one change for Chinese and Japanese, which have no spaces:
// CJK characters do not form letter runs but runs of at most CJKMaxRun characters, so BPE learns common characters
// and two-character words instead of spending merges on whole clauses. On top of that the trainer never merges
// across a character boundary unless both sides are whole characters: a token is always either a sequence of
// whole UTF-8 characters or a piece of a single character, never the tail of one character glued to the head of
// the next.
//
// # Training
//
// Train counts unique pre-tokens once, then learns merges with pair counts that are updated incrementally around
// each merge (only the words that contain the merged pair are touched) and a max-heap of pair counts with lazy
// deletion. The pair merged next is the one with the highest count; ties go to the pair with the smaller left
// token id, then the smaller right token id (byte tokens have id = byte value; learned tokens are numbered in
// the order they were learned). Training is therefore deterministic: the same texts and size give the same
// tokenizer, byte for byte.
//
// # Files
//
// Save and Load read and write Hugging Face tokenizer.json files (BPE model, ByteLevel alphabet), so trained
// tokenizers can be used from Python, and GPT-2 or Llama 3 style files can be used here. See Load for what is
// accepted.
//
// A Tokenizer is safe for concurrent use: encoding only reads it, apart from caches of encoded pre-tokens that
// are never shared between concurrent calls.
package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// EndOfText is the special token that separates documents; a trained tokenizer gives it the last id.
const EndOfText = "<|endoftext|>"

// Tokenizer is a byte-level BPE tokenizer: a vocabulary of byte strings, ranked merges, a pre-tokenizer and a set
// of special (added) tokens. Build one with Train or Load.
type Tokenizer struct {
	vocab   []string // id -> the token's raw bytes; added tokens hold their content
	inModel []bool   // id -> the token is in the BPE model's vocabulary (false for added-only tokens)
	byteID  [256]int32
	ids     map[string]int32 // raw bytes -> id, BPE model tokens only
	merges  [][2]int32       // rank -> the pair it merges
	rank    map[uint64]int32 // pairKey(a, b) -> rank
	mergeTo []int32          // rank -> id of the merged token

	added      []addedToken // added tokens in file order
	addedFirst [256][]int32 // first byte -> indices into added, longest content first
	eot        int32

	split        *splitter
	splitApprox  bool // a foreign file's pre-tokenizer, approximated by split
	ignoreMerges bool // Llama 3's "ignore_merges": a pre-token that is itself a token is encoded as that token

	file *fileSections // sections of a loaded tokenizer.json that Save writes back unchanged; nil if trained

	// caches holds *wordCache values: encoded pre-tokens. A pool gives each concurrent encoder its own cache
	// (in practice one per processor) with no locking; the garbage collector may drop idle caches.
	caches sync.Pool
}

// addedToken is an entry of tokenizer.json's "added_tokens": a token matched literally in text by
// EncodeWithSpecial, outside BPE.
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

const (
	maxCachedWord  = 64      // longer pre-tokens are not cached
	maxCacheWords  = 1 << 18 // the cache is emptied when it reaches this many entries
	maxSmallWord   = 64      // longer pre-tokens are merged with a heap instead of a linear scan
	noRank         = int32(-1)
	maxVocabTokens = 1 << 30
)

// MaxPreToken is the longest pre-token merged as one piece: a longer one (a run of a million spaces, random
// bytes without a break) is cut into pieces of at most MaxPreToken bytes, at UTF-8 boundaries, each merged on
// its own. This bounds the memory of a merge (about 36 bytes per byte of the piece) whatever the input; Hugging
// Face's tokenizers merge across the cut, so ids can differ from theirs for such pre-tokens only, which no
// natural text has.
const MaxPreToken = 64 << 10

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newTokenizer builds a Tokenizer and its lookup tables from a vocabulary (raw bytes per id), which ids belong to
// the BPE model, the merges in rank order and the added tokens. It checks what the encoder relies on: every
// single byte is a model token, merges refer to model tokens and produce the token of their concatenation.
func newTokenizer(vocab []string, inModel []bool, merges [][2]int32, added []addedToken, sp *splitter) (*Tokenizer, error) {
	t := &Tokenizer{
		vocab:   vocab,
		inModel: inModel,
		ids:     make(map[string]int32, len(vocab)),
		merges:  merges,
		rank:    make(map[uint64]int32, len(merges)),
		mergeTo: make([]int32, len(merges)),
		added:   added,
		eot:     -1,
		split:   sp,
	}
	t.caches.New = func() any { return newWordCache() }
	if len(vocab) > maxVocabTokens {
		return nil, fmt.Errorf("%d tokens: more than %d", len(vocab), maxVocabTokens)
	}
	for id, s := range vocab {
		if inModel[id] {
			t.ids[s] = int32(id)
		}
	}
	for b := 0; b < 256; b++ {
		id, ok := t.ids[string([]byte{byte(b)})]
		if !ok {
			return nil, fmt.Errorf("byte 0x%02x has no token: a byte-level BPE needs all 256 single-byte tokens", b)
		}
		t.byteID[b] = id
	}
	for r, m := range merges {
		a, b := m[0], m[1]
		if a < 0 || int(a) >= len(vocab) || b < 0 || int(b) >= len(vocab) || !inModel[a] || !inModel[b] {
			return nil, fmt.Errorf("merge %d refers to a token outside the model", r)
		}
		to, ok := t.ids[vocab[a]+vocab[b]]
		if !ok {
			return nil, fmt.Errorf("merge %d (%q %q): the merged token is not in the vocabulary", r, vocab[a], vocab[b])
		}
		k := pairKey(a, b)
		if _, dup := t.rank[k]; dup {
			return nil, fmt.Errorf("merge %d (%q %q) is listed twice", r, vocab[a], vocab[b])
		}
		t.rank[k] = int32(r)
		t.mergeTo[r] = to
	}
	for i, a := range added {
		if a.Content == "" {
			return nil, fmt.Errorf("added token %d has empty content", a.ID)
		}
		first := a.Content[0]
		t.addedFirst[first] = append(t.addedFirst[first], int32(i))
		if a.Content == EndOfText {
			t.eot = a.ID
		}
	}
	for b := range t.addedFirst {
		slices.SortStableFunc(t.addedFirst[b], func(x, y int32) int { return len(added[y].Content) - len(added[x].Content) })
	}
	return t, nil
}

// VocabSize returns the number of token ids, added tokens included: ids run from 0 to VocabSize()-1. A model's
// embedding and output layers need this many rows.
func (t *Tokenizer) VocabSize() int { return len(t.vocab) }

// EOT returns the id of the special token <|endoftext|>, which separates documents in training data, or -1 if
// the tokenizer has none (a loaded Llama 3 file, say; use SpecialID for its own end token).
func (t *Tokenizer) EOT() int32 { return t.eot }

// SpecialID returns the id of the added (special) token with the given content, such as "<|end_of_text|>".
func (t *Tokenizer) SpecialID(content string) (int32, bool) {
	for _, a := range t.added {
		if a.Content == content {
			return a.ID, true
		}
	}
	return 0, false
}

// TokenBytes returns the raw bytes of token id (an added token's content for a special token), or nil if id is
// out of range. It is for inspecting a vocabulary, e.g. printing the tokens a model predicts.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if id < 0 || int(id) >= len(t.vocab) {
		return nil
	}
	return []byte(t.vocab[id])
}

// PreTokenizer names the pre-tokenizer in use: "smallinit" (trained tokenizers), "gpt2" or "llama3" (loaded
// files whose pre-tokenizer is exactly GPT-2's or Llama 3's), or "llama3 (approximate)" for a loaded file with any
// other pre-tokenizer, whose splitting Llama 3's pattern only approximates.
func (t *Tokenizer) PreTokenizer() string {
	if t.splitApprox {
		return t.split.name + " (approximate)"
	}
	return t.split.name
}

// Encode returns the token ids of text. Special tokens are not recognised: "<|endoftext|>" in text is encoded as
// ordinary bytes, so user text can never inject one (use EncodeWithSpecial for that).
func (t *Tokenizer) Encode(text string) []int32 {
	return t.AppendEncode(make([]int32, 0, len(text)/3+1), text)
}

// EncodeBytes is Encode for a byte slice, which may hold any bytes.
func (t *Tokenizer) EncodeBytes(b []byte) []int32 {
	return t.Encode(string(b))
}

// AppendEncode appends the token ids of text to dst and returns the extended slice, so a caller encoding many
// documents can reuse one buffer. Like Encode, it does not recognise special tokens.
func (t *Tokenizer) AppendEncode(dst []int32, text string) []int32 {
	if text == "" {
		return dst
	}
	cache := t.caches.Get().(*wordCache)
	sp := t.split
	for i := 0; i < len(text); {
		j := sp.next(text, i)
		dst = t.appendWord(dst, text[i:j], cache)
		i = j
	}
	t.caches.Put(cache)
	return dst
}

// Decode returns the bytes of the tokens with the given ids; Decode(Encode(s)) == s for every s. An id outside [0, VocabSize())
// decodes as U+FFFD, so that a model whose output layer is padded past the vocabulary cannot crash a decoder.
func (t *Tokenizer) Decode(ids []int32) []byte {
	return t.AppendDecode(nil, ids)
}

// AppendDecode appends the bytes of the tokens with the given ids to dst, as Decode does, and returns the extended slice.
func (t *Tokenizer) AppendDecode(dst []byte, ids []int32) []byte {
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.vocab) {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			continue
		}
		dst = append(dst, t.vocab[id]...)
	}
	return dst
}

// appendWord appends the ids of one pre-token, from the cache when possible.
func (t *Tokenizer) appendWord(dst []int32, w string, cache *wordCache) []int32 {
	if len(w) == 1 {
		return append(dst, t.byteID[w[0]])
	}
	if len(w) > maxCachedWord {
		for len(w) > MaxPreToken {
			cut := MaxPreToken
			for cut > MaxPreToken-utf8.UTFMax && !utf8.RuneStart(w[cut]) {
				cut--
			}
			dst = t.bpe(dst, w[:cut])
			w = w[cut:]
		}
		return t.bpe(dst, w)
	}
	var k0, k1 uint64
	if len(w) <= maxShortWord {
		k0, k1 = shortKey(w)
		if out, ok := cache.appendShort(dst, k0, k1); ok {
			return out
		}
	}
	if ids, ok := cache.long[w]; ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = t.bpe(dst, w)
	if cache.size() >= maxCacheWords {
		cache.reset()
	}
	if k1 == 0 || !cache.putShort(k0, k1, dst[start:]) {
		cache.long[strings.Clone(w)] = slices.Clone(dst[start:])
	}
	return dst
}

// lookup returns the rank of merging a and b, or noRank.
func (t *Tokenizer) lookup(a, b int32) int32 {
	if r, ok := t.rank[pairKey(a, b)]; ok {
		return r
	}
	return noRank
}

// bpe appends the ids of pre-token w, computed by applying merges lowest rank first, leftmost first.
func (t *Tokenizer) bpe(dst []int32, w string) []int32 {
	if t.ignoreMerges {
		if id, ok := t.ids[w]; ok {
			return append(dst, id)
		}
	}
	if len(w) > maxSmallWord {
		return t.bpeLong(dst, w)
	}
	var symBuf [maxSmallWord]int32
	var rankBuf [maxSmallWord]int32
	syms := symBuf[:len(w)]
	for i := range len(w) {
		syms[i] = t.byteID[w[i]]
	}
	ranks := rankBuf[:len(w)-1] // ranks[i]: rank of merging syms[i] and syms[i+1]
	for i := range ranks {
		ranks[i] = t.lookup(syms[i], syms[i+1])
	}
	for {
		best, bi := noRank, -1
		for i, r := range ranks {
			if r != noRank && (best == noRank || r < best) {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		syms[bi] = t.mergeTo[best]
		syms = append(syms[:bi+1], syms[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi > 0 {
			ranks[bi-1] = t.lookup(syms[bi-1], syms[bi])
		}
		if bi < len(ranks) {
			ranks[bi] = t.lookup(syms[bi], syms[bi+1])
		}
	}
	return append(dst, syms...)
}

// bpeLong is bpe for long pre-tokens (such as a run of thousands of spaces or of random bytes): a linked list
// of symbols and a min-heap of (rank, position) candidates make it O(n log n) instead of quadratic. It gives the
// same result as the linear scan: lowest rank first, leftmost first.
func (t *Tokenizer) bpeLong(dst []int32, w string) []int32 {
	n := len(w)
	syms := make([]int32, n) // -1: merged into the symbol on its left
	next := make([]int, n)   // n: no next symbol
	prev := make([]int, n)   // -1: no previous symbol
	for i := range n {
		syms[i], next[i], prev[i] = t.byteID[w[i]], i+1, i-1
	}
	var h minHeap
	push := func(i int) {
		if j := next[i]; j < n {
			if r := t.lookup(syms[i], syms[j]); r != noRank {
				h.push(uint64(r)<<32 | uint64(i))
			}
		}
	}
	for i := 0; i < n-1; i++ {
		push(i)
	}
	for len(h) > 0 {
		k := h.pop()
		r, i := int32(k>>32), int(uint32(k))
		if syms[i] < 0 || next[i] >= n {
			continue
		}
		j := next[i]
		if t.lookup(syms[i], syms[j]) != r {
			continue // stale: a neighbour has changed since this candidate was pushed
		}
		syms[i], syms[j] = t.mergeTo[r], -1
		next[i] = next[j]
		if next[i] < n {
			prev[next[i]] = i
		}
		if p := prev[i]; p >= 0 {
			push(p)
		}
		push(i)
	}
	for i := 0; i < n; i = next[i] {
		dst = append(dst, syms[i])
	}
	return dst
}

// minHeap is a binary min-heap of uint64 keys.
type minHeap []uint64

func (h *minHeap) push(k uint64) {
	*h = append(*h, k)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() uint64 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(s) && s[l] < s[m] {
			m = l
		}
		if l+1 < len(s) && s[l+1] < s[m] {
			m = l + 1
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
