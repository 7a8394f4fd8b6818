// Package ood embeds smallinit's out-of-distribution texts: small public-domain samples, in English and
// Chinese, of genres the training corpus does not hold (Shakespeare's plays, two classical Chinese novels), so
// that a model's generalisation can be scored beside the validation split (docs/definitions.md §7). They are never training
// data. Provenance and licences are in data/SOURCES.md, which must stay beside the files.
package ood

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
)

//go:embed data/*.txt.gz data/SOURCES.md
var data embed.FS

// Text names one embedded text and its language.
type Text struct {
	Name  string // e.g. "en_shakespeare": the file name without ".txt.gz"
	Lang  string // "en" or "zh"
	Genre string // what it is, for reports
}

var texts = []Text{
	{"en_shakespeare", "en", "Shakespeare's plays (tiny Shakespeare, first 300 KB)"},
	{"zh_sanguo", "zh", "三国演义, chapters 1-18"},
	{"zh_xiyouji", "zh", "西游记, chapters 1-14"},
}

// Texts returns the embedded texts in a fixed order, English first; the slice is a fresh copy.
func Texts() []Text { return append([]Text(nil), texts...) }

// Sources returns data/SOURCES.md: provenance and licence of every text.
func Sources() string {
	b, err := data.ReadFile("data/SOURCES.md")
	if err != nil {
		panic("ood: SOURCES.md not embedded: " + err.Error()) // impossible: go:embed guarantees it
	}
	return string(b)
}

// Open returns a reader of the decompressed text name (one of Texts' names).
func Open(name string) (io.Reader, error) {
	known := false
	for _, t := range texts {
		known = known || t.Name == name
	}
	if !known {
		return nil, fmt.Errorf("ood: unknown text %q", name)
	}
	gz, err := data.ReadFile("data/" + name + ".txt.gz")
	if err != nil {
		return nil, fmt.Errorf("ood: %s: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("ood: %s: %w", name, err)
	}
	return zr, nil
}

// Read returns the whole decompressed text name.
func Read(name string) (string, error) {
	r, err := Open(name)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("ood: %s: %w", name, err)
	}
	return string(b), nil
}
