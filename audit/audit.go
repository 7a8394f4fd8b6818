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
	"github.com/smallinit/smallinit/internal/finitejson"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/model"
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

// Moments are the float64 sums of one tensor's values, from which its mean and std follow.
type Moments struct {
	N     int64   `json:"n"`
	Sum   float64 `json:"sum"`
	SumSq float64 `json:"sum_sq"`
	// MaxDev is max |x − 1| for norm gains and max |x| for everything else.
	MaxDev float64 `json:"max_dev"`
}

// Measure returns the moments of w; gain says whether MaxDev is measured from 1 (norm gains) or from 0.
func Measure(w []float32, gain bool) Moments {
	m := Moments{N: int64(len(w))}
	ref := 0.0
	if gain {
		ref = 1
	}
	// Four partial sums keep the float64 dependency chains short.
	var s, q [4]float64
	var dev float64
	i := 0
	for ; i+4 <= len(w); i += 4 {
		for k := range 4 {
			x := float64(w[i+k])
			s[k] += x
			q[k] += x * x
			dev = max(dev, math.Abs(x-ref))
		}
	}
	for ; i < len(w); i++ {
		x := float64(w[i])
		s[0] += x
		q[0] += x * x
		dev = max(dev, math.Abs(x-ref))
	}
	m.Sum, m.SumSq, m.MaxDev = s[0]+s[1]+s[2]+s[3], q[0]+q[1]+q[2]+q[3], dev
	return m
}

// add pools two moments.
func (m Moments) add(o Moments) Moments {
	return Moments{N: m.N + o.N, Sum: m.Sum + o.Sum, SumSq: m.SumSq + o.SumSq, MaxDev: max(m.MaxDev, o.MaxDev)}
}

// Mean is the sample mean.
func (m Moments) Mean() float64 { return m.Sum / float64(m.N) }

// Std is the sample standard deviation (n − 1 in the denominator; 0 for fewer than 2 values).
func (m Moments) Std() float64 {
	if m.N < 2 {
		return 0
	}
	v := (m.SumSq - m.Sum*m.Sum/float64(m.N)) / float64(m.N-1)
	return math.Sqrt(max(v, 0))
}

// Tensor is one measured tensor.
type Tensor struct {
	Spec    model.TensorSpec
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
	shape   model.TensorSpec // a representative spec (for StdFor)
	mainFit bool             // the main rule explains this group
}

