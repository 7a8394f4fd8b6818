package reproduce

import (
	"strings"
	"testing"

	"github.com/smallinit/smallinit/experiment"
)

// TestCheckKeys: a plan that study runs without the design still has every key of reproduce's read (issue 49):
// a misspelt key of a [[tier]], of [primaries] or of [anchor] was ignored, and is refused naming it (a tier's
// with the keys a tier takes); the design's own keys and their absence pass, and values that only reproduce
// judges (here, no delta) are left to it.
func TestCheckKeys(t *testing.T) {
	tier := func(key string) string {
		return strings.Replace(studyPlan, `name = "long"`, "name = \"long\"\n"+key, 1)
	}
	for _, tc := range []struct {
		name, text, want string // want "": passes
	}{
		{"the design's tier keys", tier("anchor_steps = 5\nanchor = false\nscore_windows = 4\nood_windows = 2"), ""},
		{"no delta (judged by reproduce only)", studyPlan, ""},
		{"a misspelt tier key", tier("anchr_steps = 5"), "unknown key tier.anchr_steps (a [[tier]] takes name, minutes, seeds"},
		{"a misspelt tier key lists the design's", tier("score_window = 4"), "and the study design's anchor_steps, anchor, score_windows, ood_windows"},
		{"a tier's window count past the bound", tier("score_windows = 100000000"), "tier 2 (long): score_windows 100000000: must be in [0, 16777216]"},
		{"a misspelt primaries key", studyPlan + "delt = 0.02\n", "unknown key primaries.delt"},
		{"a misspelt anchor key", studyPlan + "[anchor]\ngammas = [0.5, 1]\ndeph = 2\n", "unknown key anchor.deph"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := experiment.Parse([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckKeys(p)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestEmbeddedPlansKeepTheirKeys: every embedded plan (experiment's built-ins and reproduce's own) parses and
// passes CheckKeys, so refusing unknown keys turns none of them away.
func TestEmbeddedPlansKeepTheirKeys(t *testing.T) {
	names := experiment.Builtins()
	if len(names) < 5 {
		t.Fatalf("built-in plans %v: want the demo, coordcheck, ablations and verdict plans", names)
	}
	for _, name := range names {
		p, err := experiment.Builtin(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := CheckKeys(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	p, err := Plan()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckKeys(p); err != nil {
		t.Errorf("reproduce/plan.toml: %v", err)
	}
}
