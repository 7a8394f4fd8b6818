package eval

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/corpus/ood"
)

// TestScoreOODScoresEveryText checks that every out-of-distribution text is scored, in ood.Texts' order,
// with ScoreText's numbers for that text, and that bits per byte follow the loss.
func TestScoreOODScoresEveryText(t *testing.T) {
	tok := testTokenizer(t)
	l := NewLM(testModel(t, tok.VocabSize(), 32, 4, 9), tok, nil)
	const windows = 3 // a few windows per text keep the test short; 0 scores each text whole
	got, err := ScoreOOD(context.Background(), l, windows)
	if err != nil {
		t.Fatal(err)
	}
	texts := ood.Texts()
	if len(got) != len(texts) {
		t.Fatalf("%d scores for %d texts", len(got), len(texts))
	}
	for i, s := range got {
		if s.Name != texts[i].Name || s.Lang != texts[i].Lang || s.Windows != windows {
			t.Errorf("score %d: %+v, want text %+v over %d windows", i, s, texts[i], windows)
		}
		text, err := ood.Read(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := l.ScoreText(context.Background(), strings.NewReader(text), windows, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.LossMean != want.LossMean || s.Tokens != want.Tokens {
			t.Errorf("%s: %+v, ScoreText gives %+v", s.Name, s.TextScore, want)
		}
		if bpb := s.LossMean * float64(s.Tokens) / float64(s.Bytes) / math.Ln2; math.Abs(s.BitsPerByte()-bpb) > 1e-12 {
			t.Errorf("%s: bits per byte %v, want %v", s.Name, s.BitsPerByte(), bpb)
		}
	}
	b, err := json.Marshal(got[0])
	if err != nil || !strings.Contains(string(b), `"bits_per_byte":`) || !strings.Contains(string(b), `"loss":`) {
		t.Errorf("JSON %s, %v", b, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ScoreOOD(ctx, l, windows); err == nil {
		t.Error("a cancelled context scored")
	}
}

// TestOODScoreJSONRoundTrip: a score written and read back keeps every figure (reproduce caches them).
func TestOODScoreJSONRoundTrip(t *testing.T) {
	in := OODScore{Name: "en_x", Lang: "en", Genre: "g", TextScore: TextScore{Tokens: 10, Bytes: 25, LossMean: 3.5, LossStdErr: 0.25}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out OODScore
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Name != in.Name || out.Lang != in.Lang || out.Genre != in.Genre || out.Tokens != in.Tokens || out.Bytes != in.Bytes ||
		out.LossMean != in.LossMean || out.LossStdErr != in.LossStdErr || out.BitsPerByte() != in.BitsPerByte() {
		t.Errorf("round trip: %+v, want %+v", out, in)
	}
}
