package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
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

// CoordOptions change a coordinate-check plan's values; zero values keep the plan's.
type CoordOptions struct {
	Gamma  float64        // γ of the initialisation (0: the plan's init.gamma)
	Widths []int          // widths d
	Steps  []int          // training steps at which to measure
	LR     float64        // AdamW learning rate of the steps
	Seed   uint64         // seed of init and data
	Sets   []override.Set // recipe keys on top of the plan's base and the width (a key without a section is a model key)
}

// WidthError is a coordinate check's failure at one width (its recipe does not load, or it does not fit).
type WidthError struct {
	Width int
	Err   error
}

func (e *WidthError) Error() string { return fmt.Sprintf("width %d: %v", e.Width, e.Err) }
func (e *WidthError) Unwrap() error { return e.Err }

// Coordcheck measures, for each width, the residual ratio RMS(F(Norm(x)))/RMS(x) of the attention and FFN
// sub-layers (docs/definitions.md §4) at init and after a few AdamW steps on random tokens, and fits its exponent against
// width: a μP-style coordinate check. docs/definitions.md §4 predicts 1 − γ at init for the attention path (two matrices).
func Coordcheck(ctx context.Context, p *Plan, o CoordOptions) (*diagrec.Coordcheck, error) {
	if p.Kind != KindCoordcheck {
		return nil, fmt.Errorf("plan %s is a %s plan, not a coordinate check", p.Name, p.Kind)
	}
	widths, steps, lr := p.Coord.Widths, p.Coord.Steps, p.Coord.LR
	if o.Widths != nil {
		widths = o.Widths
	}
	if o.Steps != nil {
		steps = o.Steps
	}
	if o.LR > 0 {
		lr = o.LR
	}
	widths, steps = sorted(widths), sorted(steps)
	if len(widths) < 2 {
		return nil, fmt.Errorf("widths %v: need at least two widths to fit an exponent", widths)
	}
	if widths[0] < 1 || steps[0] < 0 {
		return nil, fmt.Errorf("widths %v and steps %v: want positive widths and non-negative steps", widths, steps)
	}
	batch := p.Coord.Batch
	pool := kernel.NewPool(0)
	defer pool.Close()
	res := &diagrec.Coordcheck{}
	for _, d := range widths {
		sets := append(append([]override.Set(nil), p.Base...), override.Set{Key: arch.KeyHiddenSize, Value: int64(d)},
			override.Set{Key: recipe.KeySeed, Value: int64(o.Seed)}, override.Set{Key: recipe.KeyDataTrain, Value: "(none: random tokens)"})
		if o.Gamma != 0 {
			sets = append(sets, override.Set{Key: recipe.KeyGamma, Value: o.Gamma})
		}
		sets = append(sets, o.Sets...) // train.LoadSets reads a key without a section as a model key
		rc, err := train.LoadSets("", sets)
		if err != nil {
			return nil, &WidthError{Width: d, Err: err}
		}
		c := rc.Model.Config
		res.Gamma = rc.Init.Gamma
		if err := model.CheckMemory(c, batch, 8*float64(c.NumParams())); err != nil {
			return nil, &WidthError{Width: d, Err: err}
		}
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
		rng := rand.New(rand.NewPCG(o.Seed, 99))
		probe := make([]int32, batch*c.SeqLen+1)
		for i := range probe {
			probe[i] = int32(rng.IntN(c.Vocab))
		}
		in, tg := make([]int32, batch*c.SeqLen), make([]int32, batch*c.SeqLen)
		done := 0
		for _, s := range steps {
			for ; done < s; done++ {
				if err := ctx.Err(); err != nil {
					return nil, err
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
				res.Points = append(res.Points, diagrec.CoordPoint{Width: d, Step: s, Layer: l.Layer, HiddenRMS: l.HiddenRMS,
					AttnRatio: l.AttnResidualRatio, FFNRatio: l.FFNResidualRatio})
			}
		}
	}
	predicted := 1 - res.Gamma
	res.Predicted = &predicted
	layers := res.Points[len(res.Points)-1].Layer + 1
	for _, s := range steps {
		for l := 0; l < layers; l++ {
			var x, ya, yf, yh []float64
			for _, pt := range res.Points {
				if pt.Step == s && pt.Layer == l {
					x = append(x, math.Log(float64(pt.Width)))
					ya, yf, yh = append(ya, math.Log(pt.AttnRatio)), append(yf, math.Log(pt.FFNRatio)), append(yh, math.Log(pt.HiddenRMS))
				}
			}
			res.Fits = append(res.Fits, diagrec.CoordFit{Step: s, Layer: l, AttnExp: diag.Slope(x, ya), FFNExp: diag.Slope(x, yf), HiddenEx: diag.Slope(x, yh)})
		}
	}
	return res, nil
}

// WriteCoordTable prints a coordinate check's measurements and fitted exponents.
func WriteCoordTable(w io.Writer, r *diagrec.Coordcheck) error {
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

func sorted(xs []int) []int {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	return s
}
