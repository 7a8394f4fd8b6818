package probes

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
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
	c := Config{Seed: 3, Train: 30, Test: 5, Table: 8, AddDigits: 2}
	if err := WriteMix(dir, dataDir, tok.VocabSize(), c, 0.4); err != nil {
		t.Fatal(err)
	}
	mixed, err := data.ReadTokens(filepath.Join(dir, data.TrainFile), tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Make(c)
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
	for _, name := range []string{TestFile, RecallFile, data.TokenizerFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	before, _ := os.Stat(filepath.Join(dir, data.TrainFile))
	if err := WriteMix(dir, dataDir, tok.VocabSize(), c, 0.4); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(filepath.Join(dir, data.TrainFile)); !after.ModTime().Equal(before.ModTime()) {
		t.Error("a second call rewrote the finished mix")
	}
	if err := WriteMix(filepath.Join(t.TempDir(), "x"), dataDir, tok.VocabSize(), c, 1); err == nil || !strings.Contains(err.Error(), "share") {
		t.Errorf("share 1: %v, want a refusal", err)
	}
}

// TestScoreProbesAfterEOT: Score scores every prompt after <|endoftext|>, as the mix trained it. Its
// reasoning gold loss equals a direct computation on ScoreTokens with [EOT]+prompt contexts, and differs from
// the same computation without the EOT (so the prefix is not a no-op on this model).
func TestScoreProbesAfterEOT(t *testing.T) {
	tok := testTokenizer(t)
	m := testModel(t, tok.VocabSize(), 32, 4, 5)
	ps, err := Make(Config{Seed: 2, Train: 10, Test: 3, Table: 6, AddDigits: 2, Kinds: []string{"add", "add_mem", "copy"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for file, set := range map[string][]eval.Probe{TestFile: ps.Test, RecallFile: ps.Recall} {
		b, err := Records(set)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Score(context.Background(), m, tok, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: mean over reasoning test probes of −log p(" answer" | prompt) per answer token.
	ref := func(prefix []int32) (loss float64, n int) {
		lm := eval.NewLM(m, tok, nil)
		var reqs []eval.TokenRequest
		for _, p := range ps.Test {
			if eval.ProbeClass(p.Kind) == eval.ProbeReasoning {
				reqs = append(reqs, eval.TokenRequest{Context: append(slices.Clone(prefix), tok.Encode(p.Prompt)...), Continuation: tok.Encode(" " + p.Answer)})
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
	if s.Prefix != Prefix || s.ReasoningCount != n || n != 6 {
		t.Fatalf("prefix %q, %d reasoning records; want %q and %d", s.Prefix, s.ReasoningCount, Prefix, n)
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
