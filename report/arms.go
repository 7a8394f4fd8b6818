package report

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/stats"
)

// Arm is a group of runs whose configs differ only in the seed and in bookkeeping keys.
type Arm struct {
	Key    string            // the identity: the varying keys and values, sorted
	Label  string            // display form of the varying keys, e.g. "γ=1 · ε=1e-12 · gate=elementwise"
	Values map[string]string // varying key → value (seed excluded)
	Runs   []*Run            // one per seed, sorted by seed

	Gamma    float64 // init.gamma of its runs
	NormEps  float64 // model.norm_eps
	Gate     string  // model.attn_gate
	Preset   string  // model.preset
	N        int64   // non-embedding parameters
	baseN    int64   // N without the attention gate's weights: the size arms are sorted by
	gated    bool    // the model has an attention gate
	epsFixed bool    // the model's ε is fixed (arch.Config.EpsFixed)
	gateRank int     // none, headwise, others (recipe.Config.GateRank)
}

// isBookkeeping and isSizeKey read a config key's role from the recipe's key table (recipe.Key): a bookkeeping key
// does not split arms, a size key sets the x of loss against N.
func isBookkeeping(k string) bool {
	info, _ := recipe.Key(k)
	return info.Role == recipe.KeyBookkeeping
}
func isSizeKey(k string) bool { info, _ := recipe.Key(k); return info.Role == recipe.KeySize }

func keyRank(k string) int { _, r := recipe.Key(k); return r }

func sortKeys(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := keyRank(keys[i]), keyRank(keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
}

// groupArms finds the keys that vary between runs and groups the runs with a config by them.
func (d *Data) groupArms() {
	var withCfg []*Run
	for _, r := range d.Runs {
		if r.HasConfig {
			withCfg = append(withCfg, r)
		}
	}
	// The training data splits arms by its file's directory and name ("data/train.tok" against
	// "probes-data/train.tok": the demo's plain and probe-mixed runs), not by its full path, which differs
	// between machines that mount the same data elsewhere.
	datasets := map[string]bool{}
	for _, r := range withCfg {
		datasets[dataName(r.Value(recipe.KeyDataTrain))] = true
	}
	if len(datasets) > 1 {
		for _, r := range withCfg {
			r.Recipe["data"] = dataName(r.Value(recipe.KeyDataTrain))
		}
	}
	all := map[string]bool{}
	for _, r := range withCfg {
		for k := range r.Recipe {
			all[k] = true
		}
	}
	for k := range all {
		vals := map[string]bool{}
		for _, r := range withCfg {
			vals[r.Value(k)] = true
		}
		if len(vals) < 2 {
			continue
		}
		if isBookkeeping(k) {
			if k != recipe.KeySeed {
				d.Ignored = append(d.Ignored, k)
			}
			continue
		}
		d.Varying = append(d.Varying, k)
	}
	sortKeys(d.Varying)
	sort.Strings(d.Ignored)
	shown := d.shownKeys(withCfg)
	arms := map[string]*Arm{}
	for _, r := range withCfg {
		var parts []string
		for _, k := range d.Varying {
			parts = append(parts, k+"="+r.Value(k))
		}
		key := strings.Join(parts, ",")
		a, ok := arms[key]
		if !ok {
			a = &Arm{Key: key, Values: map[string]string{}, Gamma: r.Config.Init.Gamma, NormEps: r.Config.Model.NormEps,
				Gate: r.Config.Model.AttnGate, Preset: r.Config.Model.Preset, N: r.N(), baseN: r.Config.BaseN(),
				gated: r.Config.Gated(), gateRank: r.Config.GateRank(), epsFixed: r.Config.Model.EpsFixed()}
			var lab []string
			for _, k := range d.Varying {
				a.Values[k] = r.Value(k)
				if shown[k] {
					lab = append(lab, recipe.ShortName(k)+"="+r.Value(k))
				}
			}
			a.Label = strings.Join(lab, " · ")
			if a.Label == "" {
				a.Label = "all runs"
			}
			arms[key] = a
			d.Arms = append(d.Arms, a)
		}
		a.Runs = append(a.Runs, r)
		r.Arm = a
	}
	for _, a := range d.Arms {
		sort.SliceStable(a.Runs, func(i, j int) bool { return a.Runs[i].Seed() < a.Runs[j].Seed() })
	}
	sort.SliceStable(d.Arms, func(i, j int) bool {
		a, b := d.Arms[i], d.Arms[j]
		switch {
		case a.baseN != b.baseN:
			return a.baseN < b.baseN
		case a.Gamma != b.Gamma:
			return a.Gamma < b.Gamma
		case a.NormEps != b.NormEps:
			return a.NormEps > b.NormEps
		case a.Gate != b.Gate:
			return a.gateRank < b.gateRank
		}
		return a.Key < b.Key
	})
}

// dataName is a data file's directory and base name: "probes-data/train.tok".
func dataName(path string) string {
	return filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path))
}

