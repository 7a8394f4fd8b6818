package docs

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A claim link ties a number of the README's verdicts to the record it comes from: a Markdown link to a committed
// JSON record whose title selects the value it states, e.g.
//
//	[+0.028 [+0.017, +0.040]](docs/results/X.json "claims[id=H1].tests[0].estimate")
//
// or its reference form, `[+0.028 …][h1]` with `[h1]: docs/results/X.json "claims[id=H1].tests[0].estimate"` on
// a line of its own. Rendered, it is a link to the record with the selector as its tooltip; checked, every number
// of its text must be one of the numbers under the selected value, printed at the text's precision. The selector is
// a dot path of object keys, each optionally followed by [N] (the Nth element of an array) or [key=value] (the
// element whose key holds value, as text).
type claimLink struct {
	text, file, selector string
}

var (
	// inlineClaimLink: [text](file.json "selector"); the text may hold one level of brackets (an interval).
	inlineClaimLink = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\(([^()\s]+\.json) "([^"]+)"\)`)
	// refClaimUse: [text][label]; refClaimDef: [label]: file.json "selector" on a line of its own.
	refClaimUse = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\[([^\[\]]+)\]`)
	refClaimDef = regexp.MustCompile(`(?m)^\[([^\[\]]+)\]: (\S+\.json) "([^"]+)"$`)
	// numberToken is a number as the README writes it: an optional sign (ASCII or U+2212), digits, an optional
	// point and digits, an optional percent sign; claimNumbers keeps the claim numbers among them.
	numberToken = regexp.MustCompile(`([+\-−]?)(\d+)(?:\.(\d+))?(%?)`)
)

// claimLinks returns the claim links of a Markdown text, inline and by reference, in order of appearance (inline
// first). A reference use whose label has no JSON definition is not a claim link (an ordinary reference link).
func claimLinks(text string) []claimLink {
	var out []claimLink
	for _, m := range inlineClaimLink.FindAllStringSubmatch(text, -1) {
		out = append(out, claimLink{text: m[1], file: m[2], selector: m[3]})
	}
	defs := map[string][2]string{}
	for _, m := range refClaimDef.FindAllStringSubmatch(text, -1) {
		defs[strings.ToLower(m[1])] = [2]string{m[2], m[3]}
	}
	for _, m := range refClaimUse.FindAllStringSubmatch(text, -1) {
		if d, ok := defs[strings.ToLower(m[2])]; ok {
			out = append(out, claimLink{text: m[1], file: d[0], selector: d[1]})
		}
	}
	return out
}

// selectJSON walks v along a selector (see claimLink).
func selectJSON(v any, selector string) (any, error) {
	cur := v
	for _, part := range selectorParts(selector) {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%q: not an object where key %q is asked", selector, key)
			}
			if cur, ok = obj[key]; !ok {
				return nil, fmt.Errorf("%q: no key %q", selector, key)
			}
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if !ok {
				return nil, fmt.Errorf("%q: unclosed [", selector)
			}
			arr, isArr := cur.([]any)
			if !isArr {
				return nil, fmt.Errorf("%q: not an array where [%s] is asked", selector, idx)
			}
			if k, want, byKey := strings.Cut(idx, "="); byKey {
				found := false
				for _, e := range arr {
					if obj, ok := e.(map[string]any); ok && fmt.Sprint(obj[k]) == want {
						cur, found = e, true
						break
					}
				}
				if !found {
					return nil, fmt.Errorf("%q: no element with %s = %q", selector, k, want)
				}
			} else {
				i, err := strconv.Atoi(idx)
				if err != nil || i < 0 || i >= len(arr) {
					return nil, fmt.Errorf("%q: index [%s] outside an array of %d", selector, idx, len(arr))
				}
				cur = arr[i]
			}
			rest, _ = strings.CutPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("%q: %q after ]", selector, after)
			}
		}
	}
	return cur, nil
}

