// Package audit tells how a checkpoint's weights were initialised, or where they are now. It streams every
// tensor of any checkpoint model.ReadConfig accepts (Llama, Mistral, Qwen2, Qwen3, Qwen2-MoE and Qwen3-MoE layouts; one file or
// sharded; float32, float16 or bfloat16), one at a time, and measures the std of each class of matrices (a
// class and shape: expert and shared-expert FFNs of different widths are separate groups), the implied
// γ = ln(1/std)/ln(d_in), and the norm gains.
//
// For an untrained model it names the rule that produced the matrices: the γ rule σ = d_in^(−γ) for some γ (the
// γ is reported), a fixed σ (0.02 being the usual one), Xavier sqrt(2/(d_in+d_out)) or Kaiming sqrt(2/d_in),
// with or without the 1/sqrt(2L) depth scaling of o_proj and down_proj, and per-class overrides of it. A group
// matches a rule when its std and every one of its tensors' stds are within the sampling error of the rule's
// σ: Z (default 5) standard errors, the sample std of n normal draws having relative standard error
// 1/sqrt(2(n−1)), plus the bias that rounding to the stored dtype adds. Norm gains are checked for ones and
// norm biases for zeros. When no rule explains the matrices the model is reported as trained ("trained: no rule
// applies"), with the same numbers telling where the weights are now.
package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/safetensors"
	"github.com/smallinit/smallinit/scale"
)

// DefaultZ is the default tolerance in standard errors of the sampled std.
const DefaultZ = 5

// Options tune Run.
type Options struct {
	Workers  int                     // tensors read and measured at once; ≤ 0: runtime.GOMAXPROCS(0)
	Z        float64                 // tolerance in standard errors; ≤ 0: DefaultZ
	Progress func(done, total int64) // stored bytes measured so far and in all (see scale.StreamOptions)
}

// Tensor is one measured tensor.
type Tensor struct {
	Spec    arch.TensorSpec
	DType   safetensors.DType
	Moments Moments
}

// Group is a class of matrices of one shape (over layers and experts).
type Group struct {
	Class   string  `json:"class"`
	Label   string  `json:"label"` // the class, with the shape when the class has several
	DOut    int     `json:"d_out"`
	DIn     int     `json:"d_in"`
	Tensors int     `json:"tensors"`
	Mean    float64 `json:"mean"`
	Std     float64 `json:"std"`     // pooled over the group's tensors
	MinStd  float64 `json:"min_std"` // smallest per-tensor std
	MaxStd  float64 `json:"max_std"` // largest per-tensor std
	// Gamma is the implied γ = ln(1/std)/ln(d_in) and GammaTol its tolerance (Tol/ln(d_in)).
	Gamma    float64 `json:"gamma"`
	GammaTol float64 `json:"gamma_tol"`
	// Tol is the relative tolerance of the pooled std (Z standard errors plus the dtype's rounding bias).
	Tol float64 `json:"tol"`
	// Matches lists the rules this group matches (the model's rule first when it does).
	Matches []string `json:"matches"`
	// DepthRatio, for o and ffn_down when a base rule explains the model, is the std over the std the rule
	// gives without depth scaling: 1/sqrt(2L) when depth-scaled, 1 when not.
	DepthRatio *float64 `json:"depth_ratio,omitempty"`
	// DeclaredStd is the σ the recorded smallinit_init recipe gives this group, and DeclaredOK whether the
	// measured std matches it.
	DeclaredStd *float64 `json:"declared_std,omitempty"`
	DeclaredOK  *bool    `json:"declared_ok,omitempty"`

	members []Tensor
	shape   arch.TensorSpec // a representative spec (for StdFor)
	mainFit bool            // the main rule explains this group
}

// addMatch records that the group matches r, named as it applies to this group (the depth scaling only
// concerns o and ffn_down).
func (g *Group) addMatch(r rule) {
	if !recipe.DepthScaled(g.Class) {
		r.depth = false
	}
	if s := r.String(); !slices.Contains(g.Matches, s) {
		g.Matches = append(g.Matches, s)
	}
}

// NormCheck summarises the norm gains and biases.
type NormCheck struct {
	Gains      int     `json:"gains"`        // gain tensors (layer norms, final norm, q/k norms)
	Ones       bool    `json:"ones"`         // every gain is 1 (within 1e-6)
	MaxGainDev float64 `json:"max_gain_dev"` // max |g − 1|
	GainMean   float64 `json:"gain_mean"`
	GainStd    float64 `json:"gain_std"`
	Biases     int     `json:"biases"` // LayerNorm bias tensors
	Zeros      bool    `json:"zeros"`  // every bias is 0 (within 1e-6)
	MaxBias    float64 `json:"max_bias"`
}

// Declared is the init recipe config.json records (smallinit_init) and whether the matrices match it.
type Declared struct {
	Recipe  recipe.Init `json:"recipe"`
	Seed    uint64      `json:"seed"`
	Matches bool        `json:"matches"`
}

