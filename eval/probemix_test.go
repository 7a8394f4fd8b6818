package eval

import (
	"os"
	"path/filepath"
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
