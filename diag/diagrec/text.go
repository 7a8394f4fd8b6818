package diagrec

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints the comparison of models a and b: the totals and one line per difficulty bin.
func (c Comparison) WriteText(w io.Writer, a, b string) error {
	fmt.Fprintf(w, "A = %s\nB = %s\n%d tokens in %d windows: loss A %.4f, loss B %.4f, mean Δ_sym %+.4f, A wins %.1f%% of tokens\n\n",
		a, b, c.All.Count, c.Windows, c.All.MeanLossA, c.All.MeanLossB, c.All.MeanDeltaSym, 100*c.All.WinShareA)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bin\tdifficulty\ttokens\tmean Δ_sym\tloss A\tloss B\tloss reduction\tA wins\t")
	for i, bn := range c.Bins {
		fmt.Fprintf(tw, "%d\t%.2f-%.2f\t%d\t%+.4f\t%.4f\t%.4f\t%+.4f\t%.1f%%\t\n", i+1, bn.Lo, bn.Hi, bn.Count, bn.MeanDeltaSym, bn.MeanLossA, bn.MeanLossB, bn.LossReduction, 100*bn.WinShareA)
	}
	return tw.Flush()
}
