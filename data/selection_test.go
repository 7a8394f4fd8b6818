package data

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/tokenizer"
)

// selectionDir writes a prepared "embedded" directory of two inputs whose training documents are docs[0] and
// docs[1] and whose validation documents are val, and returns it.
func selectionDir(t *testing.T, docs [2][]string, val []string) string {
	t.Helper()
	dir := t.TempDir()
	var all []string
	for _, d := range docs {
		all = append(all, d...)
	}
	tok, err := tokenizer.Train(append(all, val...), 300)
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.Save(filepath.Join(dir, TokenizerFile)); err != nil {
		t.Fatal(err)
	}
	st := &Stats{Source: "embedded", VocabSize: tok.VocabSize()}
	var train []int32
	for i, ds := range docs {
		in := InputStats{Name: fmt.Sprintf("in%d", i), Lang: []string{"en", "zh"}[i]}
		for _, d := range ds {
			n := len(train)
			train = append(tok.AppendEncode(train, d), tok.EOT())
			in.Train.Documents++
			in.Train.Tokens += int64(len(train) - n)
		}
		st.Inputs = append(st.Inputs, in)
	}
	var v []int32
	for _, d := range val {
		v = append(tok.AppendEncode(v, d), tok.EOT())
	}
	if err := WriteTokens(filepath.Join(dir, TrainFile), train); err != nil {
		t.Fatal(err)
	}
	if err := WriteTokens(filepath.Join(dir, ValFile), v); err != nil {
		t.Fatal(err)
	}
	if err := WriteStats(dir, st); err != nil {
		t.Fatal(err)
	}
	return dir
}

func genSelectDocs(rng *rand.Rand, n int, words []string) []string {
	var out []string
	for i := 0; i < n; i++ {
		var sb strings.Builder
		for j := 0; j < 5+rng.IntN(40); j++ {
			sb.WriteString(words[rng.IntN(len(words))] + " ")
		}
		out = append(out, fmt.Sprintf("doc %d: %s", i, sb.String()))
	}
	return out
}

func docsOf(t *testing.T, dir, file string) []string {
	t.Helper()
	toks, err := ReadTokens(filepath.Join(dir, file), 0)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range splitDocs(toks, tok.EOT()) {
		out = append(out, string(tok.Decode(toks[d[0]:d[1]-1])))
	}
	return out
}

// TestPrepareSelectionPartitionsTraining checks that select.tok and train.select.tok partition train.tok's
// documents (the rest in their order), that each input holds out about its share, that a training document
// repeated in the validation split is never selected, and that the choice does not depend on document order.
func TestPrepareSelectionPartitionsTraining(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	en := genSelectDocs(rng, 300, []string{"whale", "ship", "sea", "captain", "the", "of", "and"})
	zh := genSelectDocs(rng, 200, []string{"山", "水", "月", "风", "花", "春", "秋"})
	dup := en[7]
	dir := selectionDir(t, [2][]string{en, zh}, []string{dup, "a held-out document"})
	st, err := PrepareSelection(dir, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	sel, rest := docsOf(t, dir, SelectFile), docsOf(t, dir, SelectTrainFile)
	if slices.Contains(sel, dup) {
		t.Errorf("a document also in val.tok was selected")
	}
	if st.DroppedAsValDuplicates != 1 {
		t.Errorf("DroppedAsValDuplicates = %d, want 1", st.DroppedAsValDuplicates)
	}
	all := append(append([]string(nil), en...), zh...)
	var wantRest []string
	for _, d := range all {
		if !slices.Contains(sel, d) {
			wantRest = append(wantRest, d)
		}
	}
	if !slices.Equal(rest, wantRest) || len(sel)+len(rest) != len(all) {
		t.Fatalf("selection (%d) and rest (%d) do not partition the %d training documents in order", len(sel), len(rest), len(all))
	}
	for i, in := range st.Inputs {
		stats, _ := ReadStats(dir)
		share := float64(in.Select.Tokens) / float64(stats.Inputs[i].Train.Tokens)
		if share < 0.1 || share > 0.13 {
			t.Errorf("input %s holds out %.3f of its tokens, want about 0.1", in.Name, share)
		}
	}
	// Reversing each input's document order selects the same documents.
	slices.Reverse(en)
	slices.Reverse(zh)
	dir2 := selectionDir(t, [2][]string{en, zh}, []string{dup, "a held-out document"})
	if _, err := PrepareSelection(dir2, 0.1); err != nil {
		t.Fatal(err)
	}
	sel2 := docsOf(t, dir2, SelectFile)
	a, b := slices.Clone(sel), slices.Clone(sel2)
	slices.Sort(a)
	slices.Sort(b)
	// The tokenizers of the two directories are trained on the same texts in another order; compare texts.
	if !slices.Equal(a, b) {
		t.Errorf("document order changed the selection: %d vs %d documents", len(a), len(b))
	}
	got, err := ReadSelectionStats(dir)
	if err != nil || got.Select.Tokens != st.Select.Tokens {
		t.Errorf("select.json round trip: %+v, %v", got, err)
	}
}

// TestPrepareSelectionRefuses checks the errors: a share outside (0, 0.5), a missing directory, and stats
// whose input counts do not match train.tok.
func TestPrepareSelectionRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := selectionDir(t, [2][]string{genSelectDocs(rng, 20, []string{"a", "b"}), genSelectDocs(rng, 20, []string{"c", "d"})}, []string{"v"})
	for _, share := range []float64{0, -0.1, 0.5, 1} {
		if _, err := PrepareSelection(dir, share); err == nil {
			t.Errorf("share %g accepted", share)
		}
	}
	if _, err := PrepareSelection(filepath.Join(dir, "missing"), 0.05); err == nil {
		t.Error("missing directory accepted")
	}
	st, _ := ReadStats(dir)
	st.Inputs[0].Train.Tokens += 3
	if err := WriteStats(dir, st); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareSelection(dir, 0.05); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("mismatched stats: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SelectStatsFile)); err == nil {
		t.Error("a failed preparation left select.json")
	}
}
