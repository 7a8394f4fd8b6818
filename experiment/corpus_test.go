package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// TestTrainTokens: a plan that tunes draws from the training split less the LR-selection slice: the slice's own
// count once select.json is written, and before it the share's estimate, which the printed plan calls "about"
// (the 8 h record's plan printed the estimate 28,481,884 as if counted; the cut left 28,481,840).
func TestTrainTokens(t *testing.T) {
	st := &data.Stats{Source: "archives: x.tgz", Train: data.SplitStats{Tokens: 29980931}}
	tuned, plain := &Plan{Tune: &TuneSpec{}}, &Plan{}
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		p         *Plan
		sel       bool
		want      int64
		estimated bool
		line      string
	}{
		{"no tuning: the whole training split", plain, false, 29980931, false, "x.tgz: 29980931 training tokens the runs draw from\n"},
		{"tuning, slice not cut: the share's estimate", tuned, false, 28481884, true, "x.tgz: about 28481884 training tokens the runs draw from (the training split less the LR-selection slice's share, 5%, before the slice is cut)\n"},
		{"tuning, slice cut: its count", tuned, true, 28481840, false, "x.tgz: 28481840 training tokens the runs draw from (the training split less the LR-selection slice)\n"},
	} {
		if tc.sel {
			b, _ := json.Marshal(data.SelectionStats{Share: 0.05, Train: data.SplitStats{Tokens: 28481840}})
			if err := os.WriteFile(filepath.Join(dir, data.SelectStatsFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		n, est := trainTokens(tc.p, dir, st)
		if n != tc.want || est != tc.estimated {
			t.Errorf("%s: %d (estimated %v), want %d (%v)", tc.name, n, est, tc.want, tc.estimated)
		}
		d := &Description{Plan: tc.p, Tune: tc.p.Tune, Corpus: st.Source, TrainTokens: n, TrainTokensEstimated: est}
		var w bytes.Buffer
		d.writeCorpus(&w)
		if first, _, _ := strings.Cut(w.String(), "\n"); "corpus: archives: "+strings.TrimSuffix(tc.line, "\n") != first {
			t.Errorf("%s: prints %q, want %q", tc.name, first, "corpus: archives: "+tc.line)
		}
	}
}

// preparedCorpus prepares the embedded corpus with a small trained tokenizer into dir and returns dir.
func preparedCorpus(t *testing.T, dir string, text string, vocab int) string {
	t.Helper()
	tok, err := tokenizer.Train([]string{text}, vocab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := data.PrepareEmbedded(dir, 0, tok); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) string {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(src)
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// editStats rewrites dir/stats.json through edit, on its JSON object.
func editStats(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, data.StatsFile)
	b, _ := os.ReadFile(path)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportDataRefusesWhatStatsDoesNotProve (issue 48, Found 2): a --data directory whose token file or
// tokenizer has one flipped byte, whose stats.json claims another vocabulary or token count, whose tokenizer is
// another corpus's or missing, or whose train.tok is a symlink, is refused naming the file; a changed copy in
// OUT/data under an unchanged stats.json is not reused; a stats.json of a build before the sums is accepted with
// a note. Before, each of these was accepted without a word.
func TestImportDataRefusesWhatStatsDoesNotProve(t *testing.T) {
	root := t.TempDir()
	good := preparedCorpus(t, filepath.Join(root, "good"), "hello world, hello there, the world says hello", 270)
	other := preparedCorpus(t, filepath.Join(root, "other"), "the quick brown fox jumps over the lazy dog again and again", 300)
	for _, tc := range []struct {
		name, want string
		spoil      func(dir string)
	}{
		{"train.tok flipped", "train.tok: sha256", func(dir string) { flip(t, filepath.Join(dir, data.TrainFile)) }},
		{"val.tok flipped", "val.tok: sha256", func(dir string) { flip(t, filepath.Join(dir, data.ValFile)) }},
		{"val.en.tok flipped", "val.en.tok: sha256", func(dir string) { flip(t, filepath.Join(dir, data.ValLangFile("en"))) }},
		{"tokenizer flipped", "tokenizer.json: sha256", func(dir string) { flip(t, filepath.Join(dir, data.TokenizerFile)) }},
		{"stats vocabulary", "says vocab_size = 4096", func(dir string) {
			editStats(t, dir, func(m map[string]any) { m["vocab_size"] = 4096 })
		}},
		{"stats training tokens", "says 1000000000000", func(dir string) {
			editStats(t, dir, func(m map[string]any) { m["train"].(map[string]any)["tokens"] = 1e12 })
		}},
		{"another corpus's tokenizer, sums dropped", "not of one build", func(dir string) {
			editStats(t, dir, func(m map[string]any) { delete(m, "sha256") })
			b, _ := os.ReadFile(filepath.Join(other, data.TokenizerFile))
			os.WriteFile(filepath.Join(dir, data.TokenizerFile), b, 0o644)
		}},
		{"tokenizer missing", "tokenizer.json: no such file", func(dir string) { os.Remove(filepath.Join(dir, data.TokenizerFile)) }},
		{"train.tok a symlink", "train.tok is a", func(dir string) {
			os.Remove(filepath.Join(dir, data.TrainFile))
			os.Symlink(filepath.Join(good, data.TrainFile), filepath.Join(dir, data.TrainFile))
		}},
		{"train.tok a FIFO", "train.tok is a FIFO", func(dir string) {
			os.Remove(filepath.Join(dir, data.TrainFile))
			if err := syscall.Mkfifo(filepath.Join(dir, data.TrainFile), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"train.tok a directory", "train.tok is a directory", func(dir string) {
			os.Remove(filepath.Join(dir, data.TrainFile))
			os.Mkdir(filepath.Join(dir, data.TrainFile), 0o755)
		}},
	} {
		src := copyDir(t, good, filepath.Join(t.TempDir(), "src"))
		tc.spoil(src)
		dst := filepath.Join(t.TempDir(), "data")
		_, err := importData(context.Background(), src, dst, &Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
		if _, serr := os.Stat(dst); serr == nil {
			t.Errorf("%s: %s written", tc.name, dst)
		}
	}

	// A changed copy under an unchanged stats.json is not "reusing the corpus".
	dst := filepath.Join(root, "out", "data")
	if _, err := importData(context.Background(), good, dst, &Options{}); err != nil {
		t.Fatal(err)
	}
	flip(t, filepath.Join(dst, data.TrainFile))
	if _, err := importData(context.Background(), good, dst, &Options{}); err == nil || !strings.Contains(err.Error(), filepath.Join(dst, data.TrainFile)) {
		t.Errorf("changed copy reused: %v", err)
	}

	// An earlier build's stats.json (no sums): accepted with a note, and its copy checked against src's files.
	old := copyDir(t, good, filepath.Join(root, "old"))
	editStats(t, old, func(m map[string]any) { delete(m, "sha256") })
	var log bytes.Buffer
	dst = filepath.Join(root, "out2", "data")
	if _, err := importData(context.Background(), old, dst, &Options{Log: &log}); err != nil || !strings.Contains(log.String(), "no sha256 sums") {
		t.Fatalf("stats.json without sums: %v; log:\n%s", err, log.String())
	}
	flip(t, filepath.Join(dst, data.ValFile))
	if _, err := importData(context.Background(), old, dst, &Options{}); err == nil || !strings.Contains(err.Error(), filepath.Join(dst, data.ValFile)) {
		t.Errorf("changed copy of a corpus without sums reused: %v", err)
	}

	// A leftover OUT/data without stats.json is named with the command that clears it.
	dst = filepath.Join(root, "out3", "data")
	os.MkdirAll(dst, 0o755)
	if _, err := importData(context.Background(), good, dst, &Options{}); err == nil || !strings.Contains(err.Error(), "rm -r "+dst) {
		t.Errorf("leftover %s: %v", dst, err)
	}
}

// flip flips the bits of the file's last byte.
func flip(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportDataClearsLeftoverTmp: a leftover OUT/data.tmp of a copy cut short (a directory with a stray file,
// or a plain file) is cleared and the copy made, never a bare "rename … file exists" (issue 48, 5: checked to
// still hold).
func TestImportDataClearsLeftoverTmp(t *testing.T) {
	root := t.TempDir()
	good := preparedCorpus(t, filepath.Join(root, "good"), "hello world, hello there, the world says hello", 270)
	for i, leave := range []func(tmp string){
		func(tmp string) {
			os.MkdirAll(filepath.Join(tmp, "sub"), 0o755)
			os.WriteFile(filepath.Join(tmp, data.TrainFile), []byte("junk"), 0o644)
		},
		func(tmp string) { os.WriteFile(tmp, []byte("junk"), 0o644) },
	} {
		dst := filepath.Join(root, fmt.Sprintf("out%d", i), "data")
		os.MkdirAll(filepath.Dir(dst), 0o755)
		leave(dst + ".tmp")
		if _, err := importData(context.Background(), good, dst, &Options{}); err != nil {
			t.Errorf("leftover %d: %v", i, err)
		}
		if _, err := os.Lstat(dst + ".tmp"); !os.IsNotExist(err) {
			t.Errorf("leftover %d: %s.tmp still there", i, dst)
		}
		if err := data.Verify(dst, mustStats(t, dst)); err != nil {
			t.Errorf("leftover %d: the copy: %v", i, err)
		}
	}
}

// TestImportDataStops: SIGTERM while --data is copied into OUT/data (data preparation of a study; issue 48, 4)
// stops the copy between two reads with train.ErrInterrupted naming the file, removes the partial copy and
// leaves OUT/data unwritten; the same call then copies the corpus.
func TestImportDataStops(t *testing.T) {
	root := t.TempDir()
	good := preparedCorpus(t, filepath.Join(root, "good"), "hello world, hello there, the world says hello", 270)
	dst := filepath.Join(root, "out", "data")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := importData(ctx, good, dst, &Options{})
	if !errors.Is(err, train.ErrInterrupted) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "(file 1 of ") ||
		!strings.Contains(err.Error(), "nothing written there") {
		t.Errorf("a stopped copy: %v, want ErrInterrupted naming the file", err)
	}
	for _, p := range []string{dst, dst + ".tmp"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("a stopped copy left %s", p)
		}
	}
	if _, err := importData(context.Background(), good, dst, &Options{}); err != nil {
		t.Fatalf("the next call: %v", err)
	}
	if err := data.Verify(dst, mustStats(t, dst)); err != nil {
		t.Errorf("the copy: %v", err)
	}
}

func mustStats(t *testing.T, dir string) *data.Stats {
	t.Helper()
	st, err := data.ReadStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestEditedEmbeddedStatsBlamed: an edited OUT/data/stats.json of the embedded corpus is named when the plan
// reuses the corpus (its vocabulary, or its token counts against the files), not later as runs whose
// config.toml differs (issue 48, 5).
func TestEditedEmbeddedStatsBlamed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := data.PrepareEmbedded(dir, 512, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareData(dir, 512, &Options{}); err != nil {
		t.Fatalf("the corpus as prepared: %v", err)
	}
	stats := filepath.Join(dir, data.StatsFile)
	orig, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want []string
	}{
		{"vocabulary", func(m map[string]any) { m["vocab_size"] = 4096 }, []string{stats, "vocabulary of 4096", "rm -r " + dir}},
		{"training tokens", func(m map[string]any) { m["train"].(map[string]any)["tokens"] = 1e12 }, []string{data.StatsFile, "says 1000000000000"}},
	} {
		editStats(t, dir, tc.edit)
		_, err := prepareData(dir, 512, &Options{})
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error naming %q", tc.name, err, w)
			}
		}
		if err := os.WriteFile(stats, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
