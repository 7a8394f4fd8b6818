package corpus

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestFilesDecompressAndLanguages checks that every embedded file decompresses to non-trivial valid UTF-8 and
// that its language tag matches its script: English files are mostly ASCII, Chinese files mostly Han.
func TestFilesDecompressAndLanguages(t *testing.T) {
	want := map[string]string{
		"en_moby_dick": "en", "en_sotu_1946_2016": "en",
		"zh_classics": "zh", "zh_mengxue": "zh", "zh_songci_0_4999": "zh",
	}
	fs := Files()
	if len(fs) != len(want) {
		t.Fatalf("Files() = %d files, want %d", len(fs), len(want))
	}
	total := 0
	for _, f := range fs {
		if want[f.Name] != f.Lang {
			t.Errorf("%s: lang %q, want %q", f.Name, f.Lang, want[f.Name])
		}
		text, err := Read(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		total += len(text)
		if len(text) < 100_000 || !utf8.ValidString(text) {
			t.Errorf("%s: %d bytes, valid UTF-8 %v", f.Name, len(text), utf8.ValidString(text))
		}
		var han, ascii, runes int
		for _, r := range text {
			runes++
			if r < 128 {
				ascii++
			}
			if unicode.Is(unicode.Han, r) {
				han++
			}
		}
		switch f.Lang {
		case "en":
			if float64(ascii)/float64(runes) < 0.95 {
				t.Errorf("%s: only %d of %d runes ASCII", f.Name, ascii, runes)
			}
		case "zh":
			if float64(han)/float64(runes) < 0.6 {
				t.Errorf("%s: only %d of %d runes Han", f.Name, han, runes)
			}
		}
	}
	if total < 6_000_000 || total > 6_500_000 {
		t.Errorf("corpus is %d bytes, want about 6.2 MB", total)
	}
}

// TestReadUnknownFile checks that a wrong name is an error naming the known files, not a panic.
func TestReadUnknownFile(t *testing.T) {
	if _, err := Read("en_nope"); err == nil || !strings.Contains(err.Error(), "en_moby_dick") {
		t.Errorf("Read(unknown) error = %v", err)
	}
	if _, _, err := Split("../go.mod"); err == nil {
		t.Error("Split(path) succeeded")
	}
	if _, err := Documents("en_moby_dick", "test"); err == nil {
		t.Error("Documents(part test) succeeded")
	}
}

// TestSplitCoversDisjointDeterministic checks the split rule: train+val is exactly the file, val is the tail
// starting at a document start, its share is in [ValShare, ValShare+0.01), and two calls agree.
func TestSplitCoversDisjointDeterministic(t *testing.T) {
	for _, f := range Files() {
		text, err := Read(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		train, val, err := Split(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if train+val != text {
			t.Errorf("%s: train+val is not the file", f.Name)
		}
		share := float64(len(val)) / float64(len(text))
		if share < ValShare || share >= ValShare+0.01 {
			t.Errorf("%s: validation share %.4f outside [%.2f, %.2f)", f.Name, share, ValShare, ValShare+0.01)
		}
		if !strings.HasSuffix(train, "\n") {
			t.Errorf("%s: train part does not end at a line boundary", f.Name)
		}
		train2, val2, _ := Split(f.Name)
		if train2 != train || val2 != val {
			t.Errorf("%s: split not deterministic", f.Name)
		}
		t.Logf("%s: %d train bytes, %d val bytes (%.2f%%)", f.Name, len(train), len(val), 100*share)
	}
}

// TestDocuments checks that documents are verbatim, non-empty, in order, fall on the right side of the split,
// and come in the expected numbers (135 chapters, 73 addresses, 5000 ci).
func TestDocuments(t *testing.T) {
	wantCount := map[string]int{"en_moby_dick": 135, "en_sotu_1946_2016": 73, "zh_songci_0_4999": 5000}
	for _, f := range Files() {
		train, val, err := Split(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, part := range []struct{ name, text string }{{Train, train}, {Val, val}} {
			docs, err := Documents(f.Name, part.name)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) == 0 {
				t.Fatalf("%s %s: no documents", f.Name, part.name)
			}
			off := 0
			for _, d := range docs {
				if d == "" || d[0] == '\n' || d[len(d)-1] == '\n' {
					t.Fatalf("%s %s: document not trimmed: %.40q", f.Name, part.name, d)
				}
				i := strings.Index(part.text[off:], d)
				if i < 0 {
					t.Fatalf("%s %s: document not found in order in its part: %.40q", f.Name, part.name, d)
				}
				if strings.Trim(part.text[off:off+i], "\n") != "" {
					t.Fatalf("%s %s: text between documents lost: %.40q", f.Name, part.name, part.text[off:off+i])
				}
				off += i + len(d)
			}
			if strings.Trim(part.text[off:], "\n") != "" {
				t.Errorf("%s %s: text after the last document lost", f.Name, part.name)
			}
			n += len(docs)
		}
		if w, ok := wantCount[f.Name]; ok && n != w {
			t.Errorf("%s: %d documents, want %d", f.Name, n, w)
		}
		first, _ := Documents(f.Name, Train)
		switch f.Name {
		case "en_moby_dick":
			if !strings.HasPrefix(first[0], "CHAPTER 1. Loomings.") || !strings.HasPrefix(first[1], "CHAPTER 2.") {
				t.Errorf("moby dick chapters start %.30q, %.30q", first[0], first[1])
			}
		case "en_sotu_1946_2016":
			for _, d := range first {
				if !strings.HasPrefix(d, "## ") {
					t.Errorf("sotu document does not start with its heading: %.40q", d)
				}
			}
		}
	}
}

// TestSourcesNotice checks that the licence notice is embedded beside the data and names every file.
func TestSourcesNotice(t *testing.T) {
	s := Sources()
	for _, f := range Files() {
		if !strings.Contains(s, f.Name+".txt.gz") {
			t.Errorf("SOURCES.md does not mention %s", f.Name)
		}
	}
}
