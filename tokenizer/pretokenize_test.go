package tokenizer

import (
	"encoding/json"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
)

var splitters = map[string]*splitter{"gpt2": gpt2Splitter, "llama3": llama3Splitter, "smallinit": smallinitSplitter}

// TestSplitterMatchesRegex checks that each hand-written splitter cuts text exactly as its regex does, on the
// fixture testdata/pretok_cases.json (edge cases, corpus snippets and random strings split by Python's regex
// module; see testdata/gen_pretok.py).
func TestSplitterMatchesRegex(t *testing.T) {
	raw, err := os.ReadFile("testdata/pretok_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var fix struct {
		Regex map[string]string
		Cases []struct {
			Splitter string
			Text     string
			Pieces   []string
		}
	}
	if err := json.Unmarshal(raw, &fix); err != nil {
		t.Fatal(err)
	}
	for name, sp := range splitters {
		if fix.Regex[name] != sp.regex {
			t.Errorf("%s: fixture regex %q differs from the splitter's %q", name, fix.Regex[name], sp.regex)
		}
	}
	fails := 0
	for _, c := range fix.Cases {
		got := splitters[c.Splitter].split(c.Text)
		if len(c.Pieces) == 0 {
			c.Pieces = nil
		}
		if !slices.Equal(got, c.Pieces) {
			fails++
			if fails <= 10 {
				t.Errorf("%s %q:\n got %q\nwant %q", c.Splitter, c.Text, got, c.Pieces)
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d of %d cases differ", fails, len(fix.Cases))
	}
}

// TestSplitterCoversInput checks that pre-tokens partition any byte string, invalid UTF-8 included, and that
// smallinit's never hold more than CJKMaxRun CJK characters.
func TestSplitterCoversInput(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	pool := []string{"a", "Z", " ", "\n", "\r", "\t", "'", "s", "1", ".", "中", "文", "ひ", "\xff", "\xe4\xb8", "\x80", "é"}
	for trial := 0; trial < 2000; trial++ {
		var sb strings.Builder
		for n := rng.Intn(40); n > 0; n-- {
			sb.WriteString(pool[rng.Intn(len(pool))])
		}
		text := sb.String()
		for name, sp := range splitters {
			pieces := sp.split(text)
			if strings.Join(pieces, "") != text {
				t.Fatalf("%s: pieces of %q do not join to it: %q", name, text, pieces)
			}
			for _, p := range pieces {
				if p == "" {
					t.Fatalf("%s: empty pre-token in %q", name, text)
				}
				if sp.cjk > 0 && strings.Count(p, "中")+strings.Count(p, "文")+strings.Count(p, "ひ") > sp.cjk {
					t.Fatalf("%s: pre-token %q holds more than %d CJK characters", name, p, sp.cjk)
				}
			}
		}
	}
}
