// Package docs holds smallinit's guides; its test runs the guides' runnable shell blocks so the
// documentation cannot drift from the CLI.
//
// A block is runnable when its fence reads "```sh run". The blocks of one Markdown file run in order, as one
// bash script (set -euo pipefail), in a scratch directory of their own, with a freshly built smallinit first
// on the PATH. Blocks fenced "```sh" alone are shown, not run (the full-size commands whose small twins are
// marked runnable, or commands that need a cluster).
package docs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// runnableFence opens a block the test runs.
const runnableFence = "```sh run"

// runnableBlocks returns the runnable shell blocks of a Markdown text, in order, each with the line it starts on.
func runnableBlocks(text string) ([]block, error) {
	var blocks []block
	var cur *block
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == runnableFence:
			cur = &block{line: n}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("runnable block opened on line %d is never closed", cur.line)
	}
	return blocks, nil
}

type block struct {
	line int
	text string
}

func TestRunnableBlocks(t *testing.T) {
	got, err := runnableBlocks("intro\n```sh run\na --x 1\nb\n```\n```sh\nnot run\n```\n```sh run\nc\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []block{{line: 2, text: "a --x 1\nb\n"}, {line: 9, text: "c\n"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("blocks = %v, want %v", got, want)
	}
	if _, err := runnableBlocks("```sh run\nunclosed\n"); err == nil {
		t.Fatal("an unclosed block was accepted")
	}
}

// TestGuidesRun runs every runnable block of README.md and docs/**/*.md.
func TestGuidesRun(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "README.md")}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files[1:])

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "smallinit"), "./cmd/smallinit")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building smallinit: %v\n%s", err, out)
	}

	ran := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := runnableBlocks(string(text))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(blocks) == 0 {
			continue
		}
		ran++
		rel, _ := filepath.Rel(root, f)
		t.Run(rel, func(t *testing.T) {
			var script strings.Builder
			script.WriteString("set -euo pipefail\n")
			for _, b := range blocks {
				fmt.Fprintf(&script, "echo '== %s:%d' >&2\n%s", rel, b.line, b.text)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
				"SMALLINIT_REPO="+root)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the runnable blocks of %s failed: %v\n%s", rel, err, tail(out, 4000))
			}
		})
	}
	if ran == 0 {
		t.Fatal("no Markdown file has a runnable block: the documentation test checks nothing")
	}
}

// tail keeps the last n bytes of a command's output, where its error is.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}
