package eval

import (
	"regexp"
	"strconv"
	"strings"
)

// Answer extraction for the generative tasks, following lm-evaluation-harness (gsm8k.yaml, hendrycks_math
// utils.py) so that numbers are comparable with published ones.

var (
	// gsmStrict is the harness's "strict-match" filter: the first "#### N".
	gsmStrict = regexp.MustCompile(`#### (\-?[0-9\.\,]+)`)
	// gsmFlexible is the harness's "flexible-extract" filter: the last number-like run.
	gsmFlexible = regexp.MustCompile(`(-?[$0-9.,]{2,})|(-?[0-9]+)`)
	// gsmHeader is the harness's regexes_to_ignore entry that drops a reference's reasoning before "#### ".
	gsmHeader = regexp.MustCompile(`(?s).*#### `)
)

// ExtractStrict returns the number after the first "#### " in s (the harness's strict-match), uncleaned.
func ExtractStrict(s string) (string, bool) {
	m := gsmStrict.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return strings.TrimSpace(m[1]), true
}

// ExtractFlexible returns the last number in s (the harness's flexible-extract: the last match of
// (-?[$0-9.,]{2,})|(-?[0-9]+), whichever group matched), uncleaned.
func ExtractFlexible(s string) (string, bool) {
	ms := gsmFlexible.FindAllStringSubmatch(s, -1)
	if len(ms) == 0 {
		return "", false
	}
	m := ms[len(ms)-1]
	for _, g := range m[1:] {
		if g != "" {
			return strings.TrimSpace(g), true
		}
	}
	return "", false
}

// CleanNumber applies the harness's GSM8K exact-match cleanup, in its order: remove every ",", every "$",
// everything up to and including the last "#### ", and one trailing ".". The harness compares the cleaned
// strings exactly, so "1,234." and "$1234" match "1234" but "1234.0" does not.
func CleanNumber(s string) string {
	s = strings.ReplaceAll(s, ",", "")
	s = strings.ReplaceAll(s, "$", "")
	s = gsmHeader.ReplaceAllString(s, "")
	s = strings.TrimSuffix(s, ".")
	return s
}

// numbersEqual reports whether two cleaned numbers are the same string or parse to the same value (used for
// MGSM and CMATH, whose gold answers are bare numbers such as "70000" or "0.5").
func numbersEqual(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return a != ""
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// LastBoxed returns the content of the last \boxed{...} (or \fbox{...}) in s with nested braces balanced, or,
// for the "\boxed 5" form, the text after the last "\boxed " up to the next "$" (hendrycks_math's
// last_boxed_only_string followed by remove_boxed).
func LastBoxed(s string) (string, bool) {
	if strings.Contains(s, `\boxed `) {
		rest := s[strings.LastIndex(s, `\boxed `)+len(`\boxed `):]
		if i := strings.IndexByte(rest, '$'); i >= 0 {
			rest = rest[:i]
		}
		return rest, true
	}
	idx := strings.LastIndex(s, `\boxed`)
	if idx < 0 {
		if idx = strings.LastIndex(s, `\fbox`); idx < 0 {
			return "", false
		}
	}
	open, depth := -1, 0
	for i := idx; i < len(s); i++ {
		switch s[i] {
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[open+1 : i], true
			}
			if depth < 0 {
				return "", false
			}
		}
	}
	return "", false
}

// MathAnswer extracts the answer from a MATH completion: the last \boxed{...} if there is one; otherwise, as
// hendrycks_math does, the text between the first and the last "$" if there are at least two; otherwise the
// whole completion.
func MathAnswer(out string) string {
	if b, ok := LastBoxed(out); ok {
		return b
	}
	first, last := strings.IndexByte(out, '$'), strings.LastIndexByte(out, '$')
	if first >= 0 && last > first {
		return out[first+1 : last]
	}
	return out
}

// MathEqual reports whether two MATH answers are equal after NormalizeMath (hendrycks_math's is_equiv).
func MathEqual(a, b string) bool { return NormalizeMath(a) == NormalizeMath(b) }

// NormalizeMath is Hendrycks et al.'s strip_string (the MATH reference normalisation, as in
// lm-evaluation-harness's hendrycks_math): remove line breaks, "\!", "\left", "\right", degree marks "^{\circ}",
// dollar signs "\$", a trailing unit "\text{ ...}", "\%" (a bare "%" stays); turn "\\" into "\", tfrac and
// dfrac into frac; write " .5" and "{.5" as " 0.5" and "{0.5" and a leading "." as "0."; drop a short "x = " before the value
// (left side at most two characters); brace "\sqrt3" as "\sqrt{3}"; remove spaces; brace "\frac12" as
// "\frac{1}{2}"; write "0.5" as "\frac{1}{2}" and a plain "a/b" of integers as "\frac{a}{b}". Differences from
// the Python: the whole answer is also trimmed of surrounding spaces first, and malformed inputs that make the
// Python raise are left as they are.
func NormalizeMath(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\n", "")
	s = strings.ReplaceAll(s, `\!`, "")
	s = strings.ReplaceAll(s, `\\`, `\`)
	s = strings.ReplaceAll(s, "tfrac", "frac")
	s = strings.ReplaceAll(s, "dfrac", "frac")
	s = strings.ReplaceAll(s, `\left`, "")
	s = strings.ReplaceAll(s, `\right`, "")
	s = strings.ReplaceAll(s, `^{\circ}`, "")
	s = strings.ReplaceAll(s, `^\circ`, "")
	s = strings.ReplaceAll(s, `\$`, "")
	if parts := strings.Split(s, `\text{ `); len(parts) == 2 { // a unit on the right
		s = parts[0]
	}
	s = strings.ReplaceAll(s, `\%`, "") // only the escaped sign: the Python's "\\%" and "\%" are the same two characters
	s = strings.ReplaceAll(s, " .", " 0.")
	s = strings.ReplaceAll(s, "{.", "{0.")
	if s == "" {
		return s
	}
	if s[0] == '.' {
		s = "0" + s
	}
	if parts := strings.Split(s, "="); len(parts) == 2 && len(parts[0]) <= 2 {
		s = parts[1]
	}
	s = fixSqrt(s)
	s = strings.ReplaceAll(s, " ", "")
	s = fixFracs(s)
	if s == "0.5" {
		s = `\frac{1}{2}`
	}
	return fixSlash(s)
}

// fixSqrt braces the argument of "\sqrt3" as "\sqrt{3}".
func fixSqrt(s string) string {
	parts := strings.Split(s, `\sqrt`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p != "" && p[0] != '{' {
			b.WriteString(`\sqrt{` + p[:1] + "}" + p[1:])
		} else {
			b.WriteString(`\sqrt` + p)
		}
	}
	return b.String()
}

// fixFracs braces the arguments of "\frac12" and "\frac1{2}".
func fixFracs(s string) string {
	parts := strings.Split(s, `\frac`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		b.WriteString(`\frac`)
		switch {
		case p != "" && p[0] == '{':
			b.WriteString(p)
		case len(p) < 2:
			return s
		case p[1] != '{':
			b.WriteString("{" + p[:1] + "}{" + p[1:2] + "}" + p[2:])
		default:
			b.WriteString("{" + p[:1] + "}" + p[1:])
		}
	}
	return b.String()
}

// fixSlash writes "a/b" of two integers as "\frac{a}{b}".
func fixSlash(s string) string {
	parts := strings.Split(s, "/")
	if len(parts) != 2 {
		return s
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || s != strconv.Itoa(a)+"/"+strconv.Itoa(b) {
		return s
	}
	return `\frac{` + parts[0] + "}{" + parts[1] + "}"
}