// Report is the audit of one checkpoint.
type Report struct {
	Model   string    `json:"model"`
	Layers  int       `json:"layers"`
	Params  int64     `json:"params"`
	DTypes  []string  `json:"dtypes"`
	Z       float64   `json:"z"`
	Classes []Group   `json:"classes"`
	Norms   NormCheck `json:"norms"`
	// Rules lists the rules that explain every matrix group on their own (several when they cannot be told
	// apart, e.g. a fixed σ and the γ rule when all matrices share one d_in).
	Rules []string `json:"rules"`
	// Main is the rule that explains the most groups, Overrides the rules of the groups it does not explain
	// (class label → rule), when each of them matches one.
	Main      string            `json:"main_rule,omitempty"`
	Overrides map[string]string `json:"overrides,omitempty"`
	// Gamma is the γ of the main rule when it is the γ rule.
	Gamma *float64 `json:"gamma,omitempty"`
	// DepthScaled says whether o_proj and down_proj carry the 1/sqrt(2L) factor relative to the main rule
	// (absent when no rule explains the model).
	DepthScaled *bool     `json:"depth_scaled,omitempty"`
	Declared    *Declared `json:"declared,omitempty"`
	Trained     bool      `json:"trained"`
	Verdict     string    `json:"verdict"`
	// Extra lists tensors in the checkpoint that the config does not imply (not audited).
	Extra []string `json:"extra_tensors,omitempty"`
}

// Run audits the checkpoint in dir: config.json (model.ReadConfig) and model.safetensors or a sharded index.
// Tensors are read and measured Workers at a time; the model is never in memory.
func Run(dir string, o Options) (Report, error) {
	c, rawInit, err := model.ReadConfig(dir)
	if err != nil {
		return Report{}, err
	}
	r, err := safetensors.OpenModel(dir)
	if err != nil {
		return Report{}, err
	}
	defer r.Close()
	specs := c.Tensors()
	idx := make(map[string]int, len(specs))
	tensors := make([]Tensor, len(specs))
	for i, t := range specs {
		idx[t.Name] = i
		tensors[i].Spec = t
		if info, ok := r.Info(t.Name); ok {
			tensors[i].DType = info.DType
		}
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	err = scale.Stream(r, specs, scale.StreamOptions{Workers: workers, Concurrent: true, Progress: o.Progress},
		func(t arch.TensorSpec, w []float32) error {
			for i, v := range w {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("audit %s: tensor %s element %d is %v", r.Path(), t.Name, i, v)
				}
			}
			tensors[idx[t.Name]].Moments = Measure(w, t.Class == arch.ClassNorm)
			return nil
		})
	if err != nil {
		return Report{}, err
	}
	rep := Analyse(c, tensors, rawInit, o.Z)
	rep.Model = dir
	for _, info := range r.Tensors() {
		if _, ok := idx[info.Name]; !ok {
			rep.Extra = append(rep.Extra, info.Name)
		}
	}
	sort.Strings(rep.Extra)
	return rep, nil
}

// Analyse builds the report from measured tensors (every tensor of c, in any order) and the raw smallinit_init
// record of config.json (nil when absent). z ≤ 0 means DefaultZ.
func Analyse(c arch.Config, tensors []Tensor, rawInit json.RawMessage, z float64) Report {
	if z <= 0 {
		z = DefaultZ
	}
	rep := Report{Layers: c.Layers, Params: c.NumParams(), Z: z}
	dtypes := map[string]bool{}
	var gains, biases Moments
	groupIdx := map[string]int{}
	var groups []Group
	for _, t := range tensors {
		if t.DType != "" {
			dtypes[string(t.DType)] = true
		}
		switch {
		case t.Spec.Class == arch.ClassNorm:
			rep.Norms.Gains++
			gains = gains.add(t.Moments)
			continue
		case t.Spec.Class == arch.ClassNormBias:
			rep.Norms.Biases++
			biases = biases.add(t.Moments)
			continue
		case !t.Spec.IsMatrix():
			continue
		}
		key := fmt.Sprintf("%s %v", t.Spec.Class, t.Spec.Shape)
		i, ok := groupIdx[key]
		if !ok {
			i = len(groups)
			groupIdx[key] = i
			groups = append(groups, Group{Class: t.Spec.Class, DOut: t.Spec.Shape[0], DIn: t.Spec.Shape[1], shape: t.Spec})
		}
		groups[i].members = append(groups[i].members, t)
	}
	for d := range dtypes {
		rep.DTypes = append(rep.DTypes, d)
	}
	sort.Strings(rep.DTypes)
	if gains.N > 0 {
		rep.Norms.MaxGainDev, rep.Norms.GainMean, rep.Norms.GainStd = gains.MaxDev, gains.Mean(), gains.Std()
	}
	rep.Norms.Ones = gains.MaxDev <= 1e-6
	rep.Norms.MaxBias = biases.MaxDev
	rep.Norms.Zeros = biases.MaxDev <= 1e-6

	shapes := map[string]int{}
	for _, g := range groups {
		shapes[g.Class]++
	}
	for i := range groups {
		g := &groups[i]
		g.Label = g.Class
		if shapes[g.Class] > 1 {
			g.Label = fmt.Sprintf("%s [%dx%d]", g.Class, g.DOut, g.DIn)
		}
		var pooled Moments
		g.MinStd = math.Inf(1)
		for _, t := range g.members {
			pooled = pooled.add(t.Moments)
			s := t.Moments.Std()
			g.MinStd, g.MaxStd = min(g.MinStd, s), max(g.MaxStd, s)
		}
		g.Tensors = len(g.members)
		g.Mean, g.Std = pooled.Mean(), pooled.Std()
		g.Tol = tolerance(pooled.N, z, g.members[0].DType, g.Std)
		g.Gamma = gammainit.GammaEff(g.Std, g.DIn)
		g.GammaTol = g.Tol / math.Log(float64(g.DIn))
		g.Matches = []string{}
	}
	decideRules(&rep, groups, c.Layers, z)
	checkDeclared(&rep, groups, c.Layers, z, rawInit)
	rep.Classes = groups
	rep.Verdict = verdict(&rep, groups)
	return rep
}
