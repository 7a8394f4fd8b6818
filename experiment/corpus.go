package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/filesum"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/train"
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
// written. src is checked first: its files against stats.json's sums (data.Verify) and stats.json against its
// files (data.CheckPrepared: the tokenizer's vocabulary, the token counts, the largest id). A dst that holds a
// corpus already is reused when its stats.json is src's, byte for byte, and its files are the ones the sums
// name (or, for a stats.json of a build before the sums, src's own files, hashed now), and refused otherwise.
// Only regular files are prepared files: a symlink, FIFO or directory in their place is refused naming it.
// A cancelled ctx (SIGTERM) stops the copy between two reads with train.ErrInterrupted: dst is not written (the
// partial copy is removed) and the next call copies again.
func importData(ctx context.Context, src, dst string, o *Options) (*data.Stats, error) {
	want, err := inputfile.ReadFile(filepath.Join(src, data.StatsFile), inputfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("--data %s: not a prepared corpus (smallinit data prepare --out %s): %w", src, src, err)
	}
	st, err := data.ReadStats(src)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	names, err := preparedFiles(src)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	sums := st.SHA256
	if err := data.Verify(src, st); errors.Is(err, data.ErrNoSums) {
		o.logf("note: %v\n", err)
		// The sums of src's files as they are now stand in for the missing ones when dst is checked below.
		sums = map[string]string{}
		for _, n := range names {
			if sums[n], err = filesum.File(filepath.Join(src, n)); err != nil {
				return nil, fmt.Errorf("--data %s: %w", src, err)
			}
		}
	} else if err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	if err := data.CheckPrepared(src, st); err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	if have, err := os.ReadFile(filepath.Join(dst, data.StatsFile)); err == nil {
		if string(have) != string(want) {
			return nil, fmt.Errorf("%s holds another corpus than --data %s (their %s differ): use another --out", dst, src, data.StatsFile)
		}
		if err := data.Verify(dst, &data.Stats{SHA256: sums}); err != nil {
			return nil, fmt.Errorf("%s holds a changed copy of --data %s: %w (or move %s away to copy the corpus again)", dst, src, err, dst)
		}
		o.logf("reusing the corpus of %s in %s\n", src, dst)
		return st, nil
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil, fmt.Errorf("%s exists but holds no %s (a copy cut short, or not a corpus): move it away (rm -r %s) and run again", dst, data.StatsFile, dst)
	}
	tmp := dst + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	for i, name := range names {
		if err := copyFile(ctx, filepath.Join(src, name), filepath.Join(tmp, name)); err != nil {
			os.RemoveAll(tmp)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("--data %s: %w while copying %s (file %d of %d) into %s: nothing written there (the next call copies again): %w",
					src, train.ErrInterrupted, name, i+1, len(names), dst, context.Cause(ctx))
			}
			return nil, fmt.Errorf("--data %s: %w", src, err)
		}
	}
	// The copy is what was verified: a file changed during the copy is caught here, before dst exists.
	if err := data.Verify(tmp, &data.Stats{SHA256: sums}); err != nil {
		return nil, fmt.Errorf("--data %s: copy: %w", src, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, data.StatsFile), want, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return nil, fmt.Errorf("--data %s: %w", src, err)
	}
	o.logf("copied the corpus of %s (%d files, %d training tokens) into %s\n", src, len(names)+1, st.Train.Tokens, dst)
	return st, nil
}

// preparedFiles are the names of the prepared files in dir, beside stats.json: its token files and the
// tokenizer. Each must be a regular file: anything else in their place is refused naming it.
func preparedFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if name == data.StatsFile || !(strings.HasSuffix(name, ".tok") || name == data.TokenizerFile) {
			continue
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s is %s, not a file: a prepared directory holds its files themselves (copy the file there, or prepare the directory again)",
				filepath.Join(dir, name), inputfile.Kind(e.Type()))
		}
		names = append(names, name)
	}
	return names, nil
}

// copyFile copies one regular file, stopping between two reads when ctx is cancelled.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := inputfile.Open(src, inputfile.NoLimit)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, ctxReader{ctx, in}); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ctxReader reads r until ctx is cancelled, then fails with context.Cause(ctx).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(b)
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
