package gammainit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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

// Dims are the sizes a drawn tensor's σ depends on.
type Dims struct {
	DIn    int `json:"d_in"`
	DOut   int `json:"d_out"`
	Layers int `json:"layers"`
}

// SigmaCase is the σ a recipe gives one drawn class at some dims, as StdFor computes it.
type SigmaCase struct {
	Class  string  `json:"class"`
	Dims   Dims    `json:"dims"`
	Recipe Recipe  `json:"recipe"`
	Sigma  float64 `json:"sigma"`
}

// Table is gammainit's class table: every class (how it starts, which shape axis is d_in, whether depth
// scaling applies) and the σ of every drawn class under a set of recipes and dims. It is written as JSON for
// implementations outside Go (python/) to read, so that they take their class map from this package and can
// check their σ formulas against its numbers instead of keeping copies that drift.
type Table struct {
	Rules   []string    `json:"rules"` // RuleGamma, RuleFixed, RuleXavier, RuleKaiming
	Classes []ClassInfo `json:"classes"`
	Sigmas  []SigmaCase `json:"sigmas"`
}

// NewTable builds the table for every drawn class at every dims under every recipe (each must be valid).
func NewTable(dims []Dims, recipes []Recipe) (Table, error) {
	t := Table{Rules: []string{RuleGamma, RuleFixed, RuleXavier, RuleKaiming}, Classes: Classes()}
	for i, r := range recipes {
		if err := r.Validate(); err != nil {
			return Table{}, fmt.Errorf("class table: recipe %d: %w", i, err)
		}
	}
	for _, ci := range t.Classes {
		if ci.Start != StartDrawn {
			continue
		}
		for _, d := range dims {
			if d.DIn < 1 || d.DOut < 1 || d.Layers < 1 {
				return Table{}, fmt.Errorf("class table: dims %+v: every size must be ≥ 1", d)
			}
			spec := model.TensorSpec{Class: ci.Class, Shape: []int{d.DOut, d.DIn}}
			for _, r := range recipes {
				t.Sigmas = append(t.Sigmas, SigmaCase{Class: ci.Class, Dims: d, Recipe: r, Sigma: r.StdFor(spec, d.Layers)})
			}
		}
	}
	return t, nil
}

// DefaultTable is the table for the Python package to read and check itself against
// (testdata/class_table.json): d_in and d_out from 128 to 5504, square and not (the tiny preset's d = 128,
// d_ff = 384 and V = 4096, the 1.5b preset's d = 2048 and d_ff = 5504), at 4 and 28 layers, under γ = 0.5,
// 0.75 and 1, fixed 0.02, Xavier and Kaiming, each with and without depth scaling, plus the per-class
// overrides a study uses (an embedding at fixed σ, a head at γ = 0.5, an o_proj by Kaiming).
func DefaultTable() Table {
	dims := []Dims{{128, 128, 4}, {128, 384, 4}, {384, 128, 4}, {128, 4096, 4}, {2048, 5504, 28}}
	var recipes []Recipe
	for _, depth := range []bool{false, true} {
		recipes = append(recipes,
			Recipe{Rule: RuleGamma, Gamma: 0.5, DepthScale: depth},
			Recipe{Rule: RuleGamma, Gamma: 0.75, DepthScale: depth},
			Recipe{Rule: RuleGamma, Gamma: 1, DepthScale: depth},
			Recipe{Rule: RuleFixed, Std: 0.02, DepthScale: depth},
			Recipe{Rule: RuleXavier, DepthScale: depth},
			Recipe{Rule: RuleKaiming, DepthScale: depth})
	}
	std, half := 0.02, 0.5
	recipes = append(recipes, Recipe{Rule: RuleGamma, Gamma: 1, Classes: map[string]Override{
		model.ClassEmbed: {Std: &std}, model.ClassHead: {Gamma: &half}, model.ClassO: {Rule: RuleKaiming}}})
	t, err := NewTable(dims, recipes)
	if err != nil {
		panic(err) // the recipes and dims above are valid
	}
	return t
}

// WriteJSON writes the table as JSON, one class and one σ case a line (so that a change to the table reads as
// a diff of the lines it touches), with a trailing newline; numbers are written in the shortest form that
// reads back as the same float64.
func (t Table) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	list := func(key string, n int, item func(i int) any, last bool) error {
		fmt.Fprintf(&b, "  %q: [", key)
		for i := 0; i < n; i++ {
			line, err := json.Marshal(item(i))
			if err != nil {
				return fmt.Errorf("class table: %w", err)
			}
			sep := ","
			if i == n-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "\n    %s%s", line, sep)
		}
		if n > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString("]")
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
		return nil
	}
	b.WriteString("{\n")
	if err := list("rules", len(t.Rules), func(i int) any { return t.Rules[i] }, false); err != nil {
		return err
	}
	if err := list("classes", len(t.Classes), func(i int) any { return t.Classes[i] }, false); err != nil {
		return err
	}
	if err := list("sigmas", len(t.Sigmas), func(i int) any { return t.Sigmas[i] }, true); err != nil {
		return err
	}
	b.WriteString("}\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("class table: %w", err)
	}
	return nil
}
