package reproduce

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/stats"
)

// A contrast is one paired comparison of two arms whose runs may lie in different study output directories:
// issue 44's family D (docs/results/2026-12-07-verdict-20tpp-embed-head-plan.md) trains one arm and reads it
// against the verdict's width-128 arms, which families A and B trained. An arm is chosen by the values its runs'
// configs hold (Selector); what the two arms differ in is printed, and refused beyond what the reader allows.

// GroupKey is the Selector pseudo-key of the plan group a run belongs to (a study writes OUT/GROUP/RUN).
const GroupKey = "group"

// replicaKeys are the config keys in which the runs of one arm differ: the seed, where the data files lie and
// the thread count (results are bitwise independent of it). Any other key is the arm's.
var replicaKeys = map[string]bool{"seed": true, "data.train": true, "data.val": true, "train.threads": true}

// Selector chooses the runs of one arm: each set's key must hold its value in the run's config (override.Equal;
// a key the config does not set never matches), and GroupKey names the run's plan group.
type Selector []override.Set

// ParseSelector reads "key=value,key=value" (values as --set reads them; a value holding a comma cannot be
// given here).
func ParseSelector(s string) (Selector, error) {
	var sel Selector
	for kv := range strings.SplitSeq(s, ",") {
		set, err := override.Parse(kv)
		if err != nil {
			return nil, err
		}
		sel = append(sel, set)
	}
	return sel, nil
}

func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, set := range s {
		parts[i] = set.Key + "=" + override.Format(set.Value)
	}
	return strings.Join(parts, ",")
}

func (s Selector) match(r StudyRun) bool {
	cfg := map[string]any{GroupKey: r.Group}
	for _, set := range r.config {
		cfg[set.Key] = set.Value
	}
	for _, set := range s {
		v, ok := cfg[set.Key]
		if !ok || !override.Equal(v, set.Value) {
			return false
		}
	}
	return true
}

// armConfig is a run's config less replicaKeys, by key.
func armConfig(r StudyRun) map[string]any {
	m := map[string]any{}
	for _, s := range r.config {
		if !replicaKeys[s.Key] {
			m[s.Key] = s.Value
		}
	}
	return m
}

// configDiffs lists every key in which a and b differ, sorted, each as "key: a against b" (unset where a config
// lacks it).
func configDiffs(a, b map[string]any) []string {
	both := maps.Clone(a)
	maps.Copy(both, b)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(both)) {
		av, aok := a[k]
		bv, bok := b[k]
		show := func(v any, ok bool) string {
			if !ok {
				return "unset"
			}
			return override.Format(v)
		}
		if aok != bok || !override.Equal(av, bv) {
			out = append(out, fmt.Sprintf("%s: %s against %s", k, show(av, aok), show(bv, bok)))
		}
	}
	return out
}

// ArmContrast is L(A) − L(B) paired by seed over two arms of study runs (positive: B lower), at the training mix
// and on each language (docs/definitions.md §7 "Which loss"), each a t-interval at Alpha with the two one-sided
// tests against Delta and the sign-flip p beside it; unadjusted (a secondary).
type ArmContrast struct {
	A     string   `json:"a"`
	B     string   `json:"b"`
	RunsA []string `json:"runs_a"`
	RunsB []string `json:"runs_b"`
	// Differ is every config key in which the arms differ ("key: A's against B's").
	Differ     []string `json:"differ"`
	Alpha      float64  `json:"alpha"`
	Delta      float64  `json:"delta,omitempty"`
	Mix        Test     `json:"training_mix"`
	ByLanguage []Test   `json:"by_language"`
}

// armRuns are the runs sel chooses, which must be one arm: one config but the replica keys, one run per seed.
func armRuns(runs []StudyRun, sel Selector) ([]StudyRun, error) {
	var out []StudyRun
	seeds := map[int]string{}
	for _, r := range runs {
		if !sel.match(r) {
			continue
		}
		if len(out) > 0 {
			if d := configDiffs(armConfig(out[0]), armConfig(r)); len(d) > 0 {
				return nil, fmt.Errorf("%s chooses runs of more than one arm (%s and %s differ in %s): name that key too", sel, out[0].Dir, r.Dir, d[0])
			}
		}
		if dir, dup := seeds[r.Seed]; dup {
			return nil, fmt.Errorf("%s chooses two runs of seed %d (%s and %s)", sel, r.Seed, dir, r.Dir)
		}
		seeds[r.Seed] = r.Dir
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s chooses no finished run", sel)
	}
	return out, nil
}

