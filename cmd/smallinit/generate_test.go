package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestGenerateCommand: greedy completions are the same with the KV-cache decoder and the recomputing
// reference, the streamed text is the completion, a seed reproduces a sampled completion, and a stop string ends
// it.
func TestGenerateCommand(t *testing.T) {
	dir := writeTinyModel(t, false)
	run := func(c generateCmd) (string, string) {
		t.Helper()
		c.Model = dir
		var out bytes.Buffer
		g, err := c.run(&out, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != g.Text+"\n" {
			t.Errorf("streamed %q, completion %q", out.String(), g.Text)
		}
		return g.Text, g.Reason
	}
	greedy := generateCmd{Prompt: "Question: How many clips", MaxTokens: 80}
	a, _ := run(greedy)
	greedy.NoCache = true
	b, _ := run(greedy)
	if a != b || a == "" {
		t.Errorf("greedy with the cache %q, without %q", a, b)
	}
	sampled := generateCmd{Prompt: "A man", Temperature: 1, TopK: 20, TopP: 0.9, Seed: 3, MaxTokens: 30}
	x, _ := run(sampled)
	y, _ := run(sampled)
	if x != y {
		t.Errorf("seed 3 gave %q and %q", x, y)
	}
	if len(a) > 4 {
		stop := a[2:4]
		greedy.Stop = []string{stop}
		c, reason := run(greedy)
		if reason != "stop" || c != a[:strings.Index(a, stop)] {
			t.Errorf("stop %q: %q (%s), from %q", stop, c, reason, a)
		}
	}
	c := generateCmd{Model: dir, Prompt: "x", Temperature: -1, MaxTokens: 3}
	if _, err := c.run(io.Discard, io.Discard); err == nil {
		t.Error("negative temperature: no error")
	}
}

// TestGenerateMaxNewTokensAlias: --max-new-tokens (Hugging Face's and eval-tasks' name) sets the same count as
// --max-tokens instead of failing as an unknown flag.
func TestGenerateMaxNewTokensAlias(t *testing.T) {
	for _, flag := range []string{"--max-tokens", "--max-new-tokens"} {
		var c struct {
			Generate generateCmd `cmd:""`
		}
		parser, err := kong.New(&c, kong.Name("smallinit"), vars(), kong.Exit(func(code int) { t.Fatalf("kong exit %d", code) }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse([]string{"generate", "--model", t.TempDir(), "--prompt", "p", flag, "7"}); err != nil {
			t.Fatalf("%s: %v", flag, err)
		}
		if c.Generate.MaxTokens != 7 {
			t.Errorf("%s 7: MaxTokens %d", flag, c.Generate.MaxTokens)
		}
	}
}