// shownKeys are the varying keys an arm label shows: when the preset varies, the shape keys it determines
// (hidden size, layers, ...) are left out.
func (d *Data) shownKeys(runs []*Run) map[string]bool {
	shown := map[string]bool{}
	presetVaries := false
	for _, k := range d.Varying {
		shown[k] = true
		presetVaries = presetVaries || k == recipe.KeyPreset
	}
	if !presetVaries {
		return shown
	}
	for _, k := range d.Varying {
		if !isSizeKey(k) || k == recipe.KeyPreset {
			continue
		}
		byPreset := map[string]string{}
		determined := true
		for _, r := range runs {
			p := r.Value(recipe.KeyPreset)
			if v, ok := byPreset[p]; ok && v != r.Value(k) {
				determined = false
				break
			}
			byPreset[p] = r.Value(k)
		}
		if determined {
			shown[k] = false
		}
	}
	return shown
}

// labelWithout is the arm's label without the given keys ("all runs" when nothing is left).
func (d *Data) labelWithout(a *Arm, drop func(string) bool) (key, label string) {
	var ks, ls []string
	presetVaries := false
	for _, k := range d.Varying {
		presetVaries = presetVaries || (k == recipe.KeyPreset && !drop(k))
	}
	for _, k := range d.Varying {
		if drop(k) {
			continue
		}
		ks = append(ks, k+"="+a.Values[k])
		if presetVaries && isSizeKey(k) && k != recipe.KeyPreset {
			continue
		}
		ls = append(ls, recipe.ShortName(k)+"="+a.Values[k])
	}
	label = strings.Join(ls, " · ")
	if label == "" {
		label = "all runs"
	}
	return strings.Join(ks, ","), label
}

// Complete returns the arm's complete runs.
func (a *Arm) Complete() []*Run {
	var out []*Run
	for _, r := range a.Runs {
		if r.Complete {
			out = append(out, r)
		}
	}
	return out
}

// FinalVal is the mean and standard error over seeds of the complete runs' final validation loss (SE is NaN
// with one seed); n counts the runs with a finite loss.
func (a *Arm) FinalVal() (mean, se float64, n int) {
	var xs []float64
	for _, r := range a.Complete() {
		if v := r.ValLoss(); !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
		}
	}
	e := stats.Mean(xs, nil, 0.05)
	return e.Mean, e.SE, len(xs)
}

// Seeds lists the seeds of the arm's runs.
func (a *Arm) Seeds() []uint64 {
	var s []uint64
	for _, r := range a.Runs {
		s = append(s, r.Seed())
	}
	return s
}

// fixKind classifies an arm for the 2×2 of fixes: 0 default (default ε, no gate), 1 ε fixed only, 2 gate
// only, 3 both fixes (fixed ε with a gate; docs/definitions.md §1 "Fixed ε", arch.Config.EpsFixed).
func fixKind(a *Arm) int {
	k := 0
	if a.epsFixed {
		k |= 1
	}
	if a.gated {
		k |= 2
	}
	return k
}

var fixNames = []string{"default (ε=1e-5, no gate)", "ε=1e-12 only", "gate only", "fixed (ε=1e-12 + gate)"}

