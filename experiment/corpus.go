package experiment

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// dataSource is the prepared corpus directory a plan trains on: Options.Data, else the plan's data.dir; "" for
// the embedded corpus.
func (o *Options) dataSource(p *Plan) string {
	if o.Data != "" {
		return o.Data
	}
	return p.Data.Dir
}

// importData copies the corpus prepared in src (`smallinit data prepare`: its token files, tokenizer.json and
// stats.json) into dst, the plan's OUT/data, where the LR-selection slice is carved beside it; src is never
// written. A dst that holds a corpus already is reused when its stats.json is src's, byte for byte, and refused
// otherwise (another corpus: use another --out).
func importData(src, dst string, o *Options) (*data.Stats, error) {
	want, err := inputfile.ReadFile(filepath.Join(src, data.StatsFile), inputfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("--data %s: not a prepared corpus (smallinit data prepare --out %s): %w", src, src, err)
	}
	st, err := data.ReadStats(src)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	if have, err := os.ReadFile(filepath.Join(dst, data.StatsFile)); err == nil {
		if string(have) != string(want) {
			return nil, fmt.Errorf("%s holds another corpus than --data %s (their %s differ): use another --out", dst, src, data.StatsFile)
		}
		o.logf("reusing the corpus of %s in %s\n", src, dst)
		return st, nil
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	tmp := dst + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		// The prepared files only: token files, the tokenizer and the stats (stats.json last, below).
		if !e.Type().IsRegular() || name == data.StatsFile || !(strings.HasSuffix(name, ".tok") || name == data.TokenizerFile) {
			continue
		}
		if err := copyFile(filepath.Join(src, name), filepath.Join(tmp, name)); err != nil {
			return nil, fmt.Errorf("--data %s: %w", src, err)
		}
		n++
	}
	if err := os.WriteFile(filepath.Join(tmp, data.StatsFile), want, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	o.logf("copied the corpus of %s (%d files, %d training tokens) into %s\n", src, n+1, st.Train.Tokens, dst)
	return st, nil
}

// copyFile copies one regular file.
func copyFile(src, dst string) error {
	in, err := inputfile.Open(src, inputfile.NoLimit)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// trainTokens are the tokens the plan's runs draw from: the training split, less the LR-selection slice when the
// plan tunes or asks for it: the slice's own count once it is carved, else an estimate from its share
// (estimated: the slice is cut by whole documents, so the count it leaves differs a little from the share's).
func trainTokens(p *Plan, dataDir string, st *data.Stats) (n int64, estimated bool) {
	if st == nil {
		return 0, false
	}
	if !p.withoutSelection() {
		return st.Train.Tokens, false
	}
	if sel, err := data.ReadSelectionStats(dataDir); err == nil {
		return sel.Train.Tokens, false
	}
	return int64(math.Round(float64(st.Train.Tokens) * (1 - data.DefaultSelectShare))), true
}
