package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/override"
)

// TestBuiltinPlansParse: every embedded plan parses, and the demo's arms are the study's four corners with
// typed values (a float γ, a float ε, a string gate).
func TestBuiltinPlansParse(t *testing.T) {
	for _, name := range Builtins() {
		if _, err := Builtin(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	p := demoPlan(t)
	if len(p.Groups) != 1 || len(p.Groups[0].Arms) != 4 {
		t.Fatalf("demo groups %+v, want one group of four arms", p.Groups)
	}
	want := map[string]any{"init.gamma": 1.0, "model.norm_eps": 1e-12, "model.attn_gate": "elementwise"}
	for _, s := range p.Groups[0].Arms[3].Sets {
		if w, ok := want[s.Key]; !ok || w != s.Value {
			t.Errorf("gamma1-fixed: %s = %#v, want %#v", s.Key, s.Value, w)
		}
	}
}

// TestParseRefuses: a plan that cannot run is refused with an error naming the key or the group.
func TestParseRefuses(t *testing.T) {
	good := string(demoPlan(t).Text)
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", "bogus = 1\n" + good, "unknown key bogus"},
		{"no name", strings.Replace(good, `name = "demo"`, "", 1), "name"},
		{"no groups", good[:strings.Index(good, "[[group]]")], "no [[group]]"},
		{"arms and axes", good + "\n[[group]]\nname = \"x\"\naxes = { \"init.gamma\" = [1] }\n[[group.arm]]\nname = \"a\"\n", "either"},
		{"seed axis", good + "\n[[group]]\nname = \"x\"\naxes = { seed = [1, 2] }\n", "seed is the plan's seeds"},
		{"bad compare", strings.Replace(good, `"gamma0.5-fixed"]`, `"nope"]`, 1), `no arm "nope"`},
		{"duplicate arm", good + "\n[[group]]\nname = \"x\"\n[[group.arm]]\nname = \"a\"\n[[group.arm]]\nname = \"a\"\n", `arm "a"`},
		{"data.vocab beside data.dir (issue 48)", strings.Replace(good, "vocab = 4096", "vocab = 4096\ndir = \"/x/corpus\"", 1), "data.vocab = 4096 beside data.dir"},
		{"name with a newline (issue 48: an injection into the grid file)", strings.Replace(good, `name = "demo"`, `name = "demo\nbase = \"/etc/passwd\""`, 1), `name "demo\nbase = \"/etc/passwd\"": want letters, digits`},
		{"probe data without mix", good + "\n[[group]]\nname = \"x\"\ndata = \"probes\"\naxes = { \"init.gamma\" = [1] }\n", "data.probes is false"},
	} {
		if _, err := Parse([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestOverridesAreTyped: a plan's values keep their TOML types through the one override language, so a bool
// key is a bool (not the string "true") and the grid written for a sweep group reads back the same values.
func TestOverridesAreTyped(t *testing.T) {
	p, err := Parse([]byte(strings.Replace(string(demoPlan(t).Text), `"schedule.lr" = 2e-3`, "\"schedule.lr\" = 2e-3\n\"model.qk_norm\" = true", 1)))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range p.Base {
		if s.Key == "model.qk_norm" {
			found = s.Value == true
		}
	}
	if !found {
		t.Errorf("model.qk_norm in %v is not the bool true", p.Base)
	}
	for _, kv := range []struct {
		in   string
		want any
	}{{"model.qk_norm=true", true}, {"model.attn_gate=none", "none"}, {"init.gamma=1", int64(1)}, {"model.norm_eps=1e-12", 1e-12},
		{"data.train=/a/b.tok", "/a/b.tok"}, {`model.attn_gate="elementwise"`, "elementwise"}} {
		s, err := override.Parse(kv.in)
		if err != nil || s.Value != kv.want {
			t.Errorf("%s: %#v, %v; want %#v", kv.in, s.Value, err, kv.want)
		}
		back, err := override.Parse(s.String())
		if err != nil || !override.Equal(back.Value, s.Value) {
			t.Errorf("%s written as %s reads back as %#v", kv.in, s.String(), back.Value)
		}
	}
}

// TestFreeTextOnOneLine: free text of a plan that is written into plan.txt, a report or claims.json (the title,
// report.title, data.dir, a pair's name, a tier's smoke note) is refused with a newline in it, and a tier's name
// is held to the name alphabet (each added a line of the user's to a generated file, issue 48, 3); --data with a
// newline is refused the same way before anything is written, and a string value of the LR sweep's recipe is
// written escaped in plan.txt.
func TestFreeTextOnOneLine(t *testing.T) {
	demo := string(demoPlan(t).Text)
	// The reproduction's plan (package reproduce owns it; read as a file, since reproduce imports experiment):
	// the plan with tiers.
	repro, err := os.ReadFile(filepath.Join("..", "reproduce", "plan.toml"))
	if err != nil {
		t.Fatal(err)
	}
	reproText := string(repro)
	inject := `\nbase = \"/etc/passwd\"`
	for _, tc := range []struct{ name, text, want string }{
		{"title", strings.Replace(demo, `title = "smallinit demo"`, `title = "smallinit demo`+inject+`"`, 1), `title "smallinit demo\nbase`},
		{"report.title", strings.Replace(demo, "[report]\n", "[report]\ntitle = \"r"+inject+"\"\n", 1), `report.title "r\nbase`},
		{"data.dir", strings.Replace(demo, `corpus = "embedded"`, `dir = "/x`+inject+`"`, 1), `data.dir "/x\nbase`},
		{"pair name", strings.Replace(pairPlan, `name = "a against b"`, `name = "a`+inject+`"`, 1), `pair 1: name "a\nbase`},
		{"tier name", strings.Replace(reproText, `name = "30m"`, `name = "30m`+inject+`"`, 1), `tier 1: name "30m\nbase`},
		{"tier smoke", strings.Replace(reproText, `smoke = "verdicts`, `smoke = "`+inject+`verdicts`, 1), `smoke "\nbase`},
	} {
		if _, err := Parse([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Run(context.Background(), demoPlan(t), Options{Out: out, Steps: 1, Data: "/x\nbase = \"/etc/passwd\""}); err == nil || !strings.Contains(err.Error(), `data "/x\nbase`) {
		t.Errorf("--data with a newline: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused --data wrote %s", out)
	}
	if got := setsText([]override.Set{{Key: "model.attn_gate", Value: "none\nx = 1"}, {Key: "init.gamma", Value: 0.5}}); got != `model.attn_gate = "none\nx = 1", init.gamma = 0.5` {
		t.Errorf("setsText: %s", got)
	}
}
