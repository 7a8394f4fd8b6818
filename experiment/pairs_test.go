package experiment

import (
	"math"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/summary"
)

const pairPlan = `name = "p"
seeds = [0, 1, 2]
[budget]
minutes = 30
efficiency = 1
min_steps = 1
[data]
corpus = "embedded"
vocab = 512
[[group]]
name = "g"
[[group.arm]]
name = "a"
set = { "init.gamma" = 0.5 }
[[group.arm]]
name = "b"
set = { "init.gamma" = 1 }
[[pair]]
name = "a against b"
a = "a"
b = "b"
`

// TestPairsPairBySeed: a plan's [[pair]] is L(a) − L(b) seed by seed from the summary rows, matched to arms and
// seeds by run directory, a seed missing in either arm left out; a pair naming no arm is refused.
func TestPairsPairBySeed(t *testing.T) {
	p, err := Parse([]byte(pairPlan))
	if err != nil {
		t.Fatal(err)
	}
	out := &Outcome{}
	loss := map[string][]float64{"a": {4.0, 4.1, 4.3}, "b": {4.2, 4.15}}
	for _, arm := range []string{"a", "b"} {
		for s, l := range loss[arm] {
			dir := arm + string(rune('0'+s))
			out.RunList = append(out.RunList, RunInfo{Arm: arm, Seed: uint64(s), Dir: dir})
			out.Rows = append(out.Rows, summary.Row{Run: arm, Dir: dir, ValLoss: l})
		}
	}
	ps := pairs(p, out)
	if len(ps) != 1 {
		t.Fatalf("%d pairs", len(ps))
	}
	e := ps[0].Estimate
	if e.N != 2 || math.Abs(e.Values[0]+0.2) > 1e-12 || math.Abs(e.Values[1]+0.05) > 1e-12 || math.Abs(e.Mean+0.125) > 1e-12 {
		t.Errorf("pair estimate %+v, want seeds 0, 1: −0.2, −0.05", e)
	}
	var b strings.Builder
	if err := WritePairs(&b, ps); err != nil || !strings.Contains(b.String(), "a against b (a − b)") || !strings.Contains(b.String(), "1: -0.0500") || !strings.Contains(b.String(), "none (n = 2") {
		t.Errorf("printed:\n%s (%v)", b.String(), err)
	}
	if _, err := ps[0].MarshalJSON(); err != nil {
		t.Error(err)
	}
	bad := strings.Replace(pairPlan, `b = "b"`, `b = "c"`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), `no arm "c"`) {
		t.Errorf("a pair of a missing arm: %v", err)
	}
}
