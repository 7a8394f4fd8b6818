package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestJudgeRefusesBadInput: judge names the file or flag it cannot use.
func TestJudgeRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cmd  judgeCmd
		want string
	}{
		{judgeCmd{Plan: "verdict-20tpp-ladder", Outs: []string{dir}, Bootstrap: 10}, filepath.Join(dir, "summary.json")},
		{judgeCmd{Plan: "demo", Outs: []string{dir}, Bootstrap: 10}, "no [primaries]"},
		{judgeCmd{Plan: "verdict-20tpp-ladder", Outs: []string{dir}, Bootstrap: -1}, "--bootstrap -1"},
		{judgeCmd{Plan: "verdict-20tpp-ladder", Outs: []string{dir}, Bootstrap: 10, OODWindows: -2}, "--ood-windows -2"},
		// The held-out archives are checked against the corpus before anything is read or scored.
		{judgeCmd{Plan: "verdict-20tpp-ladder", Outs: []string{dir}, Bootstrap: 10, Partial: true, HeldOut: []string{"sotu.tgz"}}, "--held-out: " + dir},
	} {
		err := tc.cmd.run(io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("judge %s %v: %v, want an error naming %q", tc.cmd.Plan, tc.cmd.Outs, err, tc.want)
		}
	}
}
