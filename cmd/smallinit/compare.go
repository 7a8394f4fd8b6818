package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
)

type compareCmd struct {
	A       string `required:"" name:"a" type:"existingdir" help:"Model A directory."`
	B       string `required:"" name:"b" type:"existingdir" help:"Model B directory."`
	Tokens  string `required:"" type:"existingfile" help:"Token file both models are scored on."`
	Bins    int    `default:"10" help:"Difficulty quantiles."`
	Windows int    `help:"Score at most this many windows (0: all)."`
	Dump    string `type:"path" help:"Write per-token rows to this file (.csv, else JSON lines)."`
	JSON    bool   `name:"json" help:"Print the comparison as JSON."`
}

func (cmd *compareCmd) Run() error {
	if cmd.Bins < 1 {
		return fmt.Errorf("--bins %d: must be positive", cmd.Bins)
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	a, _, err := model.Load(cmd.A, 8, pool)
	if err != nil {
		return err
	}
	b, _, err := model.Load(cmd.B, 8, pool)
	if err != nil {
		return err
	}
	toks, err := data.ReadTokens(cmd.Tokens, min(a.Config.Vocab, b.Config.Vocab))
	if err != nil {
		return err
	}
	var keep func(diag.TokenGap)
	var finish func() error
	if cmd.Dump != "" {
		// A regular file is written under a temporary name and renamed into place, so that a failure leaves no
		// partial dump; anything else (/dev/stdout, a pipe) is written directly: renaming over it would
		// replace the device or pipe with a file.
		var tmp *os.File
		var err error
		st, serr := os.Stat(cmd.Dump)
		direct := serr == nil && !st.Mode().IsRegular()
		if direct {
			tmp, err = os.OpenFile(cmd.Dump, os.O_WRONLY, 0)
		} else {
			tmp, err = os.CreateTemp(filepath.Dir(cmd.Dump), ".dump*")
		}
		if err != nil {
			return fmt.Errorf("--dump: %w", err)
		}
		if direct {
			defer tmp.Close()
		} else {
			defer os.Remove(tmp.Name())
		}
		w := bufio.NewWriter(tmp)
		csv := strings.HasSuffix(strings.ToLower(cmd.Dump), ".csv")
		if csv {
			fmt.Fprintln(w, "pos,token,p_a,p_b,delta_sym,log_gap,difficulty")
		}
		enc := json.NewEncoder(w)
		keep = func(g diag.TokenGap) {
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
					return fmt.Errorf("--dump %s: %w", cmd.Dump, err)
				}
				return nil
			}
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp.Name(), cmd.Dump)
			}
			if err != nil {
				return fmt.Errorf("--dump %s: %w", cmd.Dump, err)
			}
			return nil
		}
	}
	cmp, err := diag.Compare(a, b, toks, cmd.Bins, cmd.Windows, keep)
	if err != nil {
		return fmt.Errorf("compare %s and %s on %s: %w", cmd.A, cmd.B, cmd.Tokens, err)
	}
	if finish != nil {
		if err := finish(); err != nil {
			return err
		}
	}
	if cmd.JSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"a": cmd.A, "b": cmd.B, "tokens": cmd.Tokens, "comparison": cmp})
	}
	fmt.Printf("A = %s\nB = %s\n%d tokens in %d windows: loss A %.4f, loss B %.4f, mean Δ_sym %+.4f, A wins %.1f%% of tokens\n\n",
		cmd.A, cmd.B, cmp.All.Count, cmp.Windows, cmp.All.MeanLossA, cmp.All.MeanLossB, cmp.All.MeanDeltaSym, 100*cmp.All.WinShareA)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bin\tdifficulty\ttokens\tmean Δ_sym\tloss A\tloss B\tloss reduction\tA wins\t")
	for i, bn := range cmp.Bins {
		fmt.Fprintf(tw, "%d\t%.2f-%.2f\t%d\t%+.4f\t%.4f\t%.4f\t%+.4f\t%.1f%%\t\n", i+1, bn.Lo, bn.Hi, bn.Count, bn.MeanDeltaSym, bn.MeanLossA, bn.MeanLossB, bn.LossReduction, 100*bn.WinShareA)
	}
	return tw.Flush()
}
