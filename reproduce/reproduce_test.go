package reproduce

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/experiment"
)

// TestReproduceEndToEnd runs every experiment for two steps with one seed: every claim gets a verdict and
// evidence (claim 1 twice: validation loss, and reasoning against memorisation on the probe arm), claims.json
// is written, and a second call trains nothing new (the sweeps skip finished runs). The first call is a
// budgeted one resuming from a sizing file of two steps, as after an interruption.
func TestReproduceEndToEnd(t *testing.T) {
	out := t.TempDir()
	sizing := `{"budget": "30m0s", "seeds": 1, "steps": 2, "probe_tokens_per_s": 1000}`
	if err := os.WriteFile(filepath.Join(out, experiment.SizingFile), []byte(sizing), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Out: out, Budget: 30 * time.Minute, Seeds: 1, CompareWindows: 8, ProbeTest: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 {
		t.Fatalf("resumed with %d steps per run, want the sizing file's 2", res.Steps)
	}
	// Every compared arm found its runs (axis values read back from the sweep plans are json.Number; an arm
	// without runs has a mean loss of 0).
	if len(res.ValLoss) == 0 {
		t.Fatal("no validation losses compared")
	}
	for arm, v := range res.ValLoss {
		if !(v.Mean > 0) || v.Seeds != 1 || v.SE != nil {
			t.Errorf("arm %s: %+v, want a mean over its one seed and no standard error", arm, v)
		}
	}
	if len(res.Claims) != 6 {
		t.Fatalf("%d claims, want 6", len(res.Claims))
	}
	// One seed carries no estimate of the noise between seeds: no claim can be decided. The probes of a
	// two-step pilot are untestable (it learnt nothing above chance).
	for i, c := range res.Claims {
		want := Inconclusive
		if i == 1 {
			want = Untestable
		}
		if c.Verdict != want || c.Evidence == "" {
			t.Errorf("claim %d with one seed: verdict %q, evidence %q; want %s", c.N, c.Verdict, c.Evidence, want)
		}
	}
	if c := res.Claims[1]; c.N != 1 || !strings.Contains(c.Evidence, "held-out reasoning prompts") || !strings.Contains(c.Evidence, "(24 prompts)") {
		t.Errorf("claim 1's reasoning half: %+v, want the probe scores of 6 reasoning kinds × 4 held-out prompts", c)
	}
	if !strings.Contains(res.Claims[2].Evidence, "effective model size") && !strings.Contains(res.Claims[2].Evidence, "size law") {
		t.Errorf("claim 2 evidence lacks the size law: %s", res.Claims[2].Evidence)
	}
	// The probe arm's training file is the corpus with probes making up a quarter of its tokens.
	corpus, err := data.ReadTokens(filepath.Join(out, "data", data.TrainFile), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := data.ReadTokens(filepath.Join(out, ProbeDataDir, data.TrainFile), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if share := 1 - float64(len(corpus))/float64(len(mixed)); math.Abs(share-eval.ProbeMixShare) > 0.001 {
		t.Errorf("probes are %.4f of the mixed training tokens, want %g", share, eval.ProbeMixShare)
	}
	b, err := os.ReadFile(filepath.Join(out, "claims.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || len(back.Claims) != 6 {
		t.Fatalf("claims.json: %v", err)
	}
	before, _ := os.Stat(filepath.Join(out, ExpGamma, "runs"))
	if _, err := Run(context.Background(), Options{Out: out, Steps: 2, Seeds: 1, CompareWindows: 8, ProbeTest: 4}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(out, ExpGamma, "runs"))
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("second run changed the γ sweep's runs directory")
	}
}

// TestPlanGroups: the reproduce plan's groups are the experiments the claims read, in that order, and its γ
// sweep is the gammas the claims compare.
func TestPlanGroups(t *testing.T) {
	p, err := Plan()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range p.Groups {
		names = append(names, g.Name)
	}
	if !slices.Equal(names, Experiments) {
		t.Errorf("plan groups %v, want %v", names, Experiments)
	}
	var got []float64
	for _, v := range p.Groups[0].Axes[0].Values {
		switch x := v.(type) {
		case int64:
			got = append(got, float64(x))
		case float64:
			got = append(got, x)
		}
	}
	if p.Groups[0].Axes[0].Key != "init.gamma" || !slices.Equal(got, gammas) {
		t.Errorf("γ sweep %+v, want init.gamma over %v", p.Groups[0].Axes, gammas)
	}
}

// TestMeanSE: the mean and its standard error over seeds; one value has no standard error, none no mean.
func TestMeanSE(t *testing.T) {
	if m, se := meanSE([]float64{4.2}); m != 4.2 || !math.IsNaN(se) {
		t.Errorf("one value: mean %g, se %g; want 4.2 and NaN", m, se)
	}
	if m, se := meanSE(nil); !math.IsNaN(m) || !math.IsNaN(se) {
		t.Errorf("no value: mean %g, se %g; want NaN, NaN", m, se)
	}
	if m, se := meanSE([]float64{1, 3}); m != 2 || math.Abs(se-1) > 1e-15 {
		t.Errorf("1, 3: mean %g, se %g; want 2 and 1", m, se)
	}
}
