// Package corpus embeds smallinit's default bilingual training corpus: five gzip-compressed UTF-8 text files,
// 6.2 MB of text (3.87 MB English, 2.33 MB simplified Chinese), small enough to ship inside the binary so that
// tokenizer training and small pretraining runs work with no download. The files and their licences are listed
// in data/SOURCES.md, which must stay beside them.
//
// # Documents
//
// Each file is cut into documents, the units a data pipeline joins with the special token <|endoftext|>:
//
//   - en_moby_dick: one document per chapter; a chapter starts at a line "CHAPTER <n>." (text before the first
//     chapter heading, if any, is a document of its own).
//   - every other file: blocks of lines separated by one or more blank lines. In en_sotu_1946_2016 that is one
//     address per document (its "## <year>_<president>_<party>" heading line included), in zh_songci_0_4999
//     one ci (its "词牌（作者）" line included), in zh_classics and zh_mengxue one chapter or section.
//
// A document is a verbatim slice of the file with its leading and trailing line breaks removed.
//
// # Train/validation split
//
// The split is fixed so that held-out numbers (bits per byte, bytes per token) stay comparable across runs and
// versions. For a file of n bytes, the validation part starts at the last document start at or before byte
// ⌊n·(1−ValShare)⌋ (ValShare = 0.05) and runs to the end of the file; the training part is everything before it.
// So the split never cuts a document, train+val is exactly the file, and the validation part holds at least 5%
// of the bytes: 5.0% to 5.7% for the embedded files (the exact shares are checked by the tests). Changing this
// rule or the files changes every held-out number, so don't.
package corpus

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"strings"
)

//go:embed data/*.txt.gz data/SOURCES.md
var data embed.FS

// ValShare is the minimum share of each file's bytes held out for validation; see the package doc for the rule.
const ValShare = 0.05

// Parts of a file accepted by Documents.
const (
	Train = "train" // everything before the validation part
	Val   = "val"   // the held-out tail of the file
)

// File names one embedded file and its language ("en" or "zh"), so callers can report results per language.
type File struct {
	Name string // e.g. "en_moby_dick": the file name without ".txt.gz"
	Lang string // "en" or "zh"
}

// files lists the embedded files in a fixed order (English first, then Chinese, each alphabetical).
var files = []File{
	{"en_moby_dick", "en"},
	{"en_sotu_1946_2016", "en"},
	{"zh_classics", "zh"},
	{"zh_mengxue", "zh"},
	{"zh_songci_0_4999", "zh"},
}

// Files returns the embedded files' names and languages in a fixed order, English first. The returned slice is
// a fresh copy, so callers may modify it.
func Files() []File {
	return append([]File(nil), files...)
}

// Sources returns the text of SOURCES.md: the provenance and licence of every embedded file. A program that
// redistributes the corpus text should pass this notice on.
func Sources() string {
	b, err := data.ReadFile("data/SOURCES.md")
	if err != nil {
		panic("corpus: SOURCES.md not embedded: " + err.Error()) // impossible: go:embed guarantees it
	}
	return string(b)
}

// Read returns the decompressed text of the embedded file name (one of Files' names). It decompresses on every
// call (about 20 ms for the largest file), so callers that need a file repeatedly should keep the result.
func Read(name string) (string, error) {
	if !known(name) {
		return "", fmt.Errorf("corpus: unknown file %q (have %s)", name, names())
	}
	gz, err := data.ReadFile("data/" + name + ".txt.gz")
	if err != nil {
		return "", fmt.Errorf("corpus: %s: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return "", fmt.Errorf("corpus: %s: %w", name, err)
	}
	var sb strings.Builder
	if _, err := io.Copy(&sb, zr); err != nil {
		return "", fmt.Errorf("corpus: %s: %w", name, err)
	}
	if err := zr.Close(); err != nil {
		return "", fmt.Errorf("corpus: %s: %w", name, err)
	}
	return sb.String(), nil
}

// Split returns the fixed training and validation parts of the embedded file name; train+val is the whole file.
// The rule is in the package doc.
func Split(name string) (train, val string, err error) {
	text, err := Read(name)
	if err != nil {
		return "", "", err
	}
	cut := splitPoint(text, docStarts(name, text))
	return text[:cut], text[cut:], nil
}

// Documents returns the documents of one part ("train" or "val") of the embedded file name, in file order. See
// the package doc for where documents start; empty documents are dropped.
func Documents(name, part string) ([]string, error) {
	if part != Train && part != Val {
		return nil, fmt.Errorf("corpus: part %q: want %q or %q", part, Train, Val)
	}
	text, err := Read(name)
	if err != nil {
		return nil, err
	}
	starts := docStarts(name, text)
	cut := splitPoint(text, starts)
	var docs []string
	for i, s := range starts {
		e := len(text)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		if (part == Train) != (s < cut) {
			continue
		}
		if d := strings.Trim(text[s:e], "\r\n"); d != "" {
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// splitPoint returns the byte offset where the validation part starts: the last document start at or before
// ⌊n·(1−ValShare)⌋. starts is sorted and starts[0] == 0.
func splitPoint(text string, starts []int) int {
	limit := int(float64(len(text)) * (1 - ValShare))
	cut := 0
	for _, s := range starts {
		if s > limit {
			break
		}
		cut = s
	}
	return cut
}

// docStarts returns the byte offsets where the documents of file name start, always beginning with 0; each
// document runs to the next start. Separators (blank lines) stay at the end of the document before them.
func docStarts(name, text string) []int {
	starts := []int{0}
	if name == "en_moby_dick" {
		for off := 0; off < len(text); {
			line := text[off:]
			if i := strings.IndexByte(line, '\n'); i >= 0 {
				line = line[:i+1]
			}
			if off > 0 && isChapterHeading(line) {
				starts = append(starts, off)
			}
			off += len(line)
		}
		return starts
	}
	// Blank-line separated blocks: a document starts at the first non-blank line after a blank line.
	blank := false
	for off := 0; off < len(text); {
		line := text[off:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		isBlank := strings.TrimRight(line, "\r\n") == ""
		if blank && !isBlank && off > 0 {
			starts = append(starts, off)
		}
		blank = isBlank
		off += len(line)
	}
	return starts
}

// isChapterHeading reports whether line is a Moby-Dick chapter heading "CHAPTER <digits>.".
func isChapterHeading(line string) bool {
	rest, ok := strings.CutPrefix(line, "CHAPTER ")
	if !ok {
		return false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	return n > 0 && n < len(rest) && rest[n] == '.'
}

func known(name string) bool {
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

func names() string {
	s := make([]string, len(files))
	for i, f := range files {
		s[i] = f.Name
	}
	return strings.Join(s, ", ")
}
