package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// EncodeWithSpecial is Encode, except that the added tokens of the tokenizer (such as <|endoftext|>) found in
// text are encoded as their ids, the way Hugging Face tokenizers encode text (AddedVocabulary in
// tokenizers/src/tokenizer/added_vocabulary.rs, whose behaviour this follows; lm-evaluation-harness encodes
// every context and continuation this way):
//
//   - Added tokens are found before pre-tokenisation, in two passes: first the tokens with "normalized": false
//     over the whole text, then the tokens with "normalized": true inside the text between those matches
//     (Load accepts only no normaliser or NFC, which is not applied, so both passes match the raw text).
//   - Within a pass, matching is leftmost-longest and non-overlapping, as an Aho-Corasick automaton with
//     MatchKind::LeftmostLongest finds it: the match that starts first wins, the longest one among those
//     starting at the same byte, and the search resumes after it.
//   - A "single_word" token only matches when it is neither preceded nor followed by a word character (a
//     letter, mark, decimal digit or connector punctuation: the regex class \w); a match that fails this is
//     dropped and the search resumes after it, as Hugging Face's does.
//   - "lstrip" makes the token absorb the whitespace before it (but not text a previous match already took),
//     "rstrip" the whitespace after it; absorbed whitespace is not encoded.
//   - The text between matches is encoded with Encode, each piece on its own, so no pre-token spans a special
//     token.
//
// Without added tokens EncodeWithSpecial is Encode. Decode(EncodeWithSpecial(s)) is s, except for whitespace
// absorbed by lstrip or rstrip.
func (t *Tokenizer) EncodeWithSpecial(text string) []int32 {
	dst := make([]int32, 0, len(text)/3+1)
	if len(t.added) == 0 {
		return t.AppendEncode(dst, text)
	}
	t.findAdded(text, false, func(piece string, id int32) {
		if id >= 0 {
			dst = append(dst, id)
			return
		}
		t.findAdded(piece, true, func(piece string, id int32) {
			if id >= 0 {
				dst = append(dst, id)
			} else {
				dst = t.AppendEncode(dst, piece)
			}
		})
	})
	return dst
}

// findAdded cuts s at the matches of the added tokens whose Normalized flag is normalized and calls emit, in
// order, with each piece of text between matches (id −1, never empty) and each match (the token's id; the
// piece includes whitespace absorbed by lstrip and rstrip).
func (t *Tokenizer) findAdded(s string, normalized bool, emit func(piece string, id int32)) {
	done := 0 // s[:done] has been emitted
	for i := 0; i < len(s); {
		a := t.addedAt(s, i, normalized)
		if a == nil {
			i++
			continue
		}
		start, stop := i, i+len(a.Content)
		if a.SingleWord && (endsWithWord(s[:start]) || startsWithWord(s[stop:])) {
			i = stop // dropped; the search resumes after the match
			continue
		}
		if a.LStrip {
			start = max(done, len(trimRightSpace(s[:start])))
		}
		if a.RStrip {
			stop = len(s) - len(trimLeftSpace(s[stop:]))
		}
		if done < start {
			emit(s[done:start], -1)
		}
		emit(s[start:stop], a.ID)
		done, i = stop, stop
	}
	if done < len(s) {
		emit(s[done:], -1)
	}
}

// addedAt returns the longest added token with the given Normalized flag whose content starts s[i:], or nil.
func (t *Tokenizer) addedAt(s string, i int, normalized bool) *addedToken {
	for _, k := range t.addedFirst[s[i]] { // longest content first
		a := &t.added[k]
		if a.Normalized == normalized && len(s)-i >= len(a.Content) && s[i:i+len(a.Content)] == a.Content {
			return a
		}
	}
	return nil
}

// isWordRune is the regex class \w of Hugging Face's single_word check (Rust's regex, Unicode-aware).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r)
}

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordRune(r)
}

func trimRightSpace(s string) string {
	for len(s) > 0 {
		r, n := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func trimLeftSpace(s string) string {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[n:]
	}
	return s
}
