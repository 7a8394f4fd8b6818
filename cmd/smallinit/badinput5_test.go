//go:build linux || darwin

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// modeCases are flags that did nothing in the mode their command ran in (issue 48, 2: `--device` with
// `--engine go` was one; these are the others a survey of the commands found): each was ignored, and is
// refused naming the flag, its value and the mode it needs.
func modeCases() []badCase {
	flag := func(cmd string, want []string, args ...string) badCase {
		last := ""
		for _, a := range args {
			if strings.HasPrefix(a, "--") {
				last = a
			}
		}
		return badCase{name: "flag that does nothing: " + last, cmd: cmd, want: want, setup: func(t *testing.T, cd string) ([]string, []string) {
			return args, []string{"o", "r.html"}
		}}
	}
	return []badCase{
		// Issue 48 (older set): a resume of an empty state.json (a checkpoint of a build before manifests, whose
		// files nothing else checks) is refused naming the file and what to do.
		{name: "resume an empty state.json", cmd: "train", want: []string{"state.json: empty", "move", "away"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			run := copyDir(t, cd, "run")
			ck := filepath.Join(run, "checkpoints", "step-000002")
			write(t, ck, "state.json", nil)
			os.Remove(filepath.Join(ck, "manifest.json"))
			return []string{"--resume", run}, []string{"run/metrics.jsonl"}
		}},
		// Issue 48, 5: report --out on a directory gave a bare "rename … file exists".
		{name: "out is a directory", cmd: "report", want: []string{"is a directory, not the HTML file", "rm -r"}, setup: func(t *testing.T, cd string) ([]string, []string) {
			write(t, cd, "rdir/keep", []byte("x"))
			return []string{fix("run"), "--out", filepath.Join(cd, "rdir")}, []string{"rdir/keep"}
		}},
		flag("init", []string{"--gamma 0.5", "only with --rule gamma"}, "--out", "o", "--rule", "fixed", "--gamma", "0.5"),
		flag("init", []string{"--std 0.01", "only with --rule fixed"}, "--out", "o", "--std", "0.01"),
		flag("generate", []string{"--top-k 5", "--temperature > 0"}, "--model", fix("model"), "--prompt", "a", "--temperature", "0", "--top-k", "5"),
		flag("generate", []string{"--seed 3", "greedy"}, "--model", fix("model"), "--prompt", "a", "--temperature", "0", "--seed", "3"),
		flag("report", []string{"--compare-windows 5", "only with --compare A=DIR,B=DIR"}, fix("run"), "--out", "r.html", "--compare-windows", "5"),
		flag("report", []string{"--width 800", "only with --screenshot"}, fix("run"), "--out", "r.html", "--width", "800"),
		flag("report", []string{"--heatmap-tensor q_proj", "--no-heatmaps"}, fix("run"), "--out", "r.html", "--no-heatmaps", "--heatmap-tensor", "q_proj"),
		flag("eval-tasks", []string{"--shots 3", "only with --fewshot"}, "--model", fix("model"), "--task", "lambada="+fix("lambada.jsonl"), "--shots", "3"),
		flag("probes make", []string{"--digits 4", "not with --task"}, "--out", "o", "--task", "anchor", "--digits", "4"),
		flag("anchor make", []string{"--examples 10", "only with --task anchor"}, "--out", "o", "--task", "anchor-mix", "--examples", "10"),
		flag("coordcheck", []string{"--gamma 0.5", "--print-plan"}, "--print-plan", "--gamma", "0.5"),
		flag("demo", []string{"--minutes 3", "no --steps"}, "--out", "o", "--steps", "1", "--minutes", "3"),
		flag("study", []string{"plan demo", "--budget 10m0s", "no --steps"}, "demo", "--out", "o", "--steps", "1", "--budget", "10m"),
		flag("study", []string{"plan coordcheck is a coordcheck plan", "--steps 5", "only with a training plan"}, "coordcheck", "--out", "o", "--steps", "5"),
		flag("demo", []string{"--steps 5", "--print-plan"}, "--print-plan", "--steps", "5"),
		flag("analyze", []string{"--probe-len 32", "only with --tokens"}, "--model", fix("model"), "--probe-len", "32"),
		flag("anchor diagram", []string{"--mix-depth 3", "--per-combo 0"}, "--out", "o", "--per-combo", "0", "--mix-depth", "3"),
		flag("sweep run", []string{"--jobs 2", "--index"}, fix("run.toml"), "--out", "o", "--index", "0", "--jobs", "2"),
		flag("study", []string{"--jobs 2", "--index"}, "demo", "--out", "o", "--steps", "1", "--index", "0", "--jobs", "2"),
		flag("study", []string{"--force", "not with --steps"}, "demo", "--out", "o", "--steps", "1", "--force"),
		flag("reproduce", []string{"--force", "not with --steps"}, "--out", "o", "--steps", "1", "--force"),
		flag("data prepare", []string{"--tokenizer-sample-mb 5", "not with --tokenizer"}, "--out", "o", "--tokenizer", filepath.Join(badFix, "model", "tokenizer.json"), "--tokenizer-sample-mb", "5"),
	}
}
