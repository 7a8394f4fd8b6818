package diag

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

// CompareFiles compares the model directories a and b on a token file (Compare, at most windows windows, 0:
// all) and, unless dump is "", writes every token's row to dump (.csv, else JSON lines). A regular file is
// written under a temporary name and renamed into place, so that a failure leaves no partial dump; anything
// else (/dev/stdout, a pipe) is written directly: renaming over it would replace the device or pipe.
// progress, when not nil, is told the windows compared of the total (0 first, then after each window), so
// that a command comparing on a large file can show it moving.
func CompareFiles(a, b, tokens string, bins, windows int, dump string, progress func(done, total int64)) (diagrec.Comparison, error) {
	if bins < 1 {
		return diagrec.Comparison{}, fmt.Errorf("%d difficulty bins: must be positive", bins)
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	ma, _, err := model.Load(a, 8, pool)
	if err != nil {
		return diagrec.Comparison{}, err
	}
	mb, _, err := model.Load(b, 8, pool)
	if err != nil {
		return diagrec.Comparison{}, err
	}
	toks, err := data.ReadTokens(tokens, min(ma.Config.Vocab, mb.Config.Vocab))
	if err != nil {
		return diagrec.Comparison{}, err
	}
	var keep func(diagrec.TokenGap)
	var finish func() error
	if dump != "" {
		// A regular file is written under a temporary name and renamed into place, so that a failure leaves no
		// partial dump; anything else (/dev/stdout, a pipe) is written directly: renaming over it would
		// replace the device or pipe with a file.
		var tmp *os.File
		var err error
		st, serr := os.Stat(dump)
		direct := serr == nil && !st.Mode().IsRegular()
		if direct {
			tmp, err = os.OpenFile(dump, os.O_WRONLY, 0)
		} else {
			tmp, err = os.CreateTemp(filepath.Dir(dump), ".dump*")
		}
		if err != nil {
			return diagrec.Comparison{}, fmt.Errorf("dump: %w", err)
		}
		if direct {
			defer tmp.Close()
		} else {
			defer os.Remove(tmp.Name())
		}
		w := bufio.NewWriter(tmp)
		csv := strings.HasSuffix(strings.ToLower(dump), ".csv")
		if csv {
			fmt.Fprintln(w, "pos,token,p_a,p_b,delta_sym,log_gap,difficulty")
		}
		enc := json.NewEncoder(w)
		keep = func(g diagrec.TokenGap) {
			if csv {
				fmt.Fprintf(w, "%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", g.Pos, g.Token, g.PA, g.PB, g.DeltaSym, g.LogGap, g.Difficulty)
			} else {
				enc.Encode(g)
			}
		}
		finish = func() error {
			err := w.Flush()
			if direct {
				if err != nil {
					return fmt.Errorf("dump %s: %w", dump, err)
				}
				return nil
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp.Name(), dump)
			}
			if err != nil {
				return fmt.Errorf("dump %s: %w", dump, err)
			}
			return nil
		}
	}
	if progress != nil {
		// Compare hands over every token's row in order; a window is done when its last row is.
		T, total := ma.Config.SeqLen, int64(data.NumWindows(len(toks), ma.Config.SeqLen))
		if windows > 0 {
			total = min(total, int64(windows))
		}
		progress(0, total)
		inner := keep
		keep = func(g diagrec.TokenGap) {
			if inner != nil {
				inner(g)
			}
			if g.Pos%T == 0 {
				progress(int64(g.Pos/T), total)
			}
		}
	}
	cmp, err := Compare(ma, mb, toks, bins, windows, keep)
	if err != nil {
		return diagrec.Comparison{}, fmt.Errorf("compare %s and %s on %s: %w", a, b, tokens, err)
	}
	if finish != nil {
		if err := finish(); err != nil {
			return cmp, err
		}
	}
	return cmp, nil
}
