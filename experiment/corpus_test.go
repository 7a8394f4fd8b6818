package experiment

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
)

// TestTrainTokens: a plan that tunes draws from the training split less the LR-selection slice: the slice's own
// count once select.json is written, and before it the share's estimate, which the printed plan calls "about"
// (the 8 h record's plan printed the estimate 28,481,884 as if counted; the cut left 28,481,840).
func TestTrainTokens(t *testing.T) {
	st := &data.Stats{Source: "archives: x.tgz", Train: data.SplitStats{Tokens: 29980931}}
	tuned, plain := &Plan{Tune: &TuneSpec{}}, &Plan{}
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		p         *Plan
		sel       bool
		want      int64
		estimated bool
		line      string
	}{
		{"no tuning: the whole training split", plain, false, 29980931, false, "x.tgz: 29980931 training tokens the runs draw from\n"},
		{"tuning, slice not cut: the share's estimate", tuned, false, 28481884, true, "x.tgz: about 28481884 training tokens the runs draw from (the training split less the LR-selection slice's share, 5%, before the slice is cut)\n"},
		{"tuning, slice cut: its count", tuned, true, 28481840, false, "x.tgz: 28481840 training tokens the runs draw from (the training split less the LR-selection slice)\n"},
	} {
		if tc.sel {
			b, _ := json.Marshal(data.SelectionStats{Share: 0.05, Train: data.SplitStats{Tokens: 28481840}})
			if err := os.WriteFile(filepath.Join(dir, data.SelectStatsFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		n, est := trainTokens(tc.p, dir, st)
		if n != tc.want || est != tc.estimated {
			t.Errorf("%s: %d (estimated %v), want %d (%v)", tc.name, n, est, tc.want, tc.estimated)
		}
		d := &Description{Plan: tc.p, Tune: tc.p.Tune, Corpus: st.Source, TrainTokens: n, TrainTokensEstimated: est}
		var w bytes.Buffer
		d.writeCorpus(&w)
		if first, _, _ := strings.Cut(w.String(), "\n"); "corpus: archives: "+strings.TrimSuffix(tc.line, "\n") != first {
			t.Errorf("%s: prints %q, want %q", tc.name, first, "corpus: archives: "+tc.line)
		}
	}
}
