package reproduce

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/budget"
	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/experiment"
	"github.com/smallinit/smallinit/model/modeltest"
	"github.com/smallinit/smallinit/override"
	"github.com/smallinit/smallinit/probes"
)

// TestProbeScoringIsTimedAndCharged: the probe arms' completions are timed on this machine and charged per
// final model to the expected wall time; a plan without probe arms is charged nothing, and a probe mix not yet
// made is named as not timed instead of failing the plan.
func TestProbeScoringIsTimedAndCharged(t *testing.T) {
	tok := modeltest.Tokenizer(t)
	dir := t.TempDir()
	if err := tok.Save(filepath.Join(dir, data.TokenizerFile)); err != nil {
		t.Fatal(err)
	}
	ps, err := probes.Make(probes.Config{Seed: 3, Train: 30, Test: 5, Table: 8, AddDigits: 2})
	if err != nil {
		t.Fatal(err)
	}
	records, timed := 0, 0
	for f, set := range map[string]int{probes.TestFile: 0, probes.RecallFile: 1} {
		list := ps.Test
		if set == 1 {
			list = ps.Recall
		}
		b, err := probes.Records(list)
		if err != nil {
			t.Fatal(err)
		}
		records += strings.Count(string(b), "\n")
		timed += min(strings.Count(string(b), "\n"), probeTimeRecords)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan := &experiment.Plan{Name: "p", Groups: []experiment.Group{{Name: "gamma", Role: string(RoleGamma)},
		{Name: "probes", Role: string(RoleProbes)}, {Name: "pilot", Role: string(RolePilot)}},
		Base: []override.Set{{Key: "model.preset", Value: "tiny"}, {Key: "model.num_hidden_layers", Value: int64(1)}}}
	desc := func() *experiment.Description {
		return &experiment.Description{Plan: plan, Estimate: &budget.Estimate{}, Arms: []experiment.ArmLine{
			{Group: "gamma", Arm: "gamma0.5", Seeds: []uint64{0, 1}, Width: 32},
			{Group: "probes", Arm: "gamma0.5", Seeds: []uint64{0, 1}, Width: 32},
			{Group: "probes", Arm: "gamma1", Seeds: []uint64{0, 1}, Width: 32},
			{Group: "pilot", Arm: "gamma0.5", Seeds: []uint64{100}, Width: 32}}}
	}

	d := desc()
	if err := chargeProbeScoring(context.Background(), d, filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	// filepath.Dir(dir) has no probes-data: not timed, said so, nothing charged.
	if len(d.Scoring) != 1 || d.Scoring[0].Time != 0 || !strings.Contains(d.Scoring[0].Text, "not timed") {
		t.Errorf("no probe mix yet: %+v", d.Scoring)
	}

	d = desc()
	w, ok, err := probeScoring(context.Background(), d, dir)
	if err != nil || !ok {
		t.Fatalf("probeScoring: %v %v", ok, err)
	}
	// The first probeTimeRecords records of each file are timed, and the time is 5 models' worth.
	if w.Time <= 0 || !strings.Contains(w.Text, fmt.Sprintf("5 final models × %d probe records", records)) ||
		!strings.Contains(w.Text, fmt.Sprintf("timed on %d records", timed)) {
		t.Errorf("work %+v: want a positive time for 5 models", w)
	}
	d.AddScoring(w)
	if d.Estimate.Wall != w.Time {
		t.Errorf("wall %v after AddScoring, want %v", d.Estimate.Wall, w.Time)
	}

	d = desc()
	d.Arms = d.Arms[:1]
	if _, ok, err := probeScoring(context.Background(), d, dir); ok || err != nil {
		t.Errorf("no probe arm: ok %v err %v, want nothing charged", ok, err)
	}
}
