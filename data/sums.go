package data

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/tokenizer"
)

// A prepared directory proves its files with stats.json's "sha256": the sum of each token file and of
// tokenizer.json, computed from the bytes written before stats.json (written last) names them. A directory
// prepared by a build before the sums has none: Verify accepts it with ErrNoSums, which its callers report as
// a note, so that corpora already in use (a running study's copy) stay usable.

// ErrNoSums is wrapped by Verify's error for a stats.json that records no sums (an earlier build's).
var ErrNoSums = errors.New(StatsFile + " records no sha256 sums (prepared by an earlier build): its files are trusted unverified")

// seal records in st the sums of the files a build is about to commit: name → the path it is staged at.
func (st *Stats) seal(staged map[string]string) error {
	st.SHA256 = map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(staged)) {
		sum, err := filesum.File(staged[name])
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		st.SHA256[name] = sum
	}
	return nil
}

// Verify checks the files of the prepared directory dir against the sums its stats.json st records: names,
// or every recorded file when names is empty (a name it records no sum for is not checked). A mismatch or a
// missing file is an error naming the file; a stats.json without sums gives an error wrapping ErrNoSums.
func Verify(dir string, st *Stats, names ...string) error {
	if len(st.SHA256) == 0 {
		return fmt.Errorf("%s: %w", filepath.Join(dir, StatsFile), ErrNoSums)
	}
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(st.SHA256))
	}
	for _, n := range names {
		want, ok := st.SHA256[n]
		if !ok {
			continue
		}
		if err := filesum.Check(filepath.Join(dir, n), want, filepath.Join(dir, StatsFile)); err != nil {
			return fmt.Errorf("%w: prepare the directory again (smallinit data prepare)", err)
		}
	}
	return nil
}

// CheckPrepared checks that the prepared directory dir holds what its stats.json st says, beyond the sums:
// tokenizer.json is there and is a tokenizer of st's vocabulary size, every token file's ids are below it, and
// the training and validation token counts are st's. So a stats.json edited by hand (a vocabulary of 4096
// over a 300-token tokenizer, 10^12 training tokens) or another corpus's tokenizer is refused naming both.
func CheckPrepared(dir string, st *Stats) error {
	stats := filepath.Join(dir, StatsFile)
	tp := filepath.Join(dir, TokenizerFile)
	tok, err := tokenizer.Load(tp)
	if err != nil {
		return fmt.Errorf("prepared corpus %s: %w (every prepared directory holds its tokenizer)", dir, err)
	}
	if tok.VocabSize() != st.VocabSize {
		return fmt.Errorf("prepared corpus %s: %s has %d tokens, %s says vocab_size = %d: the two are not of one build; prepare the directory again",
			dir, tp, tok.VocabSize(), stats, st.VocabSize)
	}
	for _, f := range []struct {
		name string
		want int64
	}{{TrainFile, st.Train.Tokens}, {ValFile, st.Val.Tokens}} {
		ids, err := ReadTokens(filepath.Join(dir, f.name), st.VocabSize)
		if err != nil {
			return fmt.Errorf("prepared corpus %s: %w", dir, err)
		}
		if int64(len(ids)) != f.want {
			return fmt.Errorf("prepared corpus %s: %s holds %d tokens, %s says %d: prepare the directory again",
				dir, filepath.Join(dir, f.name), len(ids), stats, f.want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "val.") && strings.HasSuffix(n, ".tok") && n != ValFile {
			if _, err := ReadTokens(filepath.Join(dir, n), st.VocabSize); err != nil {
				return fmt.Errorf("prepared corpus %s: %w", dir, err)
			}
		}
	}
	return nil
}

// VerifyFile checks the file at path against the stats.json of its directory, when that records a sum for it:
// what a run does with its data.train and data.val files before every start and resume. A file outside a
// prepared directory, or one its stats.json has no sum for (the LR-selection slice), is not checked; a
// stats.json of an earlier build gives an error wrapping ErrNoSums.
func VerifyFile(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(filepath.Join(dir, StatsFile)); err != nil {
		return nil
	}
	st, err := ReadStats(dir)
	if err != nil {
		return err
	}
	return Verify(dir, st, filepath.Base(path))
}
