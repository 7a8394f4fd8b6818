package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
)

// TestEvalAndCompareSayWhatTheyScoreAndHowFar: eval and compare print, before any scoring, what they score,
// and then progress lines (here at every update) counting windows of the total with a rate, ending at all
// of them; the result still goes to stdout alone.
func TestEvalAndCompareSayWhatTheyScoreAndHowFar(t *testing.T) {
	dir := writeTinyModel(t, false)
	const T, windows = 64, 10
	rng := rand.New(rand.NewPCG(4, 4))
	ids := make([]int32, windows*T+1)
	for i := range ids {
		ids[i] = int32(rng.IntN(200))
	}
	toks := filepath.Join(t.TempDir(), "val.tok")
	if err := data.WriteTokens(toks, ids); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func(stdout, log *bytes.Buffer) error
		head string
	}{
		{"eval", func(stdout, log *bytes.Buffer) error {
			return (&evalCmd{Model: dir, Tokens: toks, Batch: 3, progressEvery: 1}).run(context.Background(), stdout, log, false)
		}, fmt.Sprintf("eval: scoring %s on %s: %d tokens in windows of %d", dir, toks, len(ids), T)},
		{"compare", func(stdout, log *bytes.Buffer) error {
			return (&compareCmd{A: dir, B: dir, Tokens: toks, Bins: 2, progressEvery: 1}).run(stdout, log, false)
		}, fmt.Sprintf("compare: scoring %s (A) and %s (B) on %s", dir, dir, toks)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, log bytes.Buffer
			if err := c.run(&stdout, &log); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if !strings.HasPrefix(lines[0], c.head) {
				t.Errorf("first line %q, want it to start %q", lines[0], c.head)
			}
			last := lines[len(lines)-1]
			if len(lines) < 2 || !strings.HasPrefix(last, fmt.Sprintf("%s: %d of %d windows (100%%), ", c.name, windows, windows)) || !strings.Contains(last, "windows/s") {
				t.Errorf("progress lines:\n%s\nwant the last to count %d of %d windows with a rate", log.String(), windows, windows)
			}
			if stdout.Len() == 0 || strings.Contains(stdout.String(), "windows/s") {
				t.Errorf("stdout %q: want the result alone", stdout.String())
			}
		})
	}
}