// ContrastArms reads L(A) − L(B) from runs (ReadStudyRuns of one corpus): each side one arm (armRuns), the two
// arms different (else the same arm is compared with itself), and, with vary set, different in those keys
// only (a recipe that differs elsewhere is refused, naming the key).
func ContrastArms(runs []StudyRun, a, b Selector, vary []string, alpha, delta float64) (*ArmContrast, error) {
	ra, err := armRuns(runs, a)
	if err != nil {
		return nil, fmt.Errorf("arm A: %w", err)
	}
	rb, err := armRuns(runs, b)
	if err != nil {
		return nil, fmt.Errorf("arm B: %w", err)
	}
	ca, cb := armConfig(ra[0]), armConfig(rb[0])
	c := &ArmContrast{A: a.String(), B: b.String(), Differ: configDiffs(ca, cb), Alpha: alpha, Delta: delta}
	if len(c.Differ) == 0 {
		return nil, fmt.Errorf("%s and %s choose one arm (%s and %s share every config key but the seed): nothing to contrast", a, b, ra[0].Dir, rb[0].Dir)
	}
	if len(vary) > 0 {
		allowed := map[string]bool{}
		for _, k := range vary {
			allowed[k] = true
		}
		for _, d := range c.Differ {
			if k, _, _ := strings.Cut(d, ":"); !allowed[k] {
				return nil, fmt.Errorf("the arms differ in %s, which is not one of the keys allowed to vary (%s)", d, strings.Join(vary, ", "))
			}
		}
	}
	ea := &ArmEvidence{Seeds: map[int]Loss{}}
	eb := &ArmEvidence{Seeds: map[int]Loss{}}
	for _, r := range ra {
		c.RunsA = append(c.RunsA, r.Dir)
		ea.Seeds[r.Seed] = r.Loss
	}
	for _, r := range rb {
		c.RunsB = append(c.RunsB, r.Dir)
		eb.Seeds[r.Seed] = r.Loss
	}
	read := func(name string, d stats.Diff) Test {
		t := Test{Name: name, Delta: delta, Estimate: stats.Estimate{Seeds: d.Seeds, Values: d.Values}}
		t.measure(alpha)
		t.Decision = Inconclusive
		if t.Estimate.N >= MinSeeds {
			t.Decision = decide(t.Estimate, delta, pOr1(t.PTOST), t.Estimate.P, t.Estimate.P, alpha)
		}
		return t
	}
	c.Mix = read("L(A) − L(B) at the training mix", stats.Paired(ea.Overall(), eb.Overall()))
	for _, lang := range languages(ea, eb) {
		c.ByLanguage = append(c.ByLanguage, read("L(A) − L(B) on "+lang, stats.Paired(ea.Language(lang), eb.Language(lang))))
	}
	return c, nil
}

// WriteText prints the contrast: the arms and their runs, what they differ in, and each reading with its
// per-seed differences.
func (c *ArmContrast) WriteText(w io.Writer) {
	fmt.Fprintf(w, "A: %s (%d runs)\nB: %s (%d runs)\n", c.A, len(c.RunsA), c.B, len(c.RunsB))
	fmt.Fprintf(w, "the arms differ in: %s\n", strings.Join(c.Differ, "; "))
	fmt.Fprintf(w, "paired by seed, unadjusted, intervals at %.4g%%; positive: B lower\n", 100*(1-c.Alpha))
	for _, t := range append([]Test{c.Mix}, c.ByLanguage...) {
		fmt.Fprintf(w, "  %s — %s\n", strings.TrimSuffix((&claimTests{tests: []Test{t}}).text(), " [reported]"), t.Decision)
		var per []string
		pos := 0
		for i, s := range t.Estimate.Seeds {
			per = append(per, fmt.Sprintf("%d: %+.4f", s, t.Estimate.Values[i]))
			if t.Estimate.Values[i] > 0 {
				pos++
			}
		}
		fmt.Fprintf(w, "    per seed %s (%d of %d positive)\n", strings.Join(per, ", "), pos, len(per))
	}
}
