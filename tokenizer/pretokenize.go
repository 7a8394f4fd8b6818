package tokenizer

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Pre-tokenisation cuts text into pre-tokens ("words") before BPE runs on each one, so that merges never cross
// a word boundary and each word's encoding can be cached. Each splitter below is a hand-written, allocation-free
// implementation of one regular expression, with the same leftmost-alternative semantics as the regex engines
// Hugging Face tokenizers use; the regex is what tokenizer.json records. Character classes follow Go's unicode
// tables: \p{L} = unicode.IsLetter, \p{N} = unicode.IsNumber, \s = unicode.IsSpace, \p{Han} etc. = scripts.
// A byte that is not valid UTF-8 counts as one "other" character (neither letter, number nor space), so every
// input, valid or not, is cut into pre-tokens whose concatenation is the input.

// CJKMaxRun is the longest run of CJK characters (Han, Hiragana, Katakana) that smallinit's pre-tokenizer keeps
// in one pre-token; longer runs are cut every CJKMaxRun characters from the start of the run. Chinese and
// Japanese are written without spaces, so without a cap a whole clause or paragraph would be one pre-token: BPE
// would then spend merges on long, rare strings and the encoder cache would be useless. A short cap still lets
// merges learn common two-character words.
const CJKMaxRun = 2

// Pre-tokenizer regexes as they appear in tokenizer.json files.
const (
	// gpt2Regex is GPT-2's pattern (the default of Hugging Face's ByteLevel pre-tokenizer with use_regex).
	gpt2Regex = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// llama3Regex is Llama 3's pattern (also used by tiktoken's cl100k_base).
	llama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// smallinitRegex returns smallinit's pattern for a CJK run cap of n: Llama 3's, except that CJK characters are
// taken out of the letter alternative and get their own, ` ?[CJK]{1,n}`.
func smallinitRegex(n int) string {
	return `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:(?![\p{Han}\p{Hiragana}\p{Katakana}])\p{L})+` +
		`| ?[\p{Han}\p{Hiragana}\p{Katakana}]{1,` + strconv.Itoa(n) + `}` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
}

// splitter is one pre-tokenizer. llama selects Llama 3's rules over GPT-2's: case-insensitive contractions, any
// one non-letter, non-number, non-newline character may lead a letter run (GPT-2: only a space), numbers in
// groups of at most 3 digits with no leading space (GPT-2: ` ?\p{N}+`), line breaks after punctuation stay with
// it, and whitespace ending in line breaks is its own pre-token. cjk > 0 adds smallinit's CJK rule.
type splitter struct {
	name  string // "gpt2", "llama3" or "smallinit"
	regex string // the regex this splitter implements
	llama bool
	cjk   int // maximum CJK run; 0: CJK characters are ordinary letters
}

var (
	gpt2Splitter      = &splitter{name: "gpt2", regex: gpt2Regex}
	llama3Splitter    = &splitter{name: "llama3", regex: llama3Regex, llama: true}
	smallinitSplitter = &splitter{name: "smallinit", regex: smallinitRegex(CJKMaxRun), llama: true, cjk: CJKMaxRun}
)

// Character classes of the regexes: \p{L}, \p{N}, \s, and everything else.
const (
	clsOther uint8 = iota
	clsLetter
	clsNumber
	clsSpace
)

// bmpClass holds, for every character of the Basic Multilingual Plane, its class in the low two bits and
// cjkBit if it is CJK. It is built from the unicode range tables (64 KiB, well under a millisecond) so that
// classAt needs no table search for Chinese text and its punctuation.
var bmpClass [1 << 16]uint8

const cjkBit = 4

func init() {
	mark := func(t *unicode.RangeTable, v uint8, or bool) {
		for _, r := range t.R16 {
			for c := int(r.Lo); c <= int(r.Hi); c += int(r.Stride) {
				if or {
					bmpClass[c] |= v
				} else {
					bmpClass[c] = v
				}
			}
		}
	}
	mark(unicode.White_Space, clsSpace, false)
	mark(unicode.N, clsNumber, false)
	mark(unicode.L, clsLetter, false)
	for _, t := range []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana} {
		mark(t, cjkBit, true)
	}
}

// classAt decodes the character at s[i] and returns its size in bytes, its class, and whether it is CJK (Han,
// Hiragana or Katakana script). An invalid byte is a one-byte character of class other.
func classAt(s string, i int) (size int, cls uint8, cjk bool) {
	c := s[i]
	if c < utf8.RuneSelf {
		v := bmpClass[c]
		return 1, v, false
	}
	var r rune
	switch {
	case c >= 0xE0 && c < 0xF0 && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80:
		// Three bytes (Chinese, CJK punctuation): decoded inline, refusing overlong forms and surrogates.
		r, size = rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F), 3
		if r < 0x800 || (r >= 0xD800 && r <= 0xDFFF) {
			return 1, clsOther, false
		}
	case c >= 0xC2 && c < 0xE0 && i+1 < len(s) && s[i+1]&0xC0 == 0x80:
		r, size = rune(c&0x1F)<<6|rune(s[i+1]&0x3F), 2
	default:
		r, size = utf8.DecodeRuneInString(s[i:])
	}
	if r <= 0xFFFF {
		if r == utf8.RuneError && size == 1 {
			return 1, clsOther, false
		}
		v := bmpClass[r]
		return size, v & 3, v&cjkBit != 0
	}
	switch {
	case unicode.IsLetter(r):
		cls = clsLetter
	case unicode.IsNumber(r):
		cls = clsNumber
	case unicode.IsSpace(r):
		cls = clsSpace
	}
	cjk = unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
	return size, cls, cjk
}

