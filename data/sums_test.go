package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/tokenizer"
)

// TestBuildsRecordTheirSums: each of the three builders (the embedded corpus, files, npm archives) records in
// stats.json the sum of every token file and of tokenizer.json it wrote, equal to the file's; Verify passes on
// the build and names the file once one byte of it is flipped (the bit-flip test of a prepared directory).
func TestBuildsRecordTheirSums(t *testing.T) {
	embedded := t.TempDir()
	tok, err := tokenizer.Train([]string{"hello world, hello there"}, 260)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareEmbedded(embedded, 0, tok); err != nil {
		t.Fatal(err)
	}
	files := t.TempDir()
	in := writeTestFile(t, t.TempDir(), "c.jsonl", jsonlOf(t, genDocs(300, 2)))
	if _, err := PrepareFiles(files, PrepareOptions{Inputs: []string{in}, Vocab: 300, ValFraction: 0.1, Source: "x"}); err != nil {
		t.Fatal(err)
	}
	archives, _ := prepareFixtures(t, ArchiveOptions{}, "chinese-poetry.tgz", "sotu.tgz")
	for _, dir := range []string{embedded, files, archives} {
		st, err := ReadStats(dir)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".tok") || e.Name() == TokenizerFile {
				want = append(want, e.Name())
			}
		}
		var have []string
		for name, sum := range st.SHA256 {
			have = append(have, name)
			if got, err := filesum.File(filepath.Join(dir, name)); err != nil || got != sum {
				t.Errorf("%s: stats.json records %s, the file's sum is %s (%v)", filepath.Join(dir, name), sum, got, err)
			}
		}
		slices.Sort(have)
		if !slices.Equal(have, want) || len(have) < 3 {
			t.Errorf("%s: stats.json sums %v, want one for each of %v", dir, have, want)
		}
		if err := Verify(dir, st); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
		if err := CheckPrepared(dir, st); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
		for _, name := range have {
			path := filepath.Join(dir, name)
			b, _ := os.ReadFile(path)
			b[len(b)/2] ^= 1
			os.WriteFile(path, b, 0o644)
			if err := Verify(dir, st); err == nil || !strings.Contains(err.Error(), path+": sha256") {
				t.Errorf("%s with a flipped bit: %v, want a refusal naming it", path, err)
			}
			b[len(b)/2] ^= 1
			os.WriteFile(path, b, 0o644)
		}
	}
}

// TestMixRefusesUnknownKeys (issue 48, Found 5): --min-share of a language no archive holds and --cap of a
// source that does not exist (a typo of sotu) are refused listing the known ones; before, both did nothing.
func TestMixRefusesUnknownKeys(t *testing.T) {
	for _, tc := range []struct {
		mix  Mix
		want string
	}{
		{Mix{MinShare: map[string]float64{"xx": 0.3}}, `no document is in language "xx" (the languages: en, zh)`},
		{Mix{Caps: map[string]int64{"sout": 100}}, `"sout" is neither a source nor a language`},
	} {
		_, err := PrepareArchives(filepath.Join(t.TempDir(), "out"), ArchiveOptions{Inputs: fixtures("chinese-poetry.tgz", "sotu.tgz"), Vocab: 300, Mix: tc.mix})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("mix %+v: %v, want an error containing %q", tc.mix, err, tc.want)
		}
		if err != nil && tc.mix.Caps != nil && !strings.Contains(err.Error(), "sotu") {
			t.Errorf("the refusal does not list the sources: %v", err)
		}
	}
	// The default mix over archives without English is not refused.
	if _, err := PrepareArchives(filepath.Join(t.TempDir(), "out"), ArchiveOptions{Inputs: fixtures("chinese-poetry.tgz"), Vocab: 300, Mix: DefaultMix()}); err != nil {
		t.Errorf("default mix without English: %v", err)
	}
}
