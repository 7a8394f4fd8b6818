package experiment

import (
	"strings"
	"testing"

	"github.com/smallinit/smallinit/override"
)

// TestSeriesRefusesKeysItWouldOverwrite (issue 48, Found 3): with a horizon series, an arm's schedule.kind =
// "cosine" (the WSD bridge's cosine arms) and a base train.snapshot_steps are refused naming both values; before,
// the series trained the cosine arm as WSD and dropped the snapshots without a word. Every built-in plan under
// every tier passes the check.
func TestSeriesRefusesKeysItWouldOverwrite(t *testing.T) {
	bridge, err := Builtin("wsd-bridge")
	if err != nil {
		t.Fatal(err)
	}
	p := *bridge
	h := *p.Horizon
	h.Horizons = []float64{2.5, 5}
	p.Horizon = &h
	err = p.checkSeriesKeys(t.Logf)
	if err == nil || !strings.Contains(err.Error(), `schedule.kind = cosine`) || !strings.Contains(err.Error(), `"wsd"`) {
		t.Errorf("wsd-bridge with a series: %v, want the cosine arm refused naming both values", err)
	}
	p = *bridge
	p.Horizon = &h
	p.Groups = nil
	p.Base = append(p.Base[:len(p.Base):len(p.Base)], mustSet(t, "train.snapshot_steps=[3]"))
	if err := p.checkSeriesKeys(t.Logf); err == nil || !strings.Contains(err.Error(), "train.snapshot_steps = [3]") {
		t.Errorf("base snapshot_steps under a series: %v, want it refused", err)
	}
	for _, name := range Builtins() {
		b, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tier := range append([]*Tier{nil}, tierPtrs(b)...) {
			if err := b.Tiered(tier).checkSeriesKeys(t.Logf); err != nil {
				t.Errorf("built-in plan %s: %v", name, err)
			}
		}
	}
}

func tierPtrs(p *Plan) []*Tier {
	var out []*Tier
	for i := range p.Tiers {
		out = append(out, &p.Tiers[i])
	}
	return out
}

func mustSet(t *testing.T, kv string) override.Set {
	t.Helper()
	s, err := override.Parse(kv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
