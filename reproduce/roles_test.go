package reproduce

import (
	"math"
	"testing"
)

// TestRoleArmsByGamma: the runs of a role whose Roles row says ByGamma reach the verdicts as one arm per γ
// (Evidence.ByRole, read by RoleArm) with their per-seed losses; a role without it, or without runs, adds none.
func TestRoleArmsByGamma(t *testing.T) {
	const depth Role = "depth-scaled"
	roles := map[Role]RoleSpec{depth: {Feeds: "a test", ByGamma: true}, RoleEpsOnly: {Feeds: "reported"}, "unused": {ByGamma: true}}
	var recs []RunRecord
	for seed, g := range []float64{1, 0.5, 1, 0.5} {
		r := RunRecord{Role: depth, Gamma: g, Seed: seed / 2, Health: Health{Spike: math.NaN(), Plateau: math.NaN()}}
		r.Score.HeldOut.Overall.Loss = 4 + g + float64(seed)/10
		recs = append(recs, r, RunRecord{Role: RoleEpsOnly, Gamma: g, Seed: seed / 2})
	}
	by := roleArms(recs, roles)
	if len(by) != 1 || len(by[depth]) != 2 || by[depth][0].Gamma != 0.5 || by[depth][1].Gamma != 1 {
		t.Fatalf("arms by role %+v, want %s with γ 0.5 and 1", by, depth)
	}
	ev := &Evidence{ByRole: by}
	a1, a05 := ev.RoleArm(depth, 1), ev.RoleArm(depth, 0.5)
	if a1 == nil || a05 == nil || len(a1.Seeds) != 2 || a1.Seeds[1].Overall != 5.2 || a05.Seeds[0].Overall != 4.6 {
		t.Errorf("γ = 1: %+v, γ = 0.5: %+v", a1, a05)
	}
	if ev.RoleArm(RoleEpsOnly, 1) != nil || ev.RoleArm(depth, 0.75) != nil {
		t.Error("an arm of a role without ByGamma, or of a γ without runs")
	}
}
