// Package gammainit initialises a model's weights by the γ rule of docs/definitions.md §2, W_ij ~ N(0, σ²) with
// σ = d_in^(−γ), and by the baselines beside it (fixed std, Xavier, Kaiming). Every tensor draws from its own
// random stream derived from the seed and the tensor's name, so adding a tensor or a layer leaves the draws of
// all the others unchanged.
//
// The init rule itself is plain data of a run's typed recipe, package recipe's: the rules table (recipe.Rules:
// each rule's name, parameter range and σ expression, from which Validate, recipe.Sigma, the command line's choices,
// the audit's candidates and the Python table derive) and the σ formulas (recipe.Sigma, recipe.Init.StdFor with
// per-class overrides and depth scaling), named with recipe's prefix. This package owns how each tensor class
// starts (StartOf) and the random streams (Stream, Normal), and draws what the recipe says. Apply
// initialises a model in memory; scale.Init streams checkpoints through the same Stream and StdFor, and the
// audit asks StdFor for the σ of each rule it tries. Classes and Table describe the class table to other
// implementations as JSON (Table, committed as python/smallinit_torch/gammainit_table.json, is the
// table for python/ to read instead of keeping its own copy). Record is the init record (a run's init.json, a
// model's smallinit_init) that training, scale.Init, the audit and python/ write and read.
package gammainit

import (
	"math"

	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
)

// GammaEff is the γ a fixed std implies at fan-in d_in: ln(1/std)/ln(d_in) (docs/definitions.md §2).
func GammaEff(std float64, dIn int) float64 { return math.Log(1/std) / math.Log(float64(dIn)) }

// TensorStd is the initialisation record of one tensor: the σ the recipe asked for and the std of the draw.
type TensorStd struct {
	Name     string  `json:"name"`
	Class    string  `json:"class"`
	FanIn    int     `json:"d_in"`
	Intended float64 `json:"intended_std"`
	Drawn    float64 `json:"drawn_std"`
	GammaEff float64 `json:"gamma_eff"` // ln(1/intended)/ln(d_in)
}

// Apply initialises every parameter of m (norm gains 1, norm and q/k/v biases 0, matrices by the recipe) and
// returns, per matrix, the intended and drawn std in buffer order. Under grouped-query attention k_proj and
// v_proj have fewer rows but the same d_in = d, so their σ = d^(−γ) per element is unchanged.
func Apply(m *model.Model, r recipe.Init, seed uint64) ([]TensorStd, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var out []TensorStd
	for _, t := range m.Specs {
		v := m.Params.Flat[t.Offset : t.Offset+t.Size()]
		switch StartOf(t.Class) {
		case StartOnes:
			for i := range v {
				v[i] = 1
			}
			continue
		case StartZeros:
			clear(v)
			continue
		}
		std := r.StdFor(t, m.Config.Layers)
		var ss float64
		Stream(seed, t.Name).Fill(v, std, &ss)
		out = append(out, TensorStd{Name: t.Name, Class: t.Class, FanIn: t.FanIn(), Intended: std,
			Drawn: math.Sqrt(ss / float64(len(v))), GammaEff: GammaEff(std, t.FanIn())})
	}
	return out, nil
}
