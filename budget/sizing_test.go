package budget

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallinit/smallinit/train"
)

// TestSizingKeepsTheScoringProbe: the scoring probe's rate is recorded in the sizing file and read back, so a
// resumed plan charges scoring as measured without probing again.
func TestSizingKeepsTheScoringProbe(t *testing.T) {
	b, err := json.Marshal(Sizing{Budget: "30m0s", Seeds: 2, Steps: 50, ProbeTokensPerS: 9000, ProbeOverheadS: 4, ProbeScoreTokensPerS: 12345})
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/" + SizingFile
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSizing(path)
	if err != nil || s.ProbeScoreTokensPerS != 12345 {
		t.Errorf("read back %+v, %v; want the scoring probe's 12345 tokens/s", s, err)
	}
}

// TestReadSizingRefusesGarbage: a sizing file that Run cannot have written is refused with its path.
func TestReadSizingRefusesGarbage(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"json": "{", "steps": `{"budget":"2h0m0s","seeds":2,"steps":0}`,
		"seeds": `{"budget":"2h0m0s","seeds":0,"steps":10}`} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		if _, err := ReadSizing(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming %s", name, err, p)
		}
	}
}

// TestSizingFilesOfEarlierBuilds: sizing.json files that earlier builds wrote in real run directories (testdata:
// v20's of 2026-12 with only the throughput probe, v20c's with the overhead and scoring probes, one with the
// probe key, written by the experiment package before the file moved here) are read with every field, and
// WriteSizing writes each back byte for byte, so existing run directories resume their sizing.
func TestSizingFilesOfEarlierBuilds(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Sizing
	}{
		{"sizing-v20.json", Sizing{Budget: "6h0m0s", Seeds: 2, Steps: 8972, ProbeTokensPerS: 3938.3422900012383}},
		{"sizing-v20c.json", Sizing{Budget: "15h0m0s", Seeds: 7, Steps: 8972, ProbeTokensPerS: 25617.396453714264,
			ProbeOverheadS: 2.565014932, ProbeScoreTokensPerS: 49099.18106497754}},
		{"sizing-keyed.json", Sizing{Budget: "30m0s", Seeds: 5, Steps: 1234, ProbeTokensPerS: 25617.396453714264,
			ProbeOverheadS: 2.565014932, ProbeScoreTokensPerS: 49099.18106497754,
			ProbeKey: ProbeKey{Engine: "torch", Device: "cuda: NVIDIA H100 80GB HBM3", Precision: "bf16"}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			s, err := ReadSizing(path)
			if err != nil || s != tc.want {
				t.Fatalf("read %+v, %v; want %+v", s, err, tc.want)
			}
			again := filepath.Join(t.TempDir(), SizingFile)
			if err := WriteSizing(again, s); err != nil {
				t.Fatal(err)
			}
			was, _ := os.ReadFile(path)
			if is, _ := os.ReadFile(again); string(is) != string(was) {
				t.Errorf("written back:\n%s\nwant the file as it was:\n%s", is, was)
			}
		})
	}
}

// TestSizingBudgetAndKey: a sizing is for the budget it names (a demo file before the plans names minutes),
// matches a seed count only its own (any, when it records none), and is refused under another probe key with
// the way on; a sizing without a key is the Go engine's.
func TestSizingBudgetAndKey(t *testing.T) {
	demo := Sizing{Minutes: 5, Steps: 1234}
	plan := Sizing{Budget: "30m0s", Seeds: 3, Steps: 50, ProbeKey: ProbeKey{Engine: "go", Device: "cpu: X", Precision: "f32"}}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"demo for 5m", demo.For(5 * time.Minute), true},
		{"demo any seeds", demo.Matches(5*time.Minute, 7), true},
		{"demo not 6m", demo.For(6 * time.Minute), false},
		{"plan for 30m, 3 seeds", plan.Matches(30*time.Minute, 3), true},
		{"plan not 2 seeds", plan.Matches(30*time.Minute, 2), false},
		{"plan not 1h", plan.For(time.Hour), false},
		{"own key", plan.Differs(plan.ProbeKey) == "", true},
		{"no key is the Go engine's", demo.Differs(ProbeKey{Engine: train.EngineGo, Device: "cpu: Y"}) == "", true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	err := plan.Check("OUT/sizing.json", ProbeKey{Engine: "go", Device: "cpu: X", Precision: "bf16"})
	for _, want := range []string{"OUT/sizing.json", "a sizing of 30m0s (50 steps per run)", "precision f32, not bf16", "--steps 50"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("another precision: %v, want it to name %q", err, want)
		}
	}
	if err := demo.Check("p", ProbeKey{Engine: train.EngineTorch, Device: "cuda: Z"}); err == nil || !strings.Contains(err.Error(), "a sizing of 5m0s") || !strings.Contains(err.Error(), "records no engine or device") {
		t.Errorf("a keyless sizing under the PyTorch engine: %v", err)
	}
}
