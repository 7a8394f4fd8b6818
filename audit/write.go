package audit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/internal/finitejson"
	"github.com/smallinit/smallinit/recipe"
)

// MarshalJSON writes non-finite numbers as null (encoding/json rejects them).
func (g Group) MarshalJSON() ([]byte, error) { return finitejson.Marshal(g) }

// MarshalJSON writes non-finite numbers as null.
func (n NormCheck) MarshalJSON() ([]byte, error) { return finitejson.Marshal(n) }

// WriteText prints the report as tables: one row per matrix group, the norms, the rules and the verdict.
func (r Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "model %s: %d layers, %d parameters, %s\n\n", r.Model, r.Layers, r.Params, strings.Join(r.DTypes, "/"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "class\ttensors\td_out×d_in\tmean\tstd\tper-tensor std\t± tol\tγ implied\tmatches")
	for _, g := range r.Classes {
		m := strings.Join(g.Matches, "; ")
		if m == "" {
			m = "-"
		}
		if g.DepthRatio != nil {
			m += fmt.Sprintf(" (depth ratio %.4g)", *g.DepthRatio)
		}
		if g.DeclaredOK != nil && !*g.DeclaredOK {
			m += fmt.Sprintf(" [smallinit_init: %.4g]", *g.DeclaredStd)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d×%d\t%.2g\t%.5g\t%.4g..%.4g\t%.2g%%\t%.4f ± %.1g\t%s\n", g.Label, g.Tensors, g.DOut, g.DIn,
			g.Mean, g.Std, g.MinStd, g.MaxStd, 100*g.Tol, g.Gamma, g.GammaTol, m)
	}
	tw.Flush()
	n := r.Norms
	if n.Gains > 0 {
		state := "all 1"
		if !n.Ones {
			state = fmt.Sprintf("not all 1: mean %.4g, std %.4g, max |g−1| %.4g", n.GainMean, n.GainStd, n.MaxGainDev)
		}
		fmt.Fprintf(w, "\nnorm gains: %d tensors, %s\n", n.Gains, state)
	}
	if n.Biases > 0 {
		state := "all 0"
		if !n.Zeros {
			state = fmt.Sprintf("not all 0: max |b| %.4g", n.MaxBias)
		}
		fmt.Fprintf(w, "norm biases: %d tensors, %s\n", n.Biases, state)
	}
	if r.DepthScaled != nil {
		fmt.Fprintf(w, "o_proj/down_proj depth scaling 1/sqrt(2L) = %.4g: %v\n", 1/recipe.DepthDivisor(arch.ClassO, r.Layers), *r.DepthScaled)
	}
	if d := r.Declared; d != nil {
		fmt.Fprintf(w, "smallinit_init: %s, seed %d: weights match it: %v\n", recipeString(d.Recipe), d.Seed, d.Matches)
	}
	if len(r.Extra) > 0 {
		fmt.Fprintf(w, "%d tensors not implied by config.json (not audited), e.g. %s\n", len(r.Extra), r.Extra[0])
	}
	_, err := fmt.Fprintf(w, "\nverdict: %s\n", r.Verdict)
	return err
}