// next returns the end of the pre-token that starts at s[i], i < len(s). It tries the regex's alternatives in
// order, as a backtracking regex engine does, and returns the first that matches.
func (sp *splitter) next(s string, i int) int {
	c := s[i]
	// 's|'t|'re|'ve|'m|'ll|'d, case-insensitive for Llama 3.
	if c == '\'' && i+1 < len(s) {
		if n := contraction(s[i+1:], sp.llama); n > 0 {
			return i + 1 + n
		}
	}
	size, cls, cjk := classAt(s, i)
	isLetter := cls == clsLetter && !(sp.cjk > 0 && cjk) // a letter of the letter alternative
	// Letter run with an optional leading character: [^\r\n\p{L}\p{N}]?\p{L}+ (Llama 3) or ` ?\p{L}+` (GPT-2).
	if !isLetter && i+size < len(s) && ((sp.llama && cls != clsLetter && cls != clsNumber && c != '\r' && c != '\n') || c == ' ') {
		if _, cls2, cjk2 := classAt(s, i+size); cls2 == clsLetter && !(sp.cjk > 0 && cjk2) {
			return sp.letters(s, i+size)
		}
	}
	if isLetter {
		return sp.letters(s, i)
	}
	// smallinit: ` ?[CJK]{1,n}`.
	if sp.cjk > 0 {
		if cjk {
			return sp.cjkRun(s, i)
		}
		if c == ' ' && i+1 < len(s) {
			if _, _, cjk2 := classAt(s, i+1); cjk2 {
				return sp.cjkRun(s, i+1)
			}
		}
	}
	// Numbers: \p{N}{1,3} (Llama 3) or ` ?\p{N}+` (GPT-2).
	if sp.llama {
		if cls == clsNumber {
			j := i + size
			for k := 1; k < 3 && j < len(s); k++ {
				n, cls2, _ := classAt(s, j)
				if cls2 != clsNumber {
					break
				}
				j += n
			}
			return j
		}
	} else {
		j := i
		if c == ' ' && i+1 < len(s) {
			j = i + 1
		}
		if n, cls2, _ := classAt(s, j); cls2 == clsNumber {
			return sp.run(s, j+n, clsNumber)
		}
	}
	// Punctuation and symbols: ` ?[^\s\p{L}\p{N}]+`, then [\r\n]* for Llama 3.
	j := i
	if c == ' ' && i+1 < len(s) {
		j = i + 1
	}
	if n, cls2, _ := classAt(s, j); cls2 == clsOther {
		j = sp.run(s, j+n, clsOther)
		if sp.llama {
			for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
		}
		return j
	}
	// Whitespace: \s*[\r\n]+ (Llama 3), then \s+(?!\S), then \s+.
	j = i + size
	last, lastNL, count := i, -1, 1
	if c == '\r' || c == '\n' {
		lastNL = i
	}
	for j < len(s) {
		n, cls2, _ := classAt(s, j)
		if cls2 != clsSpace {
			break
		}
		if s[j] == '\r' || s[j] == '\n' {
			lastNL = j
		}
		last = j
		count++
		j += n
	}
	if sp.llama && lastNL >= 0 {
		return lastNL + 1
	}
	if j < len(s) && count >= 2 {
		return last // leave the last space to lead the next pre-token
	}
	return j
}

// contraction returns the length of the contraction suffix ('s, 't, 're, 've, 'm, 'll, 'd) at the start of s,
// which follows an apostrophe, or 0.
func contraction(s string, fold bool) int {
	lower := func(c byte) byte {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch lower(s[0]) {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if len(s) > 1 && lower(s[1]) == 'e' {
			return 2
		}
	case 'l':
		if len(s) > 1 && lower(s[1]) == 'l' {
			return 2
		}
	}
	return 0
}

// letters returns the end of the letter run starting at j (letters of the letter alternative only).
func (sp *splitter) letters(s string, j int) int {
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if bmpClass[c] != clsLetter {
				break
			}
			j++
			continue
		}
		n, cls, cjk := classAt(s, j)
		if cls != clsLetter || (sp.cjk > 0 && cjk) {
			break
		}
		j += n
	}
	return j
}

// run returns the end of the run of class cls starting at j.
func (sp *splitter) run(s string, j int, cls uint8) int {
	for j < len(s) {
		n, c, _ := classAt(s, j)
		if c != cls {
			break
		}
		j += n
	}
	return j
}

// cjkRun returns the end of the run of at most sp.cjk CJK characters starting at j (s[j] is CJK).
func (sp *splitter) cjkRun(s string, j int) int {
	for k := 0; k < sp.cjk && j < len(s); k++ {
		n, _, cjk := classAt(s, j)
		if !cjk {
			break
		}
		j += n
	}
	return j
}

// split returns the pre-tokens of s; their concatenation is s. It is meant for tests and tools: the encoder and
// the trainer call next directly.
func (sp *splitter) split(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := sp.next(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}
