package ood

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/smallinit/smallinit/corpus"
)

// TestTextsAreValidAndOutOfTraining checks every text decompresses to valid UTF-8 of the size SOURCES.md
// states, is named there, and shares no line of 30 bytes or more with any file of the training corpus.
func TestTextsAreValidAndOutOfTraining(t *testing.T) {
	src := Sources()
	var training []string
	for _, f := range corpus.Files() {
		s, err := corpus.Read(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		training = append(training, s)
	}
	want := map[string]int{"en_shakespeare": 299868, "zh_xiyouji": 297971, "zh_sanguo": 276468}
	for _, x := range Texts() {
		s, err := Read(x.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(s) || len(s) != want[x.Name] {
			t.Errorf("%s: %d bytes (valid UTF-8 %v), want %d", x.Name, len(s), utf8.ValidString(s), want[x.Name])
		}
		if !strings.Contains(src, x.Name+".txt.gz") {
			t.Errorf("%s is not in SOURCES.md", x.Name)
		}
		lines := strings.Split(s, "\n")
		checked := 0
		for i := 0; i < len(lines) && checked < 60; i += 7 {
			l := strings.TrimSpace(lines[i])
			if len(l) < 30 {
				continue
			}
			checked++
			for j, tr := range training {
				if strings.Contains(tr, l) {
					t.Errorf("%s line %d occurs in training file %s: %q", x.Name, i+1, corpus.Files()[j].Name, l)
				}
			}
		}
		if checked < 30 {
			t.Errorf("%s: only %d lines checked", x.Name, checked)
		}
	}
	if _, err := Open("en_moby_dick"); err == nil {
		t.Error("a training file opened as out-of-distribution text")
	}
}
