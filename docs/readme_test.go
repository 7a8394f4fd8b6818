package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeCommands is the README's first code block, byte for byte: the two commands a new user types first.
const readmeCommands = "```sh\n" +
	"go run ./cmd/smallinit demo     # prepare the embedded corpus, train the study's four corners, print the table\n" +
	"go test ./...                   # every test, including the PyTorch parity fixtures and the Python tests\n" +
	"```\n"

// TestREADMEShortWithItsCommandsAndItsCaveat: the README stays within 160 lines, opens with its two commands
// unchanged, says right after them what `go test ./...` skips without PyTorch and how to install it, and its
// speed table names the machine and the date of every row.
func TestREADMEShortWithItsCommandsAndItsCaveat(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > 160 {
		t.Errorf("README.md has %d lines, the budget is 160", n)
	}
	i := strings.Index(text, "```")
	if i < 0 || !strings.HasPrefix(text[i:], readmeCommands) {
		t.Errorf("README.md's first code block is not the two commands:\n%.400s", text[max(i, 0):])
	}
	after := text[i+len(readmeCommands):]
	after = strings.Join(strings.Fields(after[:strings.Index(after, "\n\n## ")]), " ") // one line, as it reads
	for _, w := range []string{"skips the live PyTorch parity", "the Python tests", "apt-get install -y python3-torch"} {
		if !strings.Contains(after, w) {
			t.Errorf("the paragraph after the commands lacks %q:\n%s", w, after)
		}
	}
	speed := text[strings.Index(text, "## Speed"):]
	speed = speed[:strings.Index(speed[1:], "\n## ")]
	rows := 0
	for _, l := range strings.Split(speed, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| machine") {
			rows++
			if !strings.Contains(l, "2026-") && !strings.HasPrefix(l, "| |") {
				t.Errorf("speed row without a date: %s", l)
			}
		}
	}
	if rows == 0 {
		t.Error("README.md has no speed table")
	}
}
