package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFitCommandGain runs `smallinit fit` on a CSV in sweep collect's layout, generated here: baseline γ = 0.5
// on the law 1.7 + 400·N^(−0.3) at 5 sizes × 3 seeds (noise sd 0.002, PCG seed 5), treated γ = 1 with the
// loss of a 1.44× larger baseline model. The JSON report must give gains of 0.44 ± 0.01 inside
// their bootstrap intervals, which mostly cover 0.44.
func TestFitCommandGain(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var b strings.Builder
	b.WriteString("index,id,state,init.gamma,seed,N,n_params,steps,tokens,train_loss,val_loss,best_val_loss,tokens_per_s\n")
	i := 0
	for _, g := range []float64{0.5, 1} {
		for _, n := range []float64{1e5, 3e5, 1e6, 3e6, 1e7} {
			for s := range 3 {
				eff := n
				if g == 1 {
					eff *= 1.44
				}
				loss := 1.7 + 400*math.Pow(eff, -0.3) + 0.002*rng.NormFloat64()
				fmt.Fprintf(&b, "%d,run%d,done,%g,%d,%g,%g,100,204800,%g,%g,%g,1000\n", i, i, g, s, n, n+1e4, loss+0.1, loss, loss)
				i++
			}
		}
	}
	fmt.Fprintf(&b, "%d,run%d,running,1,0,1e7,1e7,50,102400,9,9,9,1000\n", i, i) // unfinished: skipped
	path := filepath.Join(t.TempDir(), "table.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := &fitCmd{Table: path, Baseline: "init.gamma=0.5", Treated: "init.gamma=1", SizeKey: "N", DataKey: "tokens", LossKey: "val_loss",
		SeedKey: []string{"seed"}, Bootstrap: 300, JSON: true}
	if err := cmd.run(&out); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Skipped int `json:"skipped_unfinished"`
		Laws    []struct {
			Law struct {
				E, A  float64
				Alpha float64 `json:"alpha"`
			} `json:"law"`
			Treated []struct {
				X    float64                  `json:"x"`
				Gain float64                  `json:"gain"`
				CI   struct{ Lo, Hi float64 } `json:"gain_ci"`
			} `json:"treated"`
		} `json:"laws"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Skipped != 1 || len(rep.Laws) != 1 || len(rep.Laws[0].Treated) != 5 {
		t.Fatalf("report: %+v", rep)
	}
	if l := rep.Laws[0].Law; math.Abs(l.E/1.7-1) > 0.02 || math.Abs(l.A/400-1) > 0.02 || math.Abs(l.Alpha/0.3-1) > 0.02 {
		t.Errorf("law %+v, want E 1.7, A 400, α 0.3 within 2%%", l)
	}
	covered := 0
	for _, g := range rep.Laws[0].Treated {
		if math.Abs(g.Gain-0.44) > 0.01 || !(g.CI.Lo < g.Gain && g.Gain < g.CI.Hi) {
			t.Errorf("N = %g: gain %.4f [%.4f, %.4f], want 0.44 within the interval", g.X, g.Gain, g.CI.Lo, g.CI.Hi)
		}
		if g.CI.Lo <= 0.44 && 0.44 <= g.CI.Hi {
			covered++
		}
	}
	// Three seeds make narrow percentile intervals (the resamples' spread is (n−1)/n of the seeds'): most,
	// not all, of them cover the truth.
	if covered < 3 {
		t.Errorf("%d of 5 intervals cover the true gain 0.44", covered)
	}
	out.Reset()
	cmd.JSON = false
	if err := cmd.run(&out); err != nil || !strings.Contains(out.String(), "treated N") || !strings.Contains(out.String(), "1 unfinished runs skipped") {
		t.Errorf("text report: %v\n%s", err, out.String())
	}
}

// TestFitCommandLadderWhoseBudgetDrifts: a ladder whose tokens per parameter drift with the size (5 to 80) has
// no law holding N, D or D/N fixed; the refusal names the flag that fits L(N) across the budgets, and that flag
// (--data-key none) then fits it.
func TestFitCommandLadderWhoseBudgetDrifts(t *testing.T) {
	var b strings.Builder
	b.WriteString("index,id,state,init.gamma,seed,N,tokens,val_loss\n")
	for i, n := range []float64{1e5, 3e5, 1e6, 3e6, 1e7} {
		fmt.Fprintf(&b, "%d,run%d,done,0.5,0,%g,%g,%g\n", i, i, n, n*5*math.Pow(2, float64(i)), 1.7+400*math.Pow(n, -0.3))
	}
	path := filepath.Join(t.TempDir(), "ladder.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := &fitCmd{Table: path, SizeKey: "N", DataKey: "tokens", LossKey: "val_loss", SeedKey: []string{"seed"}}
	if err := cmd.run(io.Discard); err == nil || !strings.Contains(err.Error(), "tokens/N runs from 5 to 80") || !strings.Contains(err.Error(), "pass --data-key none") {
		t.Errorf("drifting ladder: %v; want the ratio's range and --data-key none", err)
	}
	cmd.DataKey = "none"
	var out bytes.Buffer
	if err := cmd.run(&out); err != nil || !strings.Contains(out.String(), "size law L(N)") {
		t.Errorf("--data-key none: %v\n%s", err, out.String())
	}
}
