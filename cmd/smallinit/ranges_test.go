package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func intp(v int) *int { return &v }

func TestJoinNegativeValues(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"data", "prepare", "--workers", "-3"}, []string{"data", "prepare", "--workers=-3"}},
		{[]string{"generate", "--temperature", "-1.5", "--top-p", "0.9"}, []string{"generate", "--temperature=-1.5", "--top-p", "0.9"}},
		{[]string{"init", "--shard-size", "-5MB"}, []string{"init", "--shard-size=-5MB"}},
		{[]string{"--x=-3", "--json", "--", "--y", "-4"}, []string{"--x=-3", "--json", "--", "--y", "-4"}},
		{[]string{"--set", "-notanumber"}, []string{"--set", "-notanumber"}},
	} {
		if got := joinNegativeValues(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("joinNegativeValues(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFlagRanges runs the binary with out-of-range values, after a space and after "=": each is refused with a
// message naming the flag and its range, never the parser's "(short flag)" or a silent default.
func TestFlagRanges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := t.TempDir() + "/smallinit"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "prepare", "--out", dir + "/d", "--workers", "-3"}, "--workers -3: must be in [0, 1024]"},
		{[]string{"data", "prepare", "--out", dir + "/d", "--workers=-3"}, "--workers -3: must be in [0, 1024]"},
		{[]string{"data", "prepare", "--out", dir + "/d", "--vocab", "0"}, "--vocab 0: must be in [257"},
		{[]string{"eval-tasks", "--model", dir, "--task", "hellaswag=x", "--shots", "-2"}, "--shots -2: must be ≥ 0"},
		{[]string{"generate", "--model", dir, "--prompt", "a", "--max-tokens", "-1"}, "--max-tokens -1: must be in [1, 1048576]"},
		{[]string{"generate", "--model", dir, "--prompt", "a", "--temperature", "-1"}, "--temperature -1: must be ≥ 0"},
		{[]string{"init", "--out", dir + "/m", "--shard-size", "-5MB"}, "--shard-size -5MB: must be positive"},
		{[]string{"analyze", "--model", dir, "--probes", "1000000000"}, "--probes 1000000000: must be in [1, 4096]"},
		// Issue 48: bench --threads 100000 panicked in kernel.NewPool; the others were accepted.
		{[]string{"bench", "--threads", "100000"}, "--threads 100000: must be in [0, 1024] (the range of train.threads"},
		{[]string{"bench", "--threads", "-2"}, "--threads -2: must be in [0, 1024]"},
		{[]string{"bench", "--steps", "1000000000"}, "--steps 1000000000: must be in [1, 100000]"},
		{[]string{"bench", "--warmup", "1000000000"}, "--warmup 1000000000: must be in [0, 100000]"},
		{[]string{"data", "prepare", "--out", dir + "/d", "--workers", "1000000"}, "--workers 1000000: must be in [0, 1024]"},
		// Issue 48, 5 (the rest of the audit): each was accepted.
		{[]string{"study", "demo", "--out", dir + "/o", "--steps", "2000000000"}, "--steps 2000000000: must be in [1, 1000000000]"},
		{[]string{"reproduce", "--out", dir + "/o", "--steps", "2000000000"}, "--steps 2000000000: must be in [1, 1000000000]"},
		{[]string{"demo", "--out", dir + "/o", "--steps", "2000000000"}, "--steps 2000000000: must be in [1, 1000000000]"},
		{[]string{"compare", "--a", dir, "--b", dir, "--tokens", bin, "--windows", "-3"}, "--windows -3: must be in [0, 16777216] (0: every window)"},
		{[]string{"compare", "--a", dir, "--b", dir, "--tokens", bin, "--bins", "100000000"}, "--bins 100000000: must be in [1, 1000]"},
		{[]string{"audit", "--model", dir, "--z", "-1"}, "--z -1: must be a finite number > 0"},
		{[]string{"report", dir, "--out", dir + "/r.html", "--compare-windows", "-5"}, "--compare-windows -5: must be in [0, 16777216]"},
		{[]string{"report", dir, "--out", dir + "/r.html", "--screenshot", dir + "/s.png", "--width", "-5"}, "--width -5: must be in [100, 16384]"},
		{[]string{"coordcheck", "--gamma", "-1"}, "--gamma -1: init.gamma"},
		{[]string{"coordcheck", "--lr", "-1"}, "--lr -1: schedule.lr = -1: must be in (0, 10)"},
		{[]string{"sweep", "run", bin, "--out", dir + "/o", "--stale-after", "-1s"}, "--stale-after -1s: must be in (0, 168h]"},
		{[]string{"sweep", "status", dir, "--stale-after", "-1s"}, "--stale-after -1s: must be in (0, 168h]"},
		{[]string{"generate", "--model", dir, "--prompt", "a", "--max-tokens", "1000000000"}, "--max-tokens 1000000000: must be in [1, 1048576]"},
		{[]string{"eval-tasks", "--model", dir, "--task", "hellaswag=x", "--max-new-tokens", "1000000000"}, "--max-new-tokens 1000000000: must be in [1, 1048576]"},
		{[]string{"init", "--out", dir + "/m", "--gamma", "-1"}, "--gamma -1: init.gamma = -1: must be in [0, 4]"},
		{[]string{"init", "--out", dir + "/m", "--rule", "fixed", "--std", "-1"}, "--std -1: init.std = -1"},
		{[]string{"anchor", "diagram", "--out", dir + "/a", "--gammas", "-1"}, "--gammas -1: init.gamma = -1"},
		{[]string{"anchor", "diagram", "--out", dir + "/a", "--lrs", "-1"}, "--lrs -1: schedule.lr = -1"},
		// Issue 48, 5 (upper bounds): each was accepted, the window counts as "all", the probe length cut to the
		// model's context, the widths and steps run until memory or patience gave out.
		{[]string{"coordcheck", "--widths", "64,100000000"}, "--widths 64,100000000: width 100000000 must be in [1, 16777216] (model.hidden_size)"},
		{[]string{"coordcheck", "--widths", "64"}, "--widths 64: want 2 to 64 widths"},
		{[]string{"coordcheck", "--widths", "64,128,64"}, "--widths 64,128,64: width 64 given twice"},
		{[]string{"coordcheck", "--steps", "0,1000000000"}, "--steps 0,1000000000: step 1000000000 must be in [0, 100000]"},
		{[]string{"compare", "--a", dir, "--b", dir, "--tokens", bin, "--windows", "1000000000"}, "--windows 1000000000: must be in [0, 16777216]"},
		{[]string{"demo", "--out", dir + "/o", "--windows", "1000000000"}, "--windows 1000000000: must be in [0, 16777216]"},
		{[]string{"report", dir, "--out", dir + "/r.html", "--compare", "A=" + dir + ",B=" + dir, "--compare-windows", "1000000000"}, "--compare-windows 1000000000: must be in [0, 16777216]"},
		{[]string{"analyze", "--model", fix("model"), "--tokens", fix("tokens.tok"), "--probe-len", "100000"}, "--probe-len 100000: must be in [2, "},
		{[]string{"analyze", "--model", fix("model"), "--tokens", fix("tokens.tok"), "--probe-len", "1"}, "--probe-len 1: must be in [2, the model's context]"},
		{[]string{"data", "prepare", "--out", dir + "/d", "--in", bin, "--text-column", ""}, `--text-column "": name the JSON field or Parquet column`},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Env = os.Environ()
		err := cmd.Run()
		if err == nil || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "short flag") {
			t.Errorf("smallinit %s: %v\n%s\nwant %q", strings.Join(tc.args, " "), err, stderr.String(), tc.want)
		}
	}
}
