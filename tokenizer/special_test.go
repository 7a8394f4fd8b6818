package tokenizer

import (
	"slices"
	"testing"
)

// withFlaggedTokens adds two added-only tokens to the mini GPT-2 file: "<mask>" (id 267, lstrip, as RoBERTa's
// <mask>) and "cat" (id 268, single_word, rstrip), both "normalized": false.
func withFlaggedTokens(doc map[string]any) {
	doc["added_tokens"] = append(doc["added_tokens"].([]any),
		map[string]any{"id": 267, "content": "<mask>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
		map[string]any{"id": 268, "content": "cat", "single_word": true, "lstrip": false, "rstrip": true, "normalized": false, "special": false})
}

// TestEncodeWithSpecialMatchesHuggingFace checks EncodeWithSpecial against the ids Hugging Face tokenizers give
// the same text with the same tokenizer.json. The tokenizers library is not installed here, so the expected ids
// were derived by hand from its rules for added tokens (AddedVocabulary::find_matches in
// tokenizers/src/tokenizer/added_vocabulary.rs: split the text at the added tokens, leftmost-longest; single_word,
// lstrip and rstrip as documented on EncodeWithSpecial; then pre-tokenise and BPE each piece on its own) and
// the mini file's GPT-2 ids (testdata/gen_gpt2_mini.py: bytes in GPT-2's order, so t=83 h=71 e=68 c=66 a=64
// space=220 '<'=27 '|'=91 '>'=29; merges he=258 at=265 Ġthe=262; <|endoftext|>=266). Encode, the literal
// choice, spells <|endoftext|> out in 13 tokens (<| e n d o f t e x t |>), with no special id.
func TestEncodeWithSpecialMatchesHuggingFace(t *testing.T) {
	tok := loadMini(t, withFlaggedTokens)
	lit := []int32{27, 91, 68, 77, 67, 78, 69, 83, 68, 87, 83, 91, 29} // "<|endoftext|>" as bytes: <| e n d o f t e x t |>
	cases := []struct {
		text string
		want []int32
	}{
		// "the cat" and " the" pre-tokenised apart: the|Ġ|c|at, 266, Ġthe; "cat" is single_word: it matches
		// after a space and before "<".
		{"the cat" + EndOfText + " the", []int32{83, 258, 220, 268, 266, 262}},
		// Not a single word inside "thecat": BPE t|he|c|at.
		{"thecat", []int32{83, 258, 66, 265}},
		// lstrip: <mask> absorbs the space before it; " the" after it keeps its space.
		{"the <mask> the", []int32{83, 258, 267, 262}},
		// rstrip: "cat" absorbs the spaces after it.
		{"cat   the", []int32{268, 83, 258}},
		// Leftmost-longest: "<<|endoftext|>" is "<" then the token.
		{"<" + EndOfText + EndOfText, []int32{27, 266, 266}},
		// An unfinished token is text.
		{"<|endoftext", lit[:len(lit)-2]},
	}
	for _, c := range cases {
		if got := tok.EncodeWithSpecial(c.text); !slices.Equal(got, c.want) {
			t.Errorf("EncodeWithSpecial(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	// The literal choice: Encode never produces an added token's id.
	got := tok.Encode("the" + EndOfText)
	if want := slices.Concat([]int32{83, 258}, lit); !slices.Equal(got, want) {
		t.Errorf("Encode(the<|endoftext|>) = %v, want %v", got, want)
	}
}
