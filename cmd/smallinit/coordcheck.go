package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/smallinit/smallinit/diag"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/optim"
)

type coordcheckCmd struct {
	Gamma  float64  `default:"1" help:"γ of the initialisation σ = d_in^(-γ)."`
	Widths string   `default:"64,128,256,512" help:"Comma-separated widths d (heads fixed, d_ff = 8d/3 rounded)."`
	Steps  string   `default:"0,1,10" help:"Comma-separated training steps at which to measure."`
	Set    []string `placeholder:"KEY=VALUE" help:"Override a model key of the base shape (tiny preset, T=64, ε=1e-12)."`
	LR     float64  `default:"1e-3" help:"AdamW learning rate of the few training steps."`
	Seed   uint64   `default:"0" help:"Seed of init and data."`
	JSON   bool     `name:"json" help:"Print the measurements and fitted exponents as JSON."`
}

func parseInts(s, flag string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--%s %q: want comma-separated non-negative integers", flag, s)
		}
		out = append(out, v)
	}
	sort.Ints(out)
	return out, nil
}

// Run measures, for each width, the residual ratio RMS(F(Norm(x)))/RMS(x) of the attention and FFN sub-layers
// (SPEC §4) at init and after a few AdamW steps on random tokens, and fits its exponent against width: a
// μP-style coordinate check. SPEC predicts 1 − γ at init for the attention path (two matrices).
func (cmd *coordcheckCmd) Run() error {
	widths, err := parseInts(cmd.Widths, "widths")
	if err != nil {
		return err
	}
	steps, err := parseInts(cmd.Steps, "steps")
	if err != nil {
		return err
	}
	if len(widths) < 2 {
		return fmt.Errorf("--widths: need at least two widths to fit an exponent")
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	var points []diag.CoordPoint
	for _, d := range widths {
		c, _, err := configFromPreset("tiny", append([]string{"max_position_embeddings=64", "norm_eps=1e-12", fmt.Sprintf("hidden_size=%d", d)}, cmd.Set...))
		if err != nil {
			return err
		}
		const batch = 8
		if err := model.CheckMemory(c, batch, 8*float64(c.NumParams())); err != nil {
			return fmt.Errorf("--widths %d: %w", d, err)
		}
		m, err := model.New(c, batch, pool)
		if err != nil {
			return err
		}
		if _, err := gammainit.Apply(m, gammainit.Recipe{Rule: gammainit.RuleGamma, Gamma: cmd.Gamma}, cmd.Seed); err != nil {
			return err
		}
		opt, err := optim.NewAdamW(optim.DefaultAdamW(), m.Specs, pool)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(cmd.Seed, 99))
		probe := make([]int32, batch*c.SeqLen+1)
		for i := range probe {
			probe[i] = int32(rng.IntN(c.Vocab))
		}
		in, tg := make([]int32, batch*c.SeqLen), make([]int32, batch*c.SeqLen)
		done := 0
		for _, s := range steps {
			for ; done < s; done++ {
				for i := range in {
					in[i], tg[i] = int32(rng.IntN(c.Vocab)), int32(rng.IntN(c.Vocab))
				}
				if _, err := m.Forward(in, tg); err != nil {
					return err
				}
				m.ZeroGrads()
				m.Backward()
				opt.Update(m.Params.Flat, m.Grads.Flat, cmd.LR, optim.ClipScale(opt.GradNorm(m.Grads.Flat), 1))
			}
			st, err := diag.Activations(m, probe, batch, c.SeqLen)
			if err != nil {
				return err
			}
			for _, l := range st.Layers {
				points = append(points, diag.CoordPoint{Width: d, Step: s, Layer: l.Layer, HiddenRMS: l.HiddenRMS,
					AttnRatio: l.AttnResidualRatio, FFNRatio: l.FFNResidualRatio})
			}
		}
	}
	var fits []diag.CoordFit
	layers := points[len(points)-1].Layer + 1
	for _, s := range steps {
		for l := 0; l < layers; l++ {
			var x, ya, yf, yh []float64
			for _, p := range points {
				if p.Step == s && p.Layer == l {
					x = append(x, math.Log(float64(p.Width)))
					ya, yf, yh = append(ya, math.Log(p.AttnRatio)), append(yf, math.Log(p.FFNRatio)), append(yh, math.Log(p.HiddenRMS))
				}
			}
			fits = append(fits, diag.CoordFit{Step: s, Layer: l, AttnExp: diag.Slope(x, ya), FFNExp: diag.Slope(x, yf), HiddenEx: diag.Slope(x, yh)})
		}
	}
	if cmd.JSON {
		predicted := 1 - cmd.Gamma
		return json.NewEncoder(os.Stdout).Encode(diag.Coordcheck{Gamma: cmd.Gamma, Predicted: &predicted, Points: points, Fits: fits})
	}
	fmt.Printf("coordinate check at γ = %g: SPEC predicts the attention residual ratio of layer 0 ∝ d^%.2f at init\n", cmd.Gamma, 1-cmd.Gamma)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "width\tstep\tlayer\thidden RMS\tattn ratio\tffn ratio\t")
	for _, p := range points {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.4g\t%.4g\t%.4g\t\n", p.Width, p.Step, p.Layer, p.HiddenRMS, p.AttnRatio, p.FFNRatio)
	}
	tw.Flush()
	fmt.Println("\nexponents (slope of log value against log width)")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tlayer\tattn ratio\tffn ratio\thidden RMS\t")
	for _, f := range fits {
		fmt.Fprintf(tw, "%d\t%d\t%+.3f\t%+.3f\t%+.3f\t\n", f.Step, f.Layer, f.AttnExp, f.FFNExp, f.HiddenEx)
	}
	return tw.Flush()
}
