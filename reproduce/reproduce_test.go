package reproduce

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReproduceEndToEnd runs every experiment for two steps with one seed: every claim gets a verdict and
// evidence, claims.json is written, and a second call trains nothing new (the sweeps skip finished runs).
func TestReproduceEndToEnd(t *testing.T) {
	out := t.TempDir()
	res, err := Run(context.Background(), Options{Out: out, Steps: 2, Seeds: 1, CompareWindows: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Claims) != 5 {
		t.Fatalf("%d claims, want 5", len(res.Claims))
	}
	for _, c := range res.Claims {
		if c.Verdict != Supported && c.Verdict != NotSupported && c.Verdict != Inconclusive || c.Evidence == "" {
			t.Errorf("claim %d: verdict %q, evidence %q", c.N, c.Verdict, c.Evidence)
		}
	}
	if !strings.Contains(res.Claims[1].Evidence, "effective model size") && !strings.Contains(res.Claims[1].Evidence, "size law") {
		t.Errorf("claim 2 evidence lacks the size law: %s", res.Claims[1].Evidence)
	}
	b, err := os.ReadFile(filepath.Join(out, "claims.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || len(back.Claims) != 5 {
		t.Fatalf("claims.json: %v", err)
	}
	before, _ := os.Stat(filepath.Join(out, ExpGamma, "runs"))
	if _, err := Run(context.Background(), Options{Out: out, Steps: 2, Seeds: 1, CompareWindows: 8}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(out, ExpGamma, "runs"))
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("second run changed the γ sweep's runs directory")
	}
}
