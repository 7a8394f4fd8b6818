// Package coordcheck is the μP-style coordinate check: for each width, the residual ratio RMS(F(Norm(x)))/RMS(x)
// of the attention and FFN sub-layers (docs/definitions.md §4) at init and after a few AdamW steps on random
// tokens, and its exponent fitted against width. A plan of kind coordcheck (package experiment) carries its
// Spec; `smallinit coordcheck` and `smallinit study` run it with Run and print it with WriteTable. Nothing is
// written to disk.
package coordcheck

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"text/tabwriter"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/diag/diagrec"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/optim"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/train"
)

// Spec is a coordinate check's widths, steps, learning rate and batch: a plan file's [coordcheck] table.
type Spec struct {
	Widths []int   `toml:"widths"` // model.hidden_size of each point (heads fixed; d_ff follows the width)
	Steps  []int   `toml:"steps"`  // training steps at which to measure
	LR     float64 `toml:"lr"`     // AdamW learning rate of the steps
	Batch  int     `toml:"batch"`  // sequences per step and per measurement
}

// Bounds of a check (the plan's [coordcheck] keys and `smallinit coordcheck`'s flags alike). A width is a
// model.hidden_size, so arch.MaxDim bounds it (the memory check then refuses what this machine cannot hold); a
// coordinate check measures at init and after a few steps, so MaxSteps steps is hours at the widest width and
// more is a typo; MaxPoints widths or steps make a table no one reads, and cost a model each.
const (
	MaxSteps  = 100_000
	MaxPoints = 64
	MaxBatch  = 4096
)

// CheckWidths refuses widths that cannot make a check: fewer than two, more than MaxPoints, one outside
// [1, arch.MaxDim] or one given twice. name is the flag or key that gave them.
func CheckWidths(name string, widths []int) error {
	if len(widths) < 2 || len(widths) > MaxPoints {
		return fmt.Errorf("%s %s: want 2 to %d widths to fit an exponent against", name, ints(widths), MaxPoints)
	}
	for _, w := range widths {
		if w < 1 || w > arch.MaxDim {
			return fmt.Errorf("%s %s: width %d must be in [1, %d] (model.hidden_size)", name, ints(widths), w, arch.MaxDim)
		}
	}
	return unique(name, widths, "width")
}

// CheckSteps refuses steps that cannot make a check: none, more than MaxPoints, one outside [0, MaxSteps] or
// one given twice. name is the flag or key that gave them.
func CheckSteps(name string, steps []int) error {
	if len(steps) < 1 || len(steps) > MaxPoints {
		return fmt.Errorf("%s %s: want 1 to %d steps to measure at", name, ints(steps), MaxPoints)
	}
	for _, s := range steps {
		if s < 0 || s > MaxSteps {
			return fmt.Errorf("%s %s: step %d must be in [0, %d] (a coordinate check measures at init and after a few steps)", name, ints(steps), s, MaxSteps)
		}
	}
	return unique(name, steps, "step")
}

// unique refuses a value given twice (what names the values).
func unique(name string, xs []int, what string) error {
	s := slices.Sorted(slices.Values(xs))
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return fmt.Errorf("%s %s: %s %d given twice", name, ints(xs), what, s[i])
		}
	}
	return nil
}

// ints writes xs as a flag takes them: comma-separated.
func ints(xs []int) string {
	b := make([]byte, 0, 8*len(xs))
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", x)
	}
	return string(b)
}

// Validate checks a plan's [coordcheck] table, naming its keys.
func (s Spec) Validate() error {
	if err := CheckWidths("coordcheck.widths", s.Widths); err != nil {
		return err
	}
	if err := CheckSteps("coordcheck.steps", s.Steps); err != nil {
		return err
	}
	if !(s.LR > 0) || math.IsInf(s.LR, 0) {
		return fmt.Errorf("coordcheck.lr %g: want a finite learning rate > 0", s.LR)
	}
	if s.Batch < 1 || s.Batch > MaxBatch {
		return fmt.Errorf("coordcheck.batch %d: must be in [1, %d]", s.Batch, MaxBatch)
	}
	return nil
}

// Options change a check's values; zero values keep the Spec's.
type Options struct {
	Gamma  float64        // γ of the initialisation (0: the base recipe's init.gamma)
	Widths []int          // widths d
	Steps  []int          // training steps at which to measure
	LR     float64        // AdamW learning rate of the steps
	Seed   uint64         // seed of init and data
	Sets   []override.Set // recipe keys on top of the base and the width (a key without a section is a model key)
}

// WidthError is a coordinate check's failure at one width (its recipe does not load, or it does not fit).
type WidthError struct {
	Width int
	Err   error
}

func (e *WidthError) Error() string { return fmt.Sprintf("width %d: %v", e.Width, e.Err) }
func (e *WidthError) Unwrap() error { return e.Err }

