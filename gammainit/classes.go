package gammainit

import (
	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/recipe"
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
	case arch.ClassNorm:
		return StartOnes
	case arch.ClassNormBias, arch.ClassQKVBias, arch.ClassRouterB:
		return StartZeros
	}
	return StartDrawn
}

// ClassInfo is one tensor class as gammainit initialises it.
type ClassInfo struct {
	Class string `json:"class"` // an arch.Class* name
	Start Start  `json:"start"`
	// DInAxis and DOutAxis index a drawn tensor's shape, stored [d_out, d_in] as Hugging Face stores it
	// (arch.TensorSpec.FanIn; the embedding [V, d] has d_in = d); −1 for classes that are not drawn.
	DInAxis  int `json:"d_in_axis"`
	DOutAxis int `json:"d_out_axis"`
	// DepthScaled says whether recipe.Init.DepthScale divides the class's σ by sqrt(2L).
	DepthScaled bool `json:"depth_scaled"`
}

// Classes lists every tensor class arch.Config.Tensors can produce, drawn classes first (in recipe.MatrixClasses
// order), then the ones and zeros.
func Classes() []ClassInfo {
	var out []ClassInfo
	for _, c := range append(recipe.MatrixClasses(), arch.ClassNorm, arch.ClassNormBias,
		arch.ClassQKVBias, arch.ClassRouterB) {
		ci := ClassInfo{Class: c, Start: StartOf(c), DInAxis: -1, DOutAxis: -1, DepthScaled: recipe.DepthScaled(c)}
		if ci.Start == StartDrawn {
			ci.DInAxis, ci.DOutAxis = 1, 0
		}
		out = append(out, ci)
	}
	return out
}
