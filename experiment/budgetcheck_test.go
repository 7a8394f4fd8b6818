package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/budget"
)

// tieredPlan is a plan with the four tiers of the reproduce plan's budgets, the first a smoke test.
const tieredPlan = `name = "tiers"
[budget]
minutes = 30
efficiency = 0.9
min_steps = 1
[data]
corpus = "embedded"
vocab = 4096
[[tier]]
name = "30m"
minutes = 30
smoke = "too short to decide"
[[tier]]
name = "2h"
minutes = 120
[[tier]]
name = "8h"
minutes = 480
[[tier]]
name = "24h"
minutes = 1440
[[group]]
name = "g"
[[group.arm]]
name = "a"
`

// TestCheckTierBudget: a budget of a plan with tiers must be one of its tiers' minutes (--budget 1h used to run
// the 30 min tier silently); the error names every tier and the smoke test; 0 (the plan's) and a plan without
// tiers accept any budget.
func TestCheckTierBudget(t *testing.T) {
	p, err := Parse([]byte(tieredPlan))
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []time.Duration{0, 30 * time.Minute, 2 * time.Hour, 8 * time.Hour, 24 * time.Hour} {
		if err := checkTierBudget(p, ok); err != nil {
			t.Errorf("budget %s: %v", ok, err)
		}
	}
	err = checkTierBudget(p, time.Hour)
	if err == nil {
		t.Fatal("budget 1h: no error")
	}
	for _, want := range []string{"budget 1h0m0s", "30m (smoke test)", "2h", "8h", "24h"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("budget 1h: %q lacks %q", err, want)
		}
	}
	if err := checkTierBudget(&Plan{Name: "x"}, time.Hour); err != nil {
		t.Errorf("a plan without tiers: %v", err)
	}
}

// TestOverBudget: a plan the budget sized whose expected wall time is over it is refused, naming --force; with
// --force, with --steps, or within the budget it starts.
func TestOverBudget(t *testing.T) {
	p := &Plan{Name: "x"}
	over := &Description{Budget: 30 * time.Minute, Estimate: &budget.Estimate{Wall: 95 * time.Minute}}
	within := &Description{Budget: 30 * time.Minute, Estimate: &budget.Estimate{Wall: 25 * time.Minute}}
	err := overBudget(p, over, &Options{})
	if err == nil || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "1h35m") {
		t.Errorf("over budget: %v", err)
	}
	for name, tc := range map[string]struct {
		d *Description
		o Options
	}{"force": {over, Options{Force: true}}, "steps": {over, Options{Steps: 4}}, "within": {within, Options{}}} {
		if err := overBudget(p, tc.d, &tc.o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