// selectorParts splits a selector at its dots outside brackets (a [key=value] may hold a dot: gamma1-wd0.4).
func selectorParts(selector string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range selector {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				parts = append(parts, selector[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, selector[start:])
}

// numbersUnder returns every number a JSON value holds: its numeric leaves and the decimal numbers written inside
// its strings (a claim's evidence line).
func numbersUnder(v any) []float64 {
	var out []float64
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case float64:
			out = append(out, x)
		case string:
			for _, m := range claimNumbers(x) {
				out = append(out, value(m))
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// claimNumbers returns the claim numbers of s, each as numberToken's groups (whole, sign, integer part,
// decimals, percent): the decimal numbers and the percentages. A bare integer (a seed, a width, a count, a date's
// part) is not a claim number.
func claimNumbers(s string) [][]string {
	var out [][]string
	for _, m := range numberToken.FindAllStringSubmatch(s, -1) {
		if m[3] != "" || m[4] != "" {
			out = append(out, m)
		}
	}
	return out
}

// value is a claim number's value (a percentage as a fraction).
func value(m []string) float64 {
	f, _ := strconv.ParseFloat(m[2]+"."+m[3]+"0", 64)
	f *= sign(m[1])
	if m[4] != "" {
		f /= 100
	}
	return f
}

func sign(s string) float64 {
	if s == "-" || s == "−" {
		return -1
	}
	return 1
}

// numberStated reports whether the README's claim number (claimNumbers' groups) is one of values printed at the
// number's precision: a signed number needs a value of that sign, an unsigned one is read as a magnitude (an SD,
// a p-value, an MDE); a percentage is the value times 100.
func numberStated(m []string, values []float64) bool {
	digits, prec := m[2], len(m[3])
	if prec > 0 {
		digits += "." + m[3]
	}
	for _, v := range values {
		if m[4] != "" {
			v *= 100
		}
		switch {
		case m[1] == "+" && !(v > 0), (m[1] == "-" || m[1] == "−") && !(v < 0):
			continue
		}
		if strconv.FormatFloat(math.Abs(v), 'f', prec, 64) == digits {
			return true
		}
	}
	return false
}

// checkClaimLinks checks each claim link of a Markdown text against its record under root: the file exists and
// parses, the selector selects, and every number of the link's text is stated there. It returns one line per
// failure.
func checkClaimLinks(root, text string) (problems []string) {
	records := map[string]any{}
	for _, l := range claimLinks(text) {
		rec, ok := records[l.file]
		if !ok {
			b, err := os.ReadFile(filepath.Join(root, l.file))
			if err == nil {
				err = json.Unmarshal(b, &rec)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("[%s]: %v", l.text, err))
				continue
			}
			records[l.file] = rec
		}
		v, err := selectJSON(rec, l.selector)
		if err != nil {
			problems = append(problems, fmt.Sprintf("[%s](%s): %v", l.text, l.file, err))
			continue
		}
		values := numbersUnder(v)
		nums := claimNumbers(l.text)
		if len(nums) == 0 {
			problems = append(problems, fmt.Sprintf("[%s](%s %q): the link states no number", l.text, l.file, l.selector))
		}
		for _, m := range nums {
			if !numberStated(m, values) {
				problems = append(problems, fmt.Sprintf("[%s](%s %q): %s is not a number of the selected record", l.text, l.file, l.selector, m[0]))
			}
		}
	}
	return problems
}

// unlinkedClaimNumbers returns the decimal numbers of a Markdown text that no claim link states, and the sentences
// that state none (a setting's number is not a claim: settingNumber), so that a verdict block can be held to "every sentence points at a number of its record". A
// sentence ends at ". ", "? " or "! " before an upper-case letter, a bold mark or a link (sentencesOf). Exempt: a
// sentence ending in ":" (a lead-in to the sentences that state), one starting "Not " (what was not read or tested
// has no number to state), and a table's header.
func unlinkedClaimNumbers(text string) (numbers, sentences []string) {
	linked := inlineClaimLink.ReplaceAllString(text, "\x00")
	defs := map[string]bool{}
	for _, m := range refClaimDef.FindAllStringSubmatch(text, -1) {
		defs[strings.ToLower(m[1])] = true
	}
	linked = refClaimDef.ReplaceAllString(linked, "")
	linked = refClaimUse.ReplaceAllStringFunc(linked, func(s string) string {
		if m := refClaimUse.FindStringSubmatch(s); defs[strings.ToLower(m[2])] {
			return "\x00"
		}
		return s
	})
	for _, m := range claimNumbers(settingNumber.ReplaceAllString(linked, "")) {
		numbers = append(numbers, m[0])
	}
	for _, s := range sentencesOf(linked) {
		if !strings.Contains(s, "\x00") && !strings.HasSuffix(s, ":") && !strings.HasPrefix(s, "Not ") {
			sentences = append(sentences, s)
		}
	}
	return numbers, sentences
}

// settingNumber is a number that sets rather than states: a config value in a code span (`weight_decay = 0.1`)
// or a γ naming an arm (γ = 0.5). Its number is not a claim number.
var settingNumber = regexp.MustCompile("(`[^`]*`|γ = )[0-9.]*")

// sentenceEnd is the end of a sentence inside a paragraph: a full stop, question or exclamation mark followed by a
// space and an upper-case letter, a bold mark or a link.
var sentenceEnd = regexp.MustCompile(`[.?!] +[\p{Lu}*\[(]`)

// sentencesOf splits Markdown prose into sentences: paragraphs, list items and table rows first (a table row is
// one sentence), then at sentenceEnd. Headings, a table's header and separator rows and blank lines are left out.
func sentencesOf(text string) []string {
	var units []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			units = append(units, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			flush()
		case strings.HasPrefix(t, "|"):
			flush()
			if strings.Trim(t, "|-: ") != "" {
				units = append(units, t)
			} else if n := len(units); n > 0 && strings.HasPrefix(units[n-1], "|") {
				units = units[:n-1] // the header row above a separator
			}
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			flush()
			cur = append(cur, strings.TrimSpace(t[2:]))
		default:
			cur = append(cur, t)
		}
	}
	flush()
	var out []string
	for _, u := range units {
		if strings.HasPrefix(u, "|") {
			out = append(out, u)
			continue
		}
		for len(u) > 0 {
			loc := sentenceEnd.FindStringIndex(u)
			if loc == nil {
				out = append(out, strings.TrimSpace(u))
				break
			}
			out = append(out, strings.TrimSpace(u[:loc[0]+1]))
			u = u[loc[1]-1:]
		}
	}
	return out
}

func TestSelectJSON(t *testing.T) {
	var rec any
	if err := json.Unmarshal([]byte(`{"claims":[{"id":"H1","tests":[{"estimate":{"mean":0.028,"lo":0.0165}}]},{"id":"H2","n":3}],
		"pairs":[{"B":"gamma1-wd0.4","mean":0.0151}]}`), &rec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sel  string
		want string // fmt.Sprint of the selected value, or "error"
	}{
		{"claims[0].tests[0].estimate.mean", "0.028"},
		{"claims[id=H2].n", "3"},
		{"claims[id=H1].tests[0].estimate.lo", "0.0165"},
		{"claims[2]", "error"},
		{"claims[id=H3]", "error"},
		{"claims.id", "error"},
		{"nothing", "error"},
		{"claims[0", "error"},
		{"pairs[B=gamma1-wd0.4].mean", "0.0151"},
	} {
		v, err := selectJSON(rec, c.sel)
		got := fmt.Sprint(v)
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("selectJSON(%q) = %s (%v), want %s", c.sel, got, err, c.want)
		}
	}
}

func TestNumberStated(t *testing.T) {
	values := []float64{0.02803, 0.01654, -0.00312, 0.44, 0.0005}
	for _, c := range []struct {
		token string
		want  bool
	}{
		{"+0.028", true},
		{"0.028", true},
		{"+0.0280", true},
		{"−0.028", false}, // the sign is part of the claim
		{"+0.029", false}, // rounded otherwise
		{"+0.017", true},
		{"−0.003", true},
		{"-0.0031", true},
		{"+0.003", false},
		{"0.003", true}, // unsigned: a magnitude
		{"+44%", true},
		{"+44.0%", true},
		{"+45%", false},
		{"0.0005", true},
		{"0.001", true},
		{"0.002", false},
	} {
		ms := claimNumbers(c.token)
		if len(ms) != 1 {
			t.Fatalf("claimNumbers(%q) = %q, want one number", c.token, ms)
		}
		m := ms[0]
		if got := numberStated(m, values); got != c.want {
			t.Errorf("numberStated(%q) = %v, want %v", c.token, got, c.want)
		}
	}
}

func TestClaimNumbers(t *testing.T) {
	got := []string{}
	for _, m := range claimNumbers("H1 +0.028 [+0.017, +0.040] on 7 of 7 seeds, 2026-12-07, ε = 1e-12, +44% and −11.5%, width 128.") {
		got = append(got, m[0])
	}
	want := "+0.028 +0.017 +0.040 +44% −11.5%"
	if strings.Join(got, " ") != want {
		t.Errorf("claimNumbers = %q, want %q", got, want)
	}
}

// TestCheckClaimLinks: a record on disk, links that state its numbers (inline and by reference) pass; a wrong
// digit, a wrong sign, a missing file, a selector that selects nothing and a link without a number each give one
// problem naming it.
func TestCheckClaimLinks(t *testing.T) {
	dir := t.TempDir()
	rec := `{"claims":[{"id":"H1","evidence":"H1: +0.0280, 95% CI [+0.0165, +0.0396], effective data +11% [+7%, +15%]",
		"tests":[{"estimate":{"mean":0.02803,"lo":0.01654,"hi":0.03958,"values":[0.009,0.027]}}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "r.json"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []string // substrings of the problems, in order
	}{
		{`H1 is [+0.028 [+0.017, +0.040]](r.json "claims[id=H1].tests[0].estimate").`, nil},
		{`H1 is [+0.0280 [+0.0165, +0.0396]](r.json "claims[0].evidence"), [+11% [+7%, +15%]](r.json "claims[0].evidence").`, nil},
		{"H1 is [+0.028][h1].\n\n[h1]: r.json \"claims[0].tests[0].estimate.mean\"\n", nil},
		{`[+0.029 [+0.017, +0.040]](r.json "claims[0].tests[0].estimate")`, []string{"+0.029 is not"}},
		{`[−0.028](r.json "claims[0].tests[0].estimate")`, []string{"−0.028 is not"}},
		{`[+0.028](nothere.json "claims[0]")`, []string{"nothere.json"}},
		{`[+0.028](r.json "claims[1]")`, []string{"outside an array"}},
		{`[seven seeds](r.json "claims[0]")`, []string{"states no number"}},
		{`an [ordinary link](docs/x.md) and a [reference][ref].` + "\n\n[ref]: docs/x.md\n", nil},
	} {
		probs := checkClaimLinks(dir, c.text)
		if len(probs) != len(c.want) {
			t.Errorf("%s:\n  problems %q, want %d", c.text, probs, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(probs[i], w) {
				t.Errorf("%s:\n  problem %q lacks %q", c.text, probs[i], w)
			}
		}
	}
}

func TestUnlinkedClaimNumbers(t *testing.T) {
	text := "## Verdicts\n\nWhat holds:\n" +
		"- **H1** at γ = 0.5 against γ = 1, `weight_decay = 0.1`, is [+0.028][h1] on 7 seeds. It is Chinese: [+0.035](r.json \"x\"), English −0.000.\n" +
		"- Not tested here: claims 1-3. Nothing else.\n- Not yet read: H2.\n\n" +
		"| claim | gain |\n|---|---|\n| H1 | [+0.028][h1] |\n| H2 | +0.01 |\n\n" +
		"[h1]: r.json \"claims[0]\"\n"
	numbers, sentences := unlinkedClaimNumbers(text)
	if strings.Join(numbers, " ") != "−0.000 +0.01" {
		t.Errorf("unlinked numbers %q, want [−0.000 +0.01]", numbers)
	}
	want := []string{"Nothing else.", "| H2 | +0.01 |"}
	if strings.Join(sentences, "\n") != strings.Join(want, "\n") {
		t.Errorf("sentences without a claim link:\n%s\nwant:\n%s", strings.Join(sentences, "\n"), strings.Join(want, "\n"))
	}
}

// verdictBlock returns the README's verdict block: the text between its two markers.
func verdictBlock(readme string) (string, error) {
	const open, end = "<!-- verdict", "<!-- /verdict -->"
	i := strings.Index(readme, open)
	j := strings.Index(readme, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no verdict block (%q … %q)", open, end)
	}
	return readme[i+strings.Index(readme[i:], "-->")+3 : j], nil
}

// TestREADMEVerdictPointsAtItsRecords: every claim link of the README states numbers of the record it links, and
// in the verdict block every number is a claim link and every sentence holds one (issue 44's "every sentence of
// the README's verdict block points at a number in claims.json").
func TestREADMEVerdictPointsAtItsRecords(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, p := range checkClaimLinks("..", readme) {
		t.Errorf("README.md: %s", p)
	}
	block, err := verdictBlock(readme)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(claimLinks(block)) == 0 {
		t.Error("README.md's verdict block has no claim link")
	}
	numbers, sentences := unlinkedClaimNumbers(block)
	for _, n := range numbers {
		t.Errorf("README.md's verdict block states %s outside a claim link", n)
	}
	for _, s := range sentences {
		t.Errorf("README.md's verdict block: a sentence that links no record: %q", s)
	}
}