// addMatch records that the group matches r, named as it applies to this group (the depth scaling only
// concerns o and ffn_down).
func (g *Group) addMatch(r rule) {
	if !gammainit.DepthScaled(g.Class) {
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
	Recipe  gammainit.Recipe `json:"recipe"`
	Seed    uint64           `json:"seed"`
	Matches bool             `json:"matches"`
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
		func(t model.TensorSpec, w []float32) error {
			for i, v := range w {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return fmt.Errorf("audit %s: tensor %s element %d is %v", r.Path(), t.Name, i, v)
				}
			}
			tensors[idx[t.Name]].Moments = Measure(w, t.Class == model.ClassNorm)
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
func Analyse(c model.Config, tensors []Tensor, rawInit json.RawMessage, z float64) Report {
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
		case t.Spec.Class == model.ClassNorm:
			rep.Norms.Gains++
			gains = gains.add(t.Moments)
			continue
		case t.Spec.Class == model.ClassNormBias:
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

// tolerance is the relative tolerance of the std of n draws stored as dtype: z standard errors
// (1/sqrt(2(n−1))) plus the upward bias of rounding to the dtype (half the relative variance of the rounding
// error: 2^−2(p+1)/3 for p mantissa bits, plus the absolute step of the subnormals, which matters only for
// tiny stds in float16 and 8-bit floats), plus 1e-6 for the float32 arithmetic.
func tolerance(n int64, z float64, dtype safetensors.DType, std float64) float64 {
	t := z/math.Sqrt(2*float64(max(n-1, 1))) + 1e-6
	var p, sub float64
	switch dtype {
	case safetensors.BF16:
		p, sub = 7, 0
	case safetensors.F16:
		p, sub = 10, math.Ldexp(1, -24)
	case safetensors.F8E4M3:
		p, sub = 3, math.Ldexp(1, -9)
	case safetensors.F8E5M2:
		p, sub = 2, math.Ldexp(1, -16)
	default:
		return t
	}
	eps := math.Ldexp(1, -int(p)-1)
	rel := eps * eps / 3
	if std > 0 {
		rel += sub * sub / (12 * std * std)
	}
	return t + rel/2
}

// ruleZero is a matrix of zeros (as some recipes start o_proj or the head).
const ruleZero = "zero"

// rule is a candidate initialisation rule.
type rule struct {
	kind  string  // a rule of gammainit's table (gammainit.Rules), or ruleZero
	param float64 // γ or σ
	depth bool    // × 1/sqrt(2L) on o and ffn_down
	// paramTol is the relative uncertainty the rule's σ inherits from an estimated parameter, per unit of
	// ln(d_in) for γ (so that the σ uncertainty at fan-in d is paramTol·ln d) and plain for a fixed σ.
	paramTol float64
}

func (r rule) String() string {
	if r.kind == ruleZero {
		return "zeros"
	}
	row, _ := gammainit.LookupRule(r.kind)
	s := row.AuditName
	if row.Param != "" {
		s = fmt.Sprintf(row.AuditName, trim(r.param, 3))
	}
	if r.depth {
		s += " with 1/sqrt(2L) on o_proj/down_proj"
	}
	return s
}

// trim formats x with at most digits significant digits, without trailing zeros.
func trim(x float64, digits int) string {
	s := fmt.Sprintf("%.*g", digits, x)
	if strings.ContainsAny(s, "e") {
		return s
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// recipe is the rule as a gammainit recipe (not for ruleZero), which is what gives its σ: the audit writes no
// σ formula of its own.
func (r rule) recipe() gammainit.Recipe {
	rec := gammainit.Recipe{Rule: r.kind, DepthScale: r.depth}
	row, _ := gammainit.LookupRule(r.kind)
	switch row.Param {
	case gammainit.ParamGamma:
		rec.Gamma = r.param
	case gammainit.ParamStd:
		rec.Std = r.param
	}
	return rec
}

// sigma is the σ the rule gives the group's tensors in a model of L layers: gammainit's StdFor.
func (r rule) sigma(g *Group, layers int) float64 { return r.recipe().StdFor(g.shape, layers) }

// divisor is what the rule's depth scaling divides a group's σ by (1 without depth scaling).
func (r rule) divisor(class string, layers int) float64 {
	if r.depth {
		return gammainit.DepthDivisor(class, layers)
	}
	return 1
}

// matches reports whether every tensor of g, and g pooled, has the std the rule predicts.
func (r rule) matches(g *Group, layers int, z float64) bool {
	if r.kind == ruleZero {
		for _, t := range g.members {
			if t.Moments.MaxDev != 0 {
				return false
			}
		}
		return true
	}
	if !(g.Std > 0) {
		return false
	}
	want := r.sigma(g, layers)
	extra := r.paramTol
	if r.kind == gammainit.RuleGamma {
		extra *= math.Log(float64(g.DIn))
	}
	if math.Abs(g.Std/want-1) > g.Tol+extra {
		return false
	}
	for _, t := range g.members {
		s := t.Moments.Std()
		if math.Abs(s/want-1) > tolerance(t.Moments.N, z, t.DType, s)+extra {
			return false
		}
	}
	return true
}

// namedRules are the rules of gammainit's table the audit tries as they stand: each rule without a parameter,
// and each rule with a parameter at the values its row asks the audit to try (fixed std 0.02).
func namedRules(depth bool) []rule {
	var rs []rule
	for _, row := range gammainit.Rules() {
		if row.Param == "" {
			rs = append(rs, rule{kind: row.Name, depth: depth})
		}
		for _, p := range row.AuditTries {
			rs = append(rs, rule{kind: row.Name, param: p, depth: depth})
		}
	}
	return rs
}

// candidates are the rules worth trying on groups: the named ones, and the γ rule and the fixed rule with the
// parameter each group implies, with and without depth scaling.
func candidates(groups []Group, layers int) []rule {
	rs := []rule{{kind: ruleZero}}
	for _, depth := range []bool{false, true} {
		if depth && !hasDepthClass(groups) {
			break
		}
		rs = append(rs, namedRules(depth)...)
		for i := range groups {
			g := &groups[i]
			if g.Std <= 0 {
				continue
			}
			div := rule{depth: depth}.divisor(g.Class, layers)
			lnD := math.Log(float64(g.DIn))
			rs = append(rs, rule{kind: gammainit.RuleGamma, param: gammainit.GammaEff(g.Std*div, g.DIn), depth: depth, paramTol: g.Tol / lnD},
				rule{kind: gammainit.RuleFixed, param: g.Std * div, depth: depth, paramTol: g.Tol})
		}
	}
	return rs
}

func hasDepthClass(groups []Group) bool {
	for _, g := range groups {
		if gammainit.DepthScaled(g.Class) {
			return true
		}
	}
	return false
}

// refine re-estimates a γ or fixed-σ rule's parameter from the groups it explains (inverse-variance weighted),
// which is more precise than the single group it came from.
func refine(r rule, groups []Group, explained []int, layers int) rule {
	if r.kind != gammainit.RuleGamma && !(r.kind == gammainit.RuleFixed && r.paramTol > 0) {
		return r
	}
	var sw, swx float64
	for _, i := range explained {
		g := &groups[i]
		div := r.divisor(g.Class, layers)
		var x, sd float64
		if r.kind == gammainit.RuleGamma {
			x, sd = gammainit.GammaEff(g.Std*div, g.DIn), g.Tol/math.Log(float64(g.DIn))
		} else {
			x, sd = g.Std*div, g.Tol*g.Std*div
		}
		w := 1 / (sd * sd)
		sw += w
		swx += w * x
	}
	if sw == 0 {
		return r
	}
	out := r
	out.param = swx / sw
	if r.kind == gammainit.RuleGamma {
		out.paramTol = 1 / math.Sqrt(sw)
	} else {
		out.paramTol = 1 / math.Sqrt(sw) / out.param
	}
	return out
}

// explained returns the indices of the groups rule r matches.
func explained(r rule, groups []Group, layers int, z float64) []int {
	var out []int
	for i := range groups {
		if r.matches(&groups[i], layers, z) {
			out = append(out, i)
		}
	}
	return out
}

// named reports whether r is a rule of its own (fixed 0.02, Xavier, Kaiming, zeros: a rule without a
// parameter or one of namedRules' values) rather than one whose parameter was estimated from the groups.
func (r rule) named() bool {
	return r.kind != gammainit.RuleGamma && r.paramTol == 0
}

// ruleOrder ranks rules that explain the same groups: rules without a parameter first, then named parameter
// values (fixed 0.02), then the γ rule, then an estimated fixed σ.
func ruleOrder(r rule) int {
	row, _ := gammainit.LookupRule(r.kind)
	switch {
	case r.kind == ruleZero, row.Param == "":
		return 0
	case r.kind == gammainit.RuleGamma:
		return 2
	case r.paramTol == 0:
		return 1
	}
	return 3
}

// decideRules finds the rules that explain every group, the main rule (most groups explained) and the
// per-class overrides of the groups it leaves out.
func decideRules(rep *Report, groups []Group, layers int, z float64) {
	rep.Rules = []string{}
	if len(groups) == 0 {
		return
	}
	type fit struct {
		r   rule
		exp []int
	}
	var fits []fit
	seen := map[string]bool{}
	for _, r := range candidates(groups, layers) {
		exp := explained(r, groups, layers, z)
		if len(exp) == 0 {
			continue
		}
		if rr := refine(r, groups, exp, layers); rr != r {
			if e2 := explained(rr, groups, layers, z); len(e2) >= len(exp) {
				r, exp = rr, e2
			}
		}
		// A parameter estimated from one group always fits that group: such a rule means something only
		// when it explains a second group too (or the model has a single group).
		if !r.named() && len(exp) < min(2, len(groups)) {
			continue
		}
		// One rule per kind, depth scaling and set of groups explained (estimates from different groups
		// differ in the last digit).
		key := fmt.Sprint(r.kind, r.depth, exp)
		if r.named() {
			key = r.String()
		}
		if !seen[key] && !seen[r.String()] {
			seen[key], seen[r.String()] = true, true
			fits = append(fits, fit{r, exp})
		}
	}
	sort.SliceStable(fits, func(i, j int) bool {
		if len(fits[i].exp) != len(fits[j].exp) {
			return len(fits[i].exp) > len(fits[j].exp)
		}
		return ruleOrder(fits[i].r) < ruleOrder(fits[j].r)
	})
	for k, f := range fits {
		all := len(f.exp) == len(groups)
		if all {
			rep.Rules = append(rep.Rules, f.r.String())
		}
		if k == 0 || all || f.r.named() {
			for _, i := range f.exp {
				groups[i].addMatch(f.r)
				groups[i].mainFit = groups[i].mainFit || k == 0
			}
		}
	}
	if len(fits) == 0 {
		return
	}
	main := fits[0]
	rep.Main = main.r.String()
	if main.r.kind == gammainit.RuleGamma {
		g := main.r.param
		rep.Gamma = &g
	}
	if hasDepthClass(groups) && main.r.kind != ruleZero {
		d := main.r.depth
		rep.DepthScaled = &d
		base := main.r
		base.depth = false
		for i := range groups {
			if g := &groups[i]; gammainit.DepthScaled(g.Class) {
				ratio := g.Std / base.sigma(g, layers)
				g.DepthRatio = &ratio
			}
		}
	}
	// Overrides: a group the main rule leaves out may still match a named rule or a round γ (a multiple of
	// 0.05), as a per-class override of a recipe would give.
	in := map[int]bool{}
	for _, i := range main.exp {
		in[i] = true
	}
	for i := range groups {
		if in[i] {
			continue
		}
		g := &groups[i]
		if rep.Overrides == nil {
			rep.Overrides = map[string]string{}
		}
		rep.Overrides[g.Label] = ""
		for _, depth := range []bool{main.r.depth, !main.r.depth} {
			div := rule{depth: depth}.divisor(g.Class, layers)
			tries := append([]rule{{kind: ruleZero}}, namedRules(depth)...)
			if g.Std > 0 {
				tries = append(tries, rule{kind: gammainit.RuleGamma, depth: depth,
					param: math.Round(20*gammainit.GammaEff(g.Std*div, g.DIn)) / 20})
			}
			for _, r := range tries {
				if r.matches(g, layers, z) {
					rep.Overrides[g.Label] = r.String()
					g.addMatch(r)
					break
				}
			}
			if rep.Overrides[g.Label] != "" {
				break
			}
		}
	}
}

// checkDeclared compares the groups with the recipe recorded in config.json, if any.
func checkDeclared(rep *Report, groups []Group, layers int, z float64, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var rec struct {
		Recipe *gammainit.Recipe `json:"recipe"`
		Seed   uint64            `json:"seed"`
	}
	if json.Unmarshal(raw, &rec) != nil || rec.Recipe == nil || rec.Recipe.Validate() != nil {
		return
	}
	d := &Declared{Recipe: *rec.Recipe, Seed: rec.Seed, Matches: true}
	for i := range groups {
		g := &groups[i]
		want := rec.Recipe.StdFor(g.shape, layers)
		ok := rule{kind: gammainit.RuleFixed, param: want}.matches(g, layers, z)
		g.DeclaredStd, g.DeclaredOK = &want, &ok
		d.Matches = d.Matches && ok
	}
	rep.Declared = d
}

// verdict decides trained versus untrained and says it in one line. A model is untrained when its matrices are
// explained (by one rule, or by a main rule and per-class overrides) and its norm gains are still 1 and its
// biases 0; moved norms make it trained even when the matrices still fit a rule.
func verdict(rep *Report, groups []Group) string {
	explained := rep.Main != "" && len(groups) > 0
	for _, o := range rep.Overrides {
		if o == "" {
			explained = false
		}
	}
	fresh := rep.Norms.Ones && rep.Norms.Zeros
	var desc strings.Builder
	if explained {
		if len(rep.Rules) > 0 {
			desc.WriteString(strings.Join(rep.Rules, " ≡ "))
		} else {
			desc.WriteString(rep.Main)
			var labels []string
			for l := range rep.Overrides {
				labels = append(labels, l)
			}
			sort.Strings(labels)
			for i, l := range labels {
				sep := ", "
				if i == 0 {
					sep = "; overrides: "
				}
				desc.WriteString(sep + l + " " + rep.Overrides[l])
			}
		}
	}
	var b strings.Builder
	switch {
	case explained && fresh:
		b.WriteString("untrained: " + desc.String())
	case explained:
		rep.Trained = true
		fmt.Fprintf(&b, "trained: the norm gains have moved (max |g−1| = %.3g", rep.Norms.MaxGainDev)
		if rep.Norms.Biases > 0 {
			fmt.Fprintf(&b, ", max |bias| = %.3g", rep.Norms.MaxBias)
		}
		b.WriteString("), though the matrices still fit " + desc.String())
	default:
		rep.Trained = true
		b.WriteString("trained: no rule applies")
		if rep.Main != "" {
			var fit []string
			for _, g := range groups {
				if g.mainFit {
					fit = append(fit, g.Label)
				}
			}
			fmt.Fprintf(&b, " (%s still fits %s)", rep.Main, strings.Join(fit, ", "))
		}
		rep.Gamma, rep.DepthScaled = nil, nil
		for i := range groups {
			groups[i].DepthRatio = nil
		}
	}
	if rep.Declared != nil {
		if rep.Declared.Matches {
			b.WriteString(" (as smallinit_init records)")
		} else {
			b.WriteString(" (smallinit_init records " + recipeString(rep.Declared.Recipe) + ", which the weights no longer match)")
		}
	}
	return b.String()
}

// recipeString names a recorded recipe in the audit's words.
func recipeString(r gammainit.Recipe) string {
	rr := rule{kind: r.Rule, depth: r.DepthScale}
	switch r.Rule {
	case gammainit.RuleGamma:
		rr.param = r.Gamma
	case gammainit.RuleFixed:
		rr.param = r.Std
	}
	s := rr.String()
	if len(r.Classes) > 0 {
		s += " with per-class overrides"
	}
	return s
}

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
		fmt.Fprintf(w, "o_proj/down_proj depth scaling 1/sqrt(2L) = %.4g: %v\n", 1/gammainit.DepthDivisor(model.ClassO, r.Layers), *r.DepthScaled)
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
