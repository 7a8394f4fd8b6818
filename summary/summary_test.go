package summary

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
)

// TestWriteNonFiniteRow: a row whose training loss or throughput is unknown (NaN: a run whose metrics.jsonl
// was cut short) or infinite is written as null and read back as NaN, instead of failing the whole summary with
// "json: unsupported value: NaN"; a finite row is written byte for byte as encoding/json writes it.
func TestWriteNonFiniteRow(t *testing.T) {
	finite := Row{Run: "a", Gamma: 1, NormEps: 1e-5, AttnGate: "none", Steps: 4, TrainLoss: 5.5, ValLoss: 5.6, ValBPB: 2,
		LangLoss: map[string]float64{"en": 5.1, "zh": 6}, LangBPB: map[string]float64{"en": 1.9, "zh": 2.1}, TokensPerS: 1000, Dir: "runs/a"}
	for _, tc := range []struct {
		name string
		edit func(*Row)
		null []string // JSON keys written as null
	}{
		{"NaN train loss and throughput", func(r *Row) { r.TrainLoss, r.TokensPerS = math.NaN(), math.NaN() }, []string{"train_loss", "tokens_per_s"}},
		{"infinite val loss", func(r *Row) { r.ValLoss = math.Inf(1) }, []string{"val_loss"}},
	} {
		r := finite
		tc.edit(&r)
		path := filepath.Join(t.TempDir(), File)
		if err := Write(path, Summary{Data: &data.Stats{VocabSize: 300}, Runs: []Row{finite, r}, Steps: 4}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		back, err := Read(path)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := os.ReadFile(path)
		for _, k := range tc.null {
			if !strings.Contains(string(b), `"`+k+`": null`) {
				t.Errorf("%s: %s not written as null:\n%s", tc.name, k, b)
			}
		}
		got := back.Runs[1]
		if !math.IsNaN(got.TrainLoss) && tc.name == "NaN train loss and throughput" || !math.IsNaN(got.ValLoss) && tc.name == "infinite val loss" {
			t.Errorf("%s: read back %+v, want NaN for the null", tc.name, got)
		}
		if back.Runs[0].TrainLoss != finite.TrainLoss || back.Runs[0].LangLoss["zh"] != 6 {
			t.Errorf("%s: the finite row read back as %+v", tc.name, back.Runs[0])
		}
	}
	type plain Row
	want, _ := json.Marshal(plain(finite))
	got, err := json.Marshal(finite)
	if err != nil || string(got) != string(want) {
		t.Errorf("a finite row: %s, want encoding/json's %s (%v)", got, want, err)
	}
}

// TestWriteTableStepsTokensNoise: the demo's table gives each run's steps and training tokens beside its losses
// and says, for one seed per row, which difference is within the seed noise (the README's table and a
// throughput-sized run of other steps can then be told apart).
func TestWriteTableStepsTokensNoise(t *testing.T) {
	rows := []Row{
		{Run: "gamma0.5-default", Gamma: 0.5, NormEps: 1e-5, AttnGate: "none", Steps: 59, ValLoss: 6.1},
		{Run: "gamma1-default", Gamma: 1, NormEps: 1e-5, AttnGate: "none", Steps: 59, ValLoss: 6.12},
	}
	var b strings.Builder
	WriteTable(&b, rows, 2048)
	out := b.String()
	for _, want := range []string{"steps", "tokens", " 59 ", "0.12M", "one seed per row", fmt.Sprintf("%.2f nats", 2*SeedNoise)} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	WriteTable(&b, rows[:1], 0)
	if strings.Contains(b.String(), "one seed per row") || !strings.Contains(b.String(), "—") {
		t.Errorf("one row, no step tokens:\n%s", b.String())
	}
}

// TestWriteTableSeedsAndArms: rows of one label are seeds of one arm: the table gives each row's seed, and a
// table of each arm's mean ± SE over its seeds (worked by hand) with every seed's value follows, instead of the
// one-seed noise line.
func TestWriteTableSeedsAndArms(t *testing.T) {
	rows := []Row{
		{Run: "gamma0.5", Seed: 0, Gamma: 0.5, Steps: 50, ValLoss: 6.10},
		{Run: "gamma1", Seed: 0, Gamma: 1, Steps: 50, ValLoss: 6.20},
		{Run: "gamma0.5", Seed: 1, Gamma: 0.5, Steps: 50, ValLoss: 6.16},
		{Run: "gamma1", Seed: 1, Gamma: 1, Steps: 50, ValLoss: 6.20},
		{Run: "gamma0.5", Seed: 2, Gamma: 0.5, Steps: 50, ValLoss: 6.13},
	}
	arms := Arms(rows)
	if len(arms) != 2 || arms[0].Run != "gamma0.5" || arms[0].Estimate.N != 3 || arms[1].Estimate.N != 2 {
		t.Fatalf("arms %+v", arms)
	}
	// gamma0.5: mean 6.13, deviations −0.03, 0.03, 0: SD = √(0.0018/2) = 0.03, SE = 0.03/√3 = 0.017321.
	if e := arms[0].Estimate; math.Abs(e.Mean-6.13) > 1e-12 || math.Abs(e.SE-0.03/math.Sqrt(3)) > 1e-12 {
		t.Errorf("gamma0.5: mean %v, SE %v; want 6.13, 0.017321", e.Mean, e.SE)
	}
	var b strings.Builder
	WriteTable(&b, rows, 2048)
	out := b.String()
	for _, want := range []string{"run  seed", "gamma0.5     2", "per arm: val loss mean ± SE",
		"gamma0.5  0.5  3  6.1300  ± 0.0173  0: 6.1000  1: 6.1600  2: 6.1300", "gamma1    1    2  6.2000  ± 0.0000  0: 6.2000  1: 6.2000"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "one seed per row") {
		t.Errorf("seeded arms get the one-seed noise line:\n%s", out)
	}
}