// describe says what a set of runs is: how many, over which arms and seeds, what differs and what is shared.
func (d *Data) describe(runs []*Run) string {
	var cfg []*Run
	for _, r := range runs {
		if r.HasConfig {
			cfg = append(cfg, r)
		}
	}
	if len(cfg) == 0 {
		return ""
	}
	arms := map[*Arm]bool{}
	seeds := map[uint64]bool{}
	for _, r := range cfg {
		arms[r.Arm] = true
		seeds[r.Seed()] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d run%s in %d arm%s", len(cfg), plural(len(cfg)), len(arms), plural(len(arms)))
	var vary []string
	for _, k := range d.Varying {
		vals := map[string]bool{}
		for _, r := range cfg {
			vals[r.Value(k)] = true
		}
		if len(vals) > 1 {
			vary = append(vary, recipe.ShortName(k)+" ∈ {"+strings.Join(sortedValues(vals), ", ")+"}")
		}
	}
	if len(vary) > 0 {
		fmt.Fprintf(&b, "; varying %s", strings.Join(vary, ", "))
	}
	var ss []string
	for s := range seeds {
		ss = append(ss, strconv.FormatUint(s, 10))
	}
	fmt.Fprintf(&b, "; seed%s {%s}", plural(len(seeds)), strings.Join(sortedValues(toSet(ss)), ", "))
	// what the runs share
	same := func(k string) (string, bool) {
		v := cfg[0].Value(k)
		for _, r := range cfg[1:] {
			if r.Value(k) != v {
				return "", false
			}
		}
		return v, true
	}
	var shared []string
	if p, ok := same(recipe.KeyPreset); ok {
		s := "preset " + p
		var shape []string
		for _, k := range []string{arch.KeyHiddenSize, recipe.KeyLayers, recipe.KeyHeads, recipe.KeyContext, recipe.KeyVocab} {
			if v, ok := same(k); ok {
				name := recipe.ShortName(k)
				if k == recipe.KeyVocab {
					name = "V"
				}
				shape = append(shape, name+"="+v)
			}
		}
		if len(shape) > 0 {
			s += " (" + strings.Join(shape, ", ") + ")"
		}
		shared = append(shared, s)
	}
	for _, k := range []string{recipe.KeyGamma, recipe.KeyNormEps, recipe.KeyAttnGate} {
		if v, ok := same(k); ok {
			shared = append(shared, recipe.ShortName(k)+"="+v)
		}
	}
	steps, B, T := cfg[0].TotalSteps, cfg[0].Config.Train.BatchSize, cfg[0].Config.Model.SeqLen
	sameBudget := true
	for _, r := range cfg[1:] {
		if r.TotalSteps != steps || r.Config.Train.BatchSize != B || r.Config.Model.SeqLen != T {
			sameBudget = false
		}
	}
	if sameBudget {
		shared = append(shared, fmt.Sprintf("%d steps × %d×%d = %s tokens per run", steps, B, T, groupDigits(int64(steps*B*T))))
	}
	if v, ok := same(recipe.KeyLR); ok {
		k, _ := same(recipe.KeyScheduleKind)
		shared = append(shared, fmt.Sprintf("lr %s %s", v, k))
	}
	if len(shared) > 0 {
		fmt.Fprintf(&b, "; shared: %s", strings.Join(shared, ", "))
	}
	inc := 0
	for _, r := range runs {
		if !r.Complete {
			inc++
		}
	}
	if inc > 0 {
		fmt.Fprintf(&b, "; %d incomplete", inc)
	}
	return b.String() + "."
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func toSet(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// sortedValues sorts numbers numerically and the rest as strings.
func sortedValues(set map[string]bool) []string {
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		a, ea := strconv.ParseFloat(out[i], 64)
		b, eb := strconv.ParseFloat(out[j], 64)
		if ea == nil && eb == nil {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}

// groupDigits writes n with commas between groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && c != '-' {
			b.WriteString(",")
		}
		b.WriteRune(c)
	}
	return b.String()
}
