package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A record that a kind cannot read is often a record of another schema: the Hugging Face release of a
// benchmark where the kind reads lm-evaluation-harness's preprocessed layout, or another task's file. The
// malformed-record message then names the schema the kind expects and the known schema nearest to the
// record's keys, so that the user learns what to convert instead of reading "invalid JSON".

// schema is one known layout of JSON-lines benchmark records.
type schema struct {
	name string
	keys []string // the top-level keys of its records
	kind Kind     // the kind that reads it ("": none does)
	note string   // for a schema no kind reads: what to do with it
}

// otherLayouts are released layouts a kind reads besides its own fields (its parser tells them apart): named
// when a record of one is given to another kind, and never hinted at for their own kind.
var otherLayouts = []schema{
	{name: "Hugging Face allenai/ai2_arc", keys: []string{"id", "question", "choices", "answerKey"}, kind: KindMultipleChoice},
	{name: "lm-evaluation-harness lambada_openai", keys: []string{"text"}, kind: KindLambada},
	{name: "Hugging Face lambada", keys: []string{"text", "domain"}, kind: KindLambada},
}

// foreignSchemas are released layouts that no kind reads as they are; the kinds' own layouts come from
// kindSpecs (their fields) and otherLayouts.
var foreignSchemas = []schema{
	{name: "Hugging Face piqa", keys: []string{"goal", "sol1", "sol2", "label"},
		note: `convert each record to {"query": "Question: " + goal, "choices": [sol1, sol2], "gold": label} (kind mc)`},
	{name: "Hugging Face winogrande", keys: []string{"sentence", "option1", "option2", "answer"},
		note: `convert each record to {"context_options": [the sentence up to "_" with option1, ... with option2], "continuation": the rest after "_", "gold": answer − 1} (kind winogrande)`},
	{name: "Hugging Face cais/mmlu", keys: []string{"question", "subject", "choices", "answer"},
		note: `convert each record to {"query": "Question: " + question, "choices": choices, "gold": answer} (kind mc)`},
}

// knownSchemas is every layout a message may name: each kind's own (kindSpecs' fields), then the foreign ones.
func knownSchemas() []schema {
	var out []schema
	for _, k := range slices.Sorted(maps.Keys(kindSpecs)) {
		if ks := kindSpecs[k]; len(ks.fields) > 0 {
			out = append(out, schema{name: "kind " + string(k), keys: ks.fields, kind: k})
		}
	}
	out = append(out, otherLayouts...)
	return append(out, foreignSchemas...)
}

// schemaHint explains a JSON record that kind k could not read: the layout k expects and, when the record's
// keys are nearer to another known layout's, that layout's name and what to do. It returns "" for a record
// that is not a JSON object or whose keys are the ones k reads.
func schemaHint(k Kind, line []byte) string {
	want := kindSpecs[k].fields
	var obj map[string]json.RawMessage
	if len(want) == 0 || json.Unmarshal(line, &obj) != nil {
		return ""
	}
	keys := slices.Sorted(maps.Keys(obj))
	for _, s := range otherLayouts {
		if s.kind == k && !slices.ContainsFunc(s.keys, func(key string) bool { return !slices.Contains(keys, key) }) {
			return "" // a layout k reads: the parser's own message says what is wrong
		}
	}
	var missing []string
	for _, f := range want {
		if _, ok := obj[f]; !ok && !slices.Contains(kindSpecs[k].optional, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	hint := fmt.Sprintf("kind %s reads {%s}; this record has {%s}", k, strings.Join(want, ", "), strings.Join(keys, ", "))
	best, bestScore := schema{}, 0.0
	for _, s := range knownSchemas() {
		if s.kind == k {
			continue
		}
		if sc := keyOverlap(keys, s.keys); sc > bestScore {
			best, bestScore = s, sc
		}
	}
	switch {
	case bestScore < 0.5:
	case best.kind != "":
		hint += fmt.Sprintf(", the layout of %s (is the task's name right?)", best.name)
	default:
		hint += fmt.Sprintf(", the %s layout, which no kind reads as it is: %s", best.name, best.note)
	}
	return hint
}

// keyOverlap is the Jaccard similarity of two key sets: shared keys over all keys.
func keyOverlap(a, b []string) float64 {
	shared := 0
	for _, k := range a {
		if slices.Contains(b, k) {
			shared++
		}
	}
	all := len(a) + len(b) - shared
	if all == 0 {
		return 0
	}
	return float64(shared) / float64(all)
}

// compression is a compressed-file format, known by its first bytes.
type compression struct {
	name, magic, ext, tool string
}

var compressions = []compression{
	{"gzip", "\x1f\x8b", ".gz", "gunzip -k"},
	{"bzip2", "BZh", ".bz2", "bunzip2 -k"},
	{"xz", "\xfd7zXZ\x00", ".xz", "unxz -k"},
	{"zstd", "\x28\xb5\x2f\xfd", ".zst", "unzstd"},
	{"zip", "PK\x03\x04", ".zip", "unzip"},
}

// checkCompressed refuses a compressed record file, naming the format and the command that decompresses it:
// read as text it would be one long malformed record.
func checkCompressed(f *os.File, path string) error {
	head := make([]byte, 8)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil // the read that follows reports it
	}
	head = head[:n]
	for _, c := range compressions {
		if bytes.HasPrefix(head, []byte(c.magic)) {
			return fmt.Errorf("%s is %s-compressed: decompress it first (%s %s) and pass the decompressed file", path, c.name, c.tool, path)
		}
	}
	return nil
}

// compressedHint is what a directory without .csv files holds that may be them, compressed: "" or a hint.
func compressedHint(ents []os.DirEntry) string {
	for _, e := range ents {
		for _, c := range compressions {
			if strings.HasSuffix(strings.ToLower(e.Name()), ".csv"+c.ext) {
				return fmt.Sprintf(" (it has %s, %s-compressed: decompress the files first)", filepath.Base(e.Name()), c.name)
			}
		}
	}
	return ""
}