// Run measures, for each width, the residual ratios of the recipe base (a plan's [base]) at that width at init
// and at each step of AdamW on random tokens, and fits their exponent against width. docs/definitions.md §4
// predicts 1 − γ at init for the attention path (two matrices). Every width's recipe is loaded and its memory
// checked before the first is measured, so a width that cannot run is refused before any work.
func Run(ctx context.Context, base []override.Set, s Spec, o Options) (*diagrec.Coordcheck, error) {
	widths, steps, lr := s.Widths, s.Steps, s.LR
	if o.Widths != nil {
		widths = o.Widths
	}
	if o.Steps != nil {
		steps = o.Steps
	}
	if o.LR > 0 {
		lr = o.LR
	}
	if err := CheckWidths("widths", widths); err != nil {
		return nil, err
	}
	if err := CheckSteps("steps", steps); err != nil {
		return nil, err
	}
	widths, steps = slices.Sorted(slices.Values(widths)), slices.Sorted(slices.Values(steps))
	batch := s.Batch
	recipes := make([]recipe.Config, len(widths))
	for i, d := range widths {
		sets := append(append([]override.Set(nil), base...), override.Set{Key: arch.KeyHiddenSize, Value: int64(d)},
			override.Set{Key: recipe.KeySeed, Value: int64(o.Seed)}, override.Set{Key: recipe.KeyDataTrain, Value: "(none: random tokens)"})
		if o.Gamma != 0 {
			sets = append(sets, override.Set{Key: recipe.KeyGamma, Value: o.Gamma})
		}
		sets = append(sets, o.Sets...) // train.LoadSets reads a key without a section as a model key
		rc, err := train.LoadSets("", sets)
		if err != nil {
			return nil, &WidthError{Width: d, Err: err}
		}
		if err := model.CheckMemory(rc.Model.Config, batch, 8*float64(rc.Model.Config.NumParams())); err != nil {
			return nil, &WidthError{Width: d, Err: err}
		}
		recipes[i] = rc
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	res := &diagrec.Coordcheck{}
	for i, d := range widths {
		pts, err := measure(ctx, &recipes[i], batch, steps, lr, o.Seed, pool)
		if err != nil {
			return nil, fmt.Errorf("width %d: %w", d, err)
		}
		res.Gamma = recipes[i].Init.Gamma
		res.Points = append(res.Points, pts...)
	}
	predicted := 1 - res.Gamma
	res.Predicted = &predicted
	res.Fits = fits(res.Points, steps)
	return res, nil
}

// measure builds and initialises the model of rc and returns its residual ratios at each of steps (ascending)
// AdamW steps at rate lr on random tokens.
func measure(ctx context.Context, rc *recipe.Config, batch int, steps []int, lr float64, seed uint64, pool *kernel.Pool) ([]diagrec.CoordPoint, error) {
	c := rc.Model.Config
	m, err := model.New(c, batch, pool)
	if err != nil {
		return nil, err
	}
	if _, err := gammainit.Apply(m, rc.Init, rc.Seed); err != nil {
		return nil, err
	}
	opt, err := optim.NewAdamW(rc.Optimizer, m.Specs, pool)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	probe := make([]int32, batch*c.SeqLen+1)
	for i := range probe {
		probe[i] = int32(rng.IntN(c.Vocab))
	}
	in, tg := make([]int32, batch*c.SeqLen), make([]int32, batch*c.SeqLen)
	var pts []diagrec.CoordPoint
	done := 0
	for _, s := range steps {
		for ; done < s; done++ {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("stopped at step %d of %d: %w", done, s, context.Cause(ctx))
			}
			for i := range in {
				in[i], tg[i] = int32(rng.IntN(c.Vocab)), int32(rng.IntN(c.Vocab))
			}
			if _, err := m.Forward(in, tg); err != nil {
				return nil, err
			}
			m.ZeroGrads()
			m.Backward()
			opt.Update(m.Params.Flat, m.Grads.Flat, lr, optim.ClipScale(opt.GradNorm(m.Grads.Flat), 1))
		}
		st, err := diag.Activations(m, probe, batch, c.SeqLen)
		if err != nil {
			return nil, err
		}
		for _, l := range st.Layers {
			pts = append(pts, diagrec.CoordPoint{Width: c.Dim, Step: s, Layer: l.Layer, HiddenRMS: l.HiddenRMS,
				AttnRatio: l.AttnResidualRatio, FFNRatio: l.FFNResidualRatio})
		}
	}
	return pts, nil
}

// fits are the least-squares slopes of log value against log width of every (step, layer) of points.
func fits(points []diagrec.CoordPoint, steps []int) []diagrec.CoordFit {
	layers := points[len(points)-1].Layer + 1
	var out []diagrec.CoordFit
	for _, s := range steps {
		for l := 0; l < layers; l++ {
			var x, ya, yf, yh []float64
			for _, pt := range points {
				if pt.Step == s && pt.Layer == l {
					x = append(x, math.Log(float64(pt.Width)))
					ya, yf, yh = append(ya, math.Log(pt.AttnRatio)), append(yf, math.Log(pt.FFNRatio)), append(yh, math.Log(pt.HiddenRMS))
				}
			}
			out = append(out, diagrec.CoordFit{Step: s, Layer: l, AttnExp: diag.Slope(x, ya), FFNExp: diag.Slope(x, yf), HiddenEx: diag.Slope(x, yh)})
		}
	}
	return out
}

// WriteTable prints a coordinate check's measurements and fitted exponents.
func WriteTable(w io.Writer, r *diagrec.Coordcheck) error {
	fmt.Fprintf(w, "coordinate check at γ = %g: docs/definitions.md §4 predicts the attention residual ratio of layer 0 ∝ d^%.2f at init\n", r.Gamma, 1-r.Gamma)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "width\tstep\tlayer\thidden RMS\tattn ratio\tffn ratio\t")
	for _, p := range r.Points {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.4g\t%.4g\t%.4g\t\n", p.Width, p.Step, p.Layer, p.HiddenRMS, p.AttnRatio, p.FFNRatio)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nexponents (slope of log value against log width)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tlayer\tattn ratio\tffn ratio\thidden RMS\t")
	for _, f := range r.Fits {
		fmt.Fprintf(tw, "%d\t%d\t%+.3f\t%+.3f\t%+.3f\t\n", f.Step, f.Layer, f.AttnExp, f.FFNExp, f.HiddenEx)
	}
	return tw.Flush()
}
