package gammainit

import (
	"math"
	"sort"

	"github.com/smallinit/smallinit/model"
)

// Start is how a tensor class starts.
type Start string

// The starts of the tensor classes.
const (
	StartDrawn Start = "drawn" // W ~ N(0, σ²), σ from the recipe's rule for the class (StdFor)
	StartOnes  Start = "ones"  // norm gains
	StartZeros Start = "zeros" // norm biases, q/k/v biases, the MoE router's selection bias
)

// StartOf returns how tensors of class start: ones for norm gains, zeros for norm, q/k/v and router biases,
// drawn for every other class (the matrices).
func StartOf(class string) Start {
	switch class {
	case model.ClassNorm:
		return StartOnes
	case model.ClassNormBias, model.ClassQKVBias, model.ClassRouterB:
		return StartZeros
	}
	return StartDrawn
}

// matrixClasses are the classes drawn by a rule, the ones a recipe may override.
var matrixClasses = []string{model.ClassEmbed, model.ClassQ, model.ClassK, model.ClassV, model.ClassGate,
	model.ClassO, model.ClassFFNGate, model.ClassFFNUp, model.ClassFFNDown, model.ClassHead, model.ClassRouter,
	model.ClassShGate}

// ClassNames lists the tensor classes a recipe may override, sorted.
func ClassNames() []string {
	c := append([]string(nil), matrixClasses...)
	sort.Strings(c)
	return c
}

// DepthScaled reports whether depth scaling (Recipe.DepthScale) applies to class: o and ffn_down, the two
// matrices that write into the residual stream (GPT-2's 1/sqrt(2L)).
func DepthScaled(class string) bool { return class == model.ClassO || class == model.ClassFFNDown }

// DepthDivisor is what depth scaling divides the σ of class by in a model of L layers: sqrt(2L) for the
// DepthScaled classes, 1 for the others.
func DepthDivisor(class string, layers int) float64 {
	if DepthScaled(class) {
		return math.Sqrt(2 * float64(layers))
	}
	return 1
}

// ClassInfo is one tensor class as gammainit initialises it.
type ClassInfo struct {
	Class string `json:"class"` // a model.Class* name
	Start Start  `json:"start"`
	// DInAxis and DOutAxis index a drawn tensor's shape, stored [d_out, d_in] as Hugging Face stores it
	// (model.TensorSpec.FanIn; the embedding [V, d] has d_in = d); −1 for classes that are not drawn.
	DInAxis  int `json:"d_in_axis"`
	DOutAxis int `json:"d_out_axis"`
	// DepthScaled says whether Recipe.DepthScale divides the class's σ by sqrt(2L).
	DepthScaled bool `json:"depth_scaled"`
}

// Classes lists every tensor class model.Config.Tensors can produce, drawn classes first (in matrixClasses
// order), then the ones and zeros.
func Classes() []ClassInfo {
	var out []ClassInfo
	for _, c := range append(append([]string(nil), matrixClasses...), model.ClassNorm, model.ClassNormBias,
		model.ClassQKVBias, model.ClassRouterB) {
		ci := ClassInfo{Class: c, Start: StartOf(c), DInAxis: -1, DOutAxis: -1, DepthScaled: DepthScaled(c)}
		if ci.Start == StartDrawn {
			ci.DInAxis, ci.DOutAxis = 1, 0
		}
		out = append(out, ci)
	}
	return out
}
