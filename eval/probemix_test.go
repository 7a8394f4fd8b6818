package eval

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
)

// TestWriteProbeMix: the mix holds every corpus document in order with probe lines between them, each ended by
// <|endoftext|>, making up the asked share of the tokens; the test sets and the tokenizer are beside it; a
// second call reuses the directory.
func TestWriteProbeMix(t *testing.T) {
	tok := testTokenizer(t)
	eot := tok.EOT()
	dataDir, dir := t.TempDir(), filepath.Join(t.TempDir(), "mix")
	if err := tok.Save(filepath.Join(dataDir, data.TokenizerFile)); err != nil {
		t.Fatal(err)
	}
	var corpus []int32
	var docs []string
	for i := 0; i < 40; i++ {
		doc := testSentences[i%len(testSentences)]
		docs = append(docs, doc)
		corpus = append(append(corpus, tok.Encode(doc)...), eot)
	}
	if err := data.WriteTokens(filepath.Join(dataDir, data.TrainFile), corpus); err != nil {
		t.Fatal(err)
	}
	c := ProbeConfig{Seed: 3, Train: 30, Test: 5, Table: 8, AddDigits: 2}
	if err := WriteProbeMix(dir, dataDir, tok.VocabSize(), c, 0.4); err != nil {
		t.Fatal(err)
	}
	mixed, err := data.ReadTokens(filepath.Join(dir, data.TrainFile), tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	ps, err := MakeProbes(c)
	if err != nil {
		t.Fatal(err)
	}
	probeText := map[string]bool{}
	for _, p := range ps.Train {
		probeText[p.Text()] = true
	}
	var gotDocs []string
	probeToks, start := 0, 0
	for i, id := range mixed {
		if id != eot {
			continue
		}
		text := string(tok.Decode(mixed[start:i]))
		if probeText[text] {
			probeToks += i + 1 - start
		} else {
			gotDocs = append(gotDocs, text)
		}
		start = i + 1
	}
	if start != len(mixed) {
		t.Fatalf("mix ends with %d tokens after the last <|endoftext|>", len(mixed)-start)
	}
	if strings.Join(gotDocs, "|") != strings.Join(docs, "|") {
		t.Errorf("corpus documents in the mix:\n%q\nwant\n%q", gotDocs, docs)
	}
	if share := float64(probeToks) / float64(len(mixed)); share < 0.4 || share > 0.45 {
		t.Errorf("probes are %.3f of the mix, want 0.4 (up to one probe line more)", share)
	}
	if probeToks+len(corpus) != len(mixed) {
		t.Errorf("%d probe and %d corpus tokens, mix has %d", probeToks, len(corpus), len(mixed))
	}
	for _, name := range []string{ProbeTestFile, ProbeRecallFile, data.TokenizerFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	before, _ := os.Stat(filepath.Join(dir, data.TrainFile))
	if err := WriteProbeMix(dir, dataDir, tok.VocabSize(), c, 0.4); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(filepath.Join(dir, data.TrainFile)); !after.ModTime().Equal(before.ModTime()) {
		t.Error("a second call rewrote the finished mix")
	}
	if err := WriteProbeMix(filepath.Join(t.TempDir(), "x"), dataDir, tok.VocabSize(), c, 1); err == nil || !strings.Contains(err.Error(), "share") {
		t.Errorf("share 1: %v, want a refusal", err)
	}
}

// TestScoreProbesAfterEOT: ScoreProbes scores every prompt after <|endoftext|>, as the mix trained it. Its
// reasoning gold loss equals a direct computation on ScoreTokens with [EOT]+prompt contexts, and differs from
// the same computation without the EOT (so the prefix is not a no-op on this model).
func TestScoreProbesAfterEOT(t *testing.T) {
	tok := testTokenizer(t)
	m := testModel(t, tok.VocabSize(), 32, 4, 5)
	ps, err := MakeProbes(ProbeConfig{Seed: 2, Train: 10, Test: 3, Table: 6, AddDigits: 2, Kinds: []string{"add", "add_mem", "copy"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for file, set := range map[string][]Probe{ProbeTestFile: ps.Test, ProbeRecallFile: ps.Recall} {
		b, err := ProbeRecords(set)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ScoreProbes(context.Background(), m, tok, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: mean over reasoning test probes of −log p(" answer" | prompt) per answer token.
	ref := func(prefix []int32) (loss float64, n int) {
		lm := NewLM(m, tok, nil)
		var reqs []TokenRequest
		for _, p := range ps.Test {
			if ProbeClass(p.Kind) == ProbeReasoning {
				reqs = append(reqs, TokenRequest{Context: append(slices.Clone(prefix), tok.Encode(p.Prompt)...), Continuation: tok.Encode(" " + p.Answer)})
			}
		}
		sc, err := lm.ScoreTokens(reqs)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range sc {
			loss += -x.LogProb / float64(x.Tokens)
		}
		return loss / float64(len(sc)), len(sc)
	}
	withEOT, n := ref([]int32{tok.EOT()})
	without, _ := ref(nil)
	if s.Prefix != ProbePrefix || s.ReasoningCount != n || n != 6 {
		t.Fatalf("prefix %q, %d reasoning records; want %q and %d", s.Prefix, s.ReasoningCount, ProbePrefix, n)
	}
	if math.Abs(s.ReasoningLoss-withEOT) > 1e-5*withEOT {
		t.Errorf("reasoning gold loss %.7f, direct computation after EOT %.7f", s.ReasoningLoss, withEOT)
	}
	if math.Abs(without-withEOT) < 1e-3 {
		t.Errorf("gold loss with and without the EOT: %.7f and %.7f; the test cannot tell whether the prefix is applied", withEOT, without)
	}
	if s.MemorisationCount != 3 || !(s.MemorisationLoss > 0) {
		t.Errorf("memorisation: %d records, loss %g", s.MemorisationCount, s.MemorisationLoss)
	}
}

// TestLMPrefixGenerate: Generate with Prefix continues prefix‖prompt, token for token what Generate on the
// stepper gives from those tokens.
func TestLMPrefixGenerate(t *testing.T) {
	m := testModel(t, 257, 32, 2, 9)
	lm := NewLM(m, byteTokenizer{}, nil)
	lm.Prefix = []int32{256}
	got, err := lm.Generate([]GenRequest{{Prompt: "add: 4 + 5 =", MaxTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Generate(NewPrefixStepper(m), byteTokenizer{}, append([]int32{256}, byteTokenizer{}.Encode("add: 4 + 5 =")...), GenerateOptions{MaxTokens: 6, EOT: 256}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Text != want.Text {
		t.Errorf("Generate with Prefix %q, from the prefixed tokens %q", got[0].Text, want.Text)
	}
	lm.Prefix = nil
	plain, err := lm.Generate([]GenRequest{{Prompt: "add: 4 + 5 =", MaxTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if plain[0].Text == got[0].Text {
		t.Errorf("the same completion %q with and without the prefix: this model cannot show the prefix is used", got[0].Text)
	}
}
