package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEngineFlagsArePreflighted: the PyTorch engine's interpreter and device are checked before the study
// writes anything, each failure one message naming the flag to fix; --device is checked when the command line
// is parsed, and the torch flags are refused with --engine go rather than ignored.
func TestEngineFlagsArePreflighted(t *testing.T) {
	cd := t.TempDir()
	noTorch := filepath.Join(cd, "python-without-torch") // a python3 that cannot see its site-packages
	if err := os.WriteFile(noTorch, []byte("#!/bin/sh\nexec python3 -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"an interpreter that is no python", []string{"--engine", "torch", "--torch-python", "/bin/true"},
			[]string{"--torch-python /bin/true", "--torch-path"}},
		{"a python without torch", []string{"--engine", "torch", "--torch-python", noTorch},
			[]string{"--torch-python " + noTorch, "cannot import torch", "--torch-path"}},
		{"a device torch has no name for", []string{"--engine", "torch", "--device", "meta"},
			[]string{"--device", "meta", "want auto, cpu, cuda or cuda:N"}},
		{"a device with the Go engine", []string{"--device", "cuda"},
			[]string{"--device cuda", "only with --engine torch"}},
		{"an interpreter with the Go engine", []string{"--torch-python", "python3"},
			[]string{"--torch-python python3", "only with --engine torch"}},
		{"a torch batch with the Go engine", []string{"--torch-batch", "4"},
			[]string{"--torch-batch 4", "only with --engine torch"}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if c.name == "a python without torch" {
				if _, err := exec.LookPath("python3"); err != nil {
					t.Skip("no python3 on PATH to hide torch from")
				}
			}
			out := filepath.Join(cd, "o-"+strings.ReplaceAll(c.name, " ", "-"))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, badBin, append([]string{"study", "demo", "--steps", "2", "--out", out}, c.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if err == nil {
				t.Fatalf("exit 0, want a refusal; stderr:\n%s", stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written before the refusal", out)
			}
		})
	}
}
