package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/train/rundir"
)

const primariesPlan = `
name = "p"
seeds = [0, 1, 2]
[budget]
minutes = 1
efficiency = 0.8
min_steps = 1
[data]
corpus = "embedded"
vocab = 512
[base]
"model.preset" = "tiny"
[[group]]
name = "g"
axes = { "init.gamma" = [0.5, 1] }
[primaries]
h1 = "gain at 128"
h2 = "slope of the gain"
width = 128
`

// TestStudyTablesHandedOn: Parse reads [primaries]'s horizon keys itself (checking them) and hands the table's
// other keys and [anchor] on to the study design undecoded: DecodeStudy gives each key to one reader, and a key
// neither reads is an error naming it, as Parse's own unknown keys are.
func TestStudyTablesHandedOn(t *testing.T) {
	type hyp struct {
		H1    string  `toml:"h1"`
		H2    string  `toml:"h2"`
		Delta float64 `toml:"delta"`
	}
	for _, c := range []struct {
		name, extra, parseErr, studyErr string
	}{
		{"the study's keys", "delta = 0.02\ntokens_per_param = 5\nspike_threshold = 0.5\n", "", ""},
		{"a bad horizon", "delta = 0.02\ntokens_per_param = nan\n", "primaries.tokens_per_param", ""},
		{"a bad width", "delta = 0.02\nwidth = 0\n", "primaries.width", ""},
		{"a key nobody reads", "delta = 0.02\ndelat = 1\n", "", "unknown key primaries.delat"},
		{"an unknown top-level key", "delta = 0.02\n[primarie]\nh1 = 1\n", "unknown key primarie", ""},
	} {
		p, err := Parse([]byte(primariesPlan + c.extra))
		if c.parseErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.parseErr) {
				t.Errorf("%s: Parse error %v, want one containing %q", c.name, err, c.parseErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Horizon == nil || p.Horizon.Width != 128 {
			t.Errorf("%s: horizon %+v, want width 128", c.name, p.Horizon)
		}
		var h hyp
		ok, err := p.DecodeStudy(TablePrimaries, &h)
		if c.studyErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.studyErr) {
				t.Errorf("%s: DecodeStudy error %v, want one containing %q", c.name, err, c.studyErr)
			}
			continue
		}
		if !ok || err != nil || h.H1 != "gain at 128" || h.Delta != 0.02 {
			t.Errorf("%s: DecodeStudy %v, %v: %+v", c.name, ok, err, h)
		}
		if ok, err := p.DecodeStudy(TableAnchor, &h); ok || err != nil {
			t.Errorf("%s: a plan without [anchor] decodes one: %v, %v", c.name, ok, err)
		}
	}
}

// An LR trial whose training loss rises more than spike_threshold over its running minimum is vetoed.
func TestSpikeVetoOfALearningRateTrial(t *testing.T) {
	p, err := Parse([]byte(primariesPlan + "delta = 0.02\nspike_threshold = 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		losses []float64
		veto   bool
	}{
		{"smooth", []float64{8, 7, 6.5, 6.2, 6.1}, false},
		{"a spike that recovers", []float64{8, 6, 6.9, 5.9, 5.8}, true},
		{"a rise below the threshold", []float64{8, 6, 6.4, 5.9}, false},
	} {
		dir := t.TempDir()
		var b strings.Builder
		for i, l := range c.losses {
			fmt.Fprintf(&b, `{"step":%d,"tokens":%d,"loss":%g}`+"\n", 10*(i+1), 1000*(i+1), l)
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.MetricsFile), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		spike, err := (&Outcome{}).spikeOf(p, dir)
		if veto := vetoed(p, spike); err != nil || veto != c.veto {
			t.Errorf("%s: spike %.3f, veto %v, err %v; want veto %v", c.name, spike, veto, err, c.veto)
		}
	}
}
