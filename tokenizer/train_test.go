package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// TestTrainMergesHandChecked checks learned merges against ones worked out by hand, including the tie-break
// (higher count, then smaller left id, then smaller right id) and the rule that merges never join pieces of two
// different characters.
func TestTrainMergesHandChecked(t *testing.T) {
	const zhong = "中" // E4 B8 AD
	cases := []struct {
		name  string
		texts []string
		vocab int
		want  [][2]int32
	}{
		{
			// Wikipedia's example: aa (count 4); then ab and (aa)a tie at 2, ab has the smaller left id;
			// then (aa)(ab) at 2; then all pairs tie at 1 and (a, c) has the smallest ids.
			name: "aaabdaaabac", texts: []string{"aaabdaaabac"}, vocab: 261,
			want: [][2]int32{{'a', 'a'}, {'a', 'b'}, {256, 257}, {'a', 'c'}},
		},
		{
			// Counts add up over words and texts: " ab" occurs 3 times, "ab" once; a space leads the next word.
			name: "words", texts: []string{"ab ab", " ab ab"}, vocab: 259,
			want: [][2]int32{{'a', 'b'}, {' ', 256}},
		},
		{
			// <|endoftext|> is cut out of training text: no merge of its characters.
			name: "eot", texts: []string{"xy" + EndOfText + "xy"}, vocab: 260,
			want: [][2]int32{{'x', 'y'}},
		},
		{
			// "中中" twice (CJK runs of 2): B8+AD and E4+B8 tie at 4, B8 is smaller; then E4+(B8AD) = 中; then 中中.
			// AD+E4 (end of one character, start of the next) is never a candidate.
			name: "cjk", texts: []string{strings.Repeat(zhong, 4)}, vocab: 261,
			want: [][2]int32{{0xB8, 0xAD}, {0xE4, 256}, {257, 257}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := Train(c.texts, c.vocab)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tok.merges, c.want) {
				t.Errorf("merges %v, want %v", tok.merges, c.want)
			}
			if tok.EOT() != int32(tok.VocabSize()-1) || string(tok.TokenBytes(tok.EOT())) != EndOfText {
				t.Errorf("EOT %d of %d, %q", tok.EOT(), tok.VocabSize(), tok.TokenBytes(tok.EOT()))
			}
			for _, text := range c.texts {
				if got := string(tok.Decode(tok.Encode(text))); got != text {
					t.Errorf("round trip %q -> %q", text, got)
				}
			}
		})
	}
}

// TestTrainEncodesTrainingWordsAsLearned checks that encoding applies merges as training did: each training word
// ends as the same tokens, and with enough merges a repeated word is one token.
func TestTrainEncodesTrainingWordsAsLearned(t *testing.T) {
	tok, err := Train([]string{"the cat sat on the mat; the cat"}, 300)
	if err != nil {
		t.Fatal(err)
	}
	if ids := tok.Encode(" cat"); len(ids) != 1 || string(tok.TokenBytes(ids[0])) != " cat" {
		t.Errorf("Encode(\" cat\") = %v", ids)
	}
	if tok.VocabSize() >= 300 {
		t.Errorf("a 31-byte text cannot fill 300 ids, got %d", tok.VocabSize())
	}
}

// TestTrainDeterministic checks that training twice on the same text gives the same merges, byte for byte.
func TestTrainDeterministic(t *testing.T) {
	text := sampleText(200_000)
	a, err := Train([]string{text}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train([]string{text}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.merges, b.merges) || !slices.Equal(a.vocab, b.vocab) {
		t.Error("two trainings on the same text differ")
	}
	if a.VocabSize() != 1000 {
		t.Errorf("VocabSize %d, want 1000", a.VocabSize())
	}
}

// TestTrainRejectsSmallVocab checks that a vocabulary too small for the byte tokens and <|endoftext|> is refused.
func TestTrainRejectsSmallVocab(t *testing.T) {
	if _, err := Train([]string{"abc"}, 256); err == nil {
		t.Error("Train(256) succeeded")
	}
	tok, err := Train(nil, 257)
	if err != nil || tok.VocabSize() != 257 || tok.EOT() != 256 {
		t.Fatalf("Train(nil, 257): %v, %v", tok, err)
	}
}
