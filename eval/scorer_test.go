package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smallinit/smallinit/tokenizer"
)

func randomTokens(r *rand.Rand, n, vocab int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(vocab))
	}
	return out
}

// manualScore scores one request with its own ForwardSeq over exactly its (truncated) tokens.
func manualScore(t *testing.T, l *LM, r TokenRequest) (float64, bool) {
	t.Helper()
	T := l.m.Config.SeqLen
	seq := append(slices.Clone(r.Context), r.Continuation...)
	nc := min(len(r.Continuation), T)
	if len(seq) > T+1 {
		seq = seq[len(seq)-(T+1):]
	}
	n := len(seq) - 1
	if _, err := l.m.ForwardSeq(seq[:n], seq[1:], n); err != nil {
		t.Fatal(err)
	}
	V := l.m.Config.Vocab
	var lp float64
	greedy := true
	for p := n - nc; p < n; p++ {
		lp -= float64(l.m.TokenLoss()[p])
		greedy = greedy && argmax(l.m.Logits()[p*V:(p+1)*V]) == seq[p+1]
	}
	return lp, greedy
}

// TestEvalScorePackingInvariant: scoring many requests packed into shared forwards (right-padded rows of
// different lengths, truncated contexts, long continuations) gives each request the log-likelihood of its own
// unpadded forward.
func TestEvalScorePackingInvariant(t *testing.T) {
	const V, T = 97, 24
	m := testModel(t, V, T, 3, 1)
	l := NewLM(m, byteTokenizer{}, nil)
	r := rand.New(rand.NewPCG(2, 2))
	var reqs []TokenRequest
	for _, lens := range [][2]int{{1, 1}, {5, 3}, {20, 4}, {30, 2}, {3, 30}, {12, 12}, {2, 1}, {23, 1}, {7, 0}, {1, 24}} {
		reqs = append(reqs, TokenRequest{Context: randomTokens(r, lens[0], V), Continuation: randomTokens(r, lens[1], V)})
	}
	got, err := l.ScoreTokens(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if l.ForwardTokens >= int64(len(reqs)*T) {
		t.Errorf("%d forward tokens for %d requests: packing should beat one full row each", l.ForwardTokens, len(reqs))
	}
	for i, req := range reqs {
		if req.Continuation == nil || len(req.Continuation) == 0 {
			if got[i].Tokens != 0 || got[i].LogProb != 0 {
				t.Errorf("request %d: empty continuation scored %+v", i, got[i])
			}
			continue
		}
		want, greedy := manualScore(t, l, req)
		if math.Abs(got[i].LogProb-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Errorf("request %d (%d+%d tokens): packed log-likelihood %.6f, alone %.6f", i, len(req.Context), len(req.Continuation), got[i].LogProb, want)
		}
		if got[i].Tokens != min(len(req.Continuation), T) {
			t.Errorf("request %d: %d tokens scored", i, got[i].Tokens)
		}
		if trunc := len(req.Context)+len(req.Continuation) > T+1; got[i].Truncated != trunc {
			t.Errorf("request %d: truncated %v, want %v", i, got[i].Truncated, trunc)
		}
		if got[i].Greedy != greedy {
			t.Logf("request %d: greedy %v alone, %v packed (a near tie?)", i, greedy, got[i].Greedy)
		}
	}
	// One at a time gives the same numbers.
	for i, req := range reqs[:4] {
		one, err := l.ScoreTokens([]TokenRequest{req})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(one[0].LogProb-got[i].LogProb) > 1e-4*math.Max(1, math.Abs(got[i].LogProb)) {
			t.Errorf("request %d alone %.6f, packed %.6f", i, one[0].LogProb, got[i].LogProb)
		}
	}
	if _, err := l.ScoreTokens([]TokenRequest{{Context: nil, Continuation: []int32{1}}}); err == nil {
		t.Error("empty context: no error")
	}
	if _, err := l.ScoreTokens([]TokenRequest{{Context: []int32{V}, Continuation: []int32{1}}}); err == nil {
		t.Error("token outside the vocabulary: no error")
	}
}

// TestEvalScoreStrings: Score moves the context's trailing space to the continuation, encodes the two apart
// and stands the end-of-text token in for an empty context.
func TestEvalScoreStrings(t *testing.T) {
	tok := testTokenizer(t)
	m := testModel(t, tok.VocabSize(), 32, 2, 3)
	l := NewLM(m, tok, nil)
	got, err := l.Score([]Request{{"Answer: ", "42 apples"}, {"", "The quick"}})
	if err != nil {
		t.Fatal(err)
	}
	w0, _ := manualScore(t, l, TokenRequest{tok.Encode("Answer:"), tok.Encode(" 42 apples")})
	w1, _ := manualScore(t, l, TokenRequest{[]int32{tok.EOT()}, tok.Encode("The quick")})
	if math.Abs(got[0].LogProb-w0) > 1e-4 || math.Abs(got[1].LogProb-w1) > 1e-4 {
		t.Errorf("scores %+v, want %.5f and %.5f", got, w0, w1)
	}
	if got[0].Tokens != len(tok.Encode(" 42 apples")) {
		t.Errorf("%d continuation tokens", got[0].Tokens)
	}
}

// TestEvalCutPointKeepsTokenization: encoding the text on either side of every cut point gives the tokens of
// the whole text, so ScoreText can encode a large file in chunks: with smallinit's pre-tokenizer and with
// GPT-2's, whose `\s+(?!\S)` makes a chunk ending in "\n\n" one pre-token where the whole text has "\n", "\n"
// (a "Ċ Ċ" merge, as GPT-2 has, turns that into a different token).
func TestEvalCutPointKeepsTokenization(t *testing.T) {
	var cfg map[string]any
	b, err := os.ReadFile("../tokenizer/testdata/gpt2_mini.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	bpe := cfg["model"].(map[string]any)
	bpe["merges"] = append(bpe["merges"].([]any), "Ċ Ċ")
	bpe["vocab"].(map[string]any)["ĊĊ"] = 267
	gpt2Path := filepath.Join(t.TempDir(), "tokenizer.json")
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gpt2Path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	gpt2, err := tokenizer.Load(gpt2Path)
	if err != nil {
		t.Fatal(err)
	}
	text := "The quick brown fox.\n\n  Indented line\nQuestion: 42 apples?\n\"Quoted\" she said.\n\n\n123 numbers\n芳芳买了\n(paren)\nend.\n\nThe end\u3000\nX\t\nY.\nmore\nlines\nhere"
	for _, tc := range []struct {
		name string
		tok  Tokenizer
	}{{"smallinit", testTokenizer(t)}, {"gpt2", gpt2}} {
		t.Run(tc.name, func(t *testing.T) {
			whole := tc.tok.Encode(text)
			cuts := 0
			for i := 1; i < len(text); i++ {
				if cutPoint([]byte(text[:i+1])) != i {
					continue
				}
				cuts++
				got := append(tc.tok.Encode(text[:i]), tc.tok.Encode(text[i:])...)
				if !slices.Equal(got, whole) {
					t.Errorf("cut at byte %d (%q|%q) changes the tokens", i, text[max(0, i-5):i], text[i:min(len(text), i+5)])
				}
			}
			if cuts < 5 {
				t.Errorf("only %d cut points", cuts)
			}
		})
	}
}

// TestEvalScoreTextWindows: ScoreText's loss is that of consecutive windows predicting every token after the
// end-of-text token, the last one on the T tokens before the text's end (lm-evaluation-harness's rolling
// windows), and a text larger than one read chunk is tokenised as a whole.
func TestEvalScoreTextWindows(t *testing.T) {
	tok := testTokenizer(t)
	const T = 16
	m := testModel(t, tok.VocabSize(), T, 3, 4)
	l := NewLM(m, tok, nil)
	text := strings.Join(testSentences, "\n")
	s, err := l.ScoreText(context.Background(), strings.NewReader(text), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	stream := append([]int32{tok.EOT()}, tok.Encode(text)...)
	var sum float64
	var n, windows int
	if len(stream)%T == 1 {
		t.Fatalf("the text's %d tokens fill whole windows; the test needs a last, shorter one", len(stream)-1)
	}
	for off := 0; off < len(stream)-1; off += T {
		end := min(off+T+1, len(stream)) // the window predicts stream[off+1:end]
		start := max(0, end-1-T)         // and runs on the T tokens before end, as the harness does
		w := stream[start:end]
		if _, err := m.ForwardSeq(w[:len(w)-1], w[1:], len(w)-1); err != nil {
			t.Fatal(err)
		}
		for _, v := range m.TokenLoss()[off-start:] {
			sum += float64(v)
			n++
		}
		windows++
	}
	if s.Tokens != int64(n) || s.Windows != windows || s.Bytes != int64(len(text)) {
		t.Errorf("tokens %d windows %d bytes %d, want %d %d %d", s.Tokens, s.Windows, s.Bytes, n, windows, len(text))
	}
	if math.Abs(s.LossMean-sum/float64(n)) > 1e-5 {
		t.Errorf("loss %.6f, want %.6f", s.LossMean, sum/float64(n))
	}
	if bpb := s.BitsPerByte(); math.Abs(bpb-sum/math.Ln2/float64(len(text))) > 1e-5 {
		t.Errorf("bits per byte %.6f", bpb)
	}
	// Larger than one chunk, with long lines and no early cut point.
	var b strings.Builder
	r := rand.New(rand.NewPCG(5, 5))
	for b.Len() < 3*textChunk {
		b.WriteString(testSentences[r.IntN(len(testSentences))])
		b.WriteString([]string{" ", "\n", "\n\n", "  "}[r.IntN(4)])
	}
	big := b.String()
	s, err = l.ScoreText(context.Background(), strings.NewReader(big), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(tok.Encode(big))); s.Tokens != want || s.Bytes != int64(len(big)) {
		t.Errorf("big text: %d tokens, %d bytes; want %d, %d", s.Tokens, s.Bytes, want, len(big))
	}
	lim, err := l.ScoreText(context.Background(), strings.NewReader(big), 5, nil)
	if err != nil || lim.Windows != 5 || lim.Tokens != 5*T || lim.Bytes >= s.Bytes {
		t.Errorf("5 windows: %+v, %v", lim, err)
	}
	if _, err := l.ScoreText(context.Background(), strings.NewReader(""), 0, nil); err == nil {
		t.Error("empty text: no error")
	}
}

// TestGenerateStepperMatchesPrefix: the model's KV-cache decoder agrees with PrefixStepper token for token
// at temperature 0, and CompareSteppers catches a stepper that does not.
func TestGenerateStepperMatchesPrefix(t *testing.T) {
	const V, T = 61, 32
	m := testModel(t, V, T, 1, 6)
	prompt := randomTokens(rand.New(rand.NewPCG(6, 6)), 7, V)
	ref := NewPrefixStepper(m)
	if err := CompareSteppers(ref, m.NewDecoder(), prompt, T-len(prompt), 1e-4); err != nil {
		t.Fatal(err)
	}
	if err := CompareSteppers(ref, &skewedStepper{Stepper: m.NewDecoder(), at: 5}, prompt, 10, 1e-4); err == nil {
		t.Error("CompareSteppers accepted a stepper whose logits diverge at step 5")
	}
	// Greedy generation through each stepper gives the same tokens, past the context length.
	tok := byteTokenizer{}
	o := GenerateOptions{MaxTokens: 2 * T, EOT: -1}
	a, err := Generate(ref, tok, prompt, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(m.NewDecoder(), tok, prompt, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Tokens, b.Tokens) || len(a.Tokens) != 2*T || a.Reason != "length" {
		t.Errorf("prefix stepper %v (%s), decoder %v", a.Tokens, a.Reason, b.Tokens)
	}
}

// skewedStepper perturbs the logits of its wrapped stepper from the at-th Append on.
type skewedStepper struct {
	Stepper
	at, n int
}

func (s *skewedStepper) Reset() { s.n = 0; s.Stepper.Reset() }
func (s *skewedStepper) Append(tokens []int32) ([]float32, error) {
	l, err := s.Stepper.Append(tokens)
	if s.n++; s.n > s.at && err == nil {
		l = slices.Clone(l)
		l[0] += 1
	}
	return l, err
}

// TestGenerateStreamsAndStops: text is written as soon as it is final, never a byte of a stop string nor half a
// UTF-8 character; generation ends at a stop string, the end-of-text token or the budget; a stepper that cannot
// slide is reset and re-fed when the context is full.
func TestGenerateStreamsAndStops(t *testing.T) {
	script := func(s string) []int32 { return byteTokenizer{}.Encode(s) }
	for _, tc := range []struct {
		name, script string
		stop         []string
		max          int
		want, reason string
	}{
		{"stop string", "héllo wörld STOP more", []string{"STOP", "\n\n"}, 100, "héllo wörld ", "stop"},
		{"stop string prefix that is not one", "a ST b\n\nc", []string{"STOP", "\n\n"}, 100, "a ST b", "stop"},
		{"end of text", "done", nil, 100, "done", "eot"},
		{"budget", "abcdefgh", nil, 5, "abcde", "length"},
		{"chinese", "问题：一", []string{"问题：二"}, 100, "问题：一", "eot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &scriptStepper{script: script(tc.script), max: 6}
			var chunks []string
			w := writerFunc(func(p []byte) { chunks = append(chunks, string(p)) })
			g, err := Generate(st, byteTokenizer{}, script("pr"), GenerateOptions{MaxTokens: tc.max, Stop: tc.stop, EOT: 256}, w)
			if err != nil {
				t.Fatal(err)
			}
			if g.Text != tc.want || g.Reason != tc.reason {
				t.Errorf("text %q (%s), want %q (%s)", g.Text, g.Reason, tc.want, tc.reason)
			}
			if joined := strings.Join(chunks, ""); joined != tc.want {
				t.Errorf("streamed %q, want %q", joined, tc.want)
			}
			for _, c := range chunks {
				if !utf8.ValidString(c) {
					t.Errorf("chunk %q splits a character", c)
				}
			}
			if len(chunks) < 2 && tc.stop == nil && len(tc.want) > 1 {
				t.Errorf("streamed in %d chunk(s): not as it came", len(chunks))
			}
			appended := 2 + len(g.Tokens) // the prompt and every token but a final one that ended generation
			if g.Reason != "eot" {
				appended--
			}
			if appended > st.max && st.resets < 2 {
				t.Errorf("%d tokens appended, %d resets: the full context was not re-fed", appended, st.resets)
			}
		})
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(bytes.Clone(p)); return len(p), nil }

// TestGenerateSampler: temperature 0 and top-k 1 are greedy; a seed reproduces a draw; top-k and top-p restrict
// the candidates; temperature 1 draws from the softmax.
func TestGenerateSampler(t *testing.T) {
	logits := []float32{0, 1, 2, 0.5, 1.5}
	for _, o := range []SampleOptions{{}, {Temperature: 1, TopK: 1}, {Temperature: 1, TopP: 0.01}} {
		s, err := NewSampler(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(logits); got != 2 {
			t.Errorf("%+v: token %d, want the argmax 2", o, got)
		}
	}
	draw := func(o SampleOptions, n int) []int32 {
		s, err := NewSampler(o)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int32, n)
		for i := range out {
			out[i] = s.Next(logits)
		}
		return out
	}
	o := SampleOptions{Temperature: 1, Seed: 9}
	if !slices.Equal(draw(o, 50), draw(o, 50)) {
		t.Error("the same seed drew different tokens")
	}
	for _, tk := range draw(SampleOptions{Temperature: 2, TopK: 2, Seed: 1}, 500) {
		if tk != 2 && tk != 4 {
			t.Fatalf("top-k 2 drew token %d", tk)
		}
	}
	// Top-p 0.6: p = softmax = (.058, .158, .430, .096, .261): the top two reach .69, so only 2 and 4.
	for _, tk := range draw(SampleOptions{Temperature: 1, TopP: 0.6, Seed: 2}, 500) {
		if tk != 2 && tk != 4 {
			t.Fatalf("top-p 0.6 drew token %d", tk)
		}
	}
	const n = 20000
	counts := make([]float64, len(logits))
	for _, tk := range draw(SampleOptions{Temperature: 1, Seed: 3}, n) {
		counts[tk]++
	}
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v))
	}
	for j, v := range logits {
		p := math.Exp(float64(v)) / z
		if se := math.Sqrt(p * (1 - p) / n); math.Abs(counts[j]/n-p) > 5*se {
			t.Errorf("token %d drawn %.4f of the time, softmax %.4f", j, counts[j]/n, p)
		}
	}
	for _, bad := range []SampleOptions{{Temperature: -1}, {TopK: -1}, {TopP: 1.5}, {Temperature: math.NaN()}} {
		if _, err := NewSampler(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestGenerateLMBackend: the backend's greedy completions are the same with the PrefixStepper and with the
// model's KV-cache decoder, and a long prompt is left-truncated to leave room for the completion.
func TestGenerateLMBackend(t *testing.T) {
	tok := testTokenizer(t)
	m := testModel(t, tok.VocabSize(), 24, 1, 8)
	reqs := []GenRequest{
		{Prompt: "Question: How many apples?", MaxTokens: 8, Stop: []string{"Question:"}},
		{Prompt: strings.Repeat("The quick brown fox. ", 20), MaxTokens: 6},
		{Prompt: "", MaxTokens: 3},
	}
	a, err := NewLM(m, tok, nil).Generate(reqs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewLM(m, tok, m.NewDecoder()).Generate(reqs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Errorf("prefix stepper %+v, decoder %+v", a, b)
	}
	for i, c := range a {
		if n := len(tok.Encode(c.Text)); n > reqs[i].MaxTokens+1 { // re-encoding may merge differently, never by much
			t.Errorf("completion %d has %d tokens, budget %d", i, n, reqs[i].MaxTokens)
		}
		// Only the 20-sentence prompt is longer than 24 − 6 tokens.
		if want := i == 1; c.PromptTruncated != want {
			t.Errorf("completion %d: prompt truncated %v, want %v", i, c.PromptTruncated, want)
		}
	}
}
