package override

import (
	"bytes"
	"fmt"
)

// MaxDepth bounds how deeply a TOML document read by smallinit (a plan, a run config, a sweep grid, a --set
// value) may nest tables and arrays. The deepest real document, a plan's [[group.arm]] set with dotted keys,
// nests six levels; a hostile one nested a million levels deep makes the decoder recurse and allocate
// gigabytes, so the text is measured before it is decoded.
const MaxDepth = 64

// CheckDepth measures the nesting of a TOML document from its raw text, without decoding it, and refuses one
// nested more than MaxDepth levels: table headers and dotted keys count one level per part, inline tables and
// arrays one per bracket. Strings and comments are skipped, so brackets and dots in them do not count. The
// error names the line. A document the scanner misreads (it is no parser) still goes to the decoder, which
// reports its syntax errors; the scanner only has to never undercount a valid document.
func CheckDepth(text []byte) error {
	type frame struct {
		table bool // an inline table (keys follow) or an array (values follow)
		depth int  // depth of what is inside it
	}
	var (
		stack  []frame
		line   = 1
		header int // depth of the current [table] or [[array]]
		inKey  = true
		dots   int    // dotted parts of the key being read
		start  = true // at the start of a top-level line, where a table header may begin
		value  int    // depth of the value after '='
	)
	too := func(d int) error {
		return fmt.Errorf("line %d: nested %d levels deep, more than the %d a document may nest", line, d, MaxDepth)
	}
	container := func() int {
		if len(stack) == 0 {
			return header
		}
		return stack[len(stack)-1].depth
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '\n':
			line++
			if len(stack) == 0 {
				inKey, dots, start = true, 0, true
			}
			continue
		case ' ', '\t', '\r':
			continue
		case '#':
			j := bytes.IndexByte(text[i:], '\n')
			if j < 0 {
				return nil
			}
			i += j - 1
			continue
		case '"', '\'':
			n, lines := skipString(text[i:])
			i += n - 1
			line += lines
			start = false
			continue
		}
		if start && len(stack) == 0 && c == '[' {
			// A table header: [a.b] or [[a.b]], one level per part (and one for an array of tables).
			d := 1
			j := i + 1
			if j < len(text) && text[j] == '[' {
				d++
				j++
			}
			for j < len(text) && text[j] != ']' && text[j] != '\n' {
				switch text[j] {
				case '.':
					d++
				case '"', '\'':
					n, _ := skipString(text[j:])
					j += n
					continue
				}
				j++
			}
			if d > MaxDepth {
				return too(d)
			}
			header = d
			for j < len(text) && text[j] == ']' {
				j++
			}
			i = j - 1
			start, inKey = false, false
			continue
		}
		start = false
		if inKey {
			switch c {
			case '.':
				dots++
			case '=':
				value = container() + dots + 1
				if value > MaxDepth {
					return too(value)
				}
				inKey = false
			}
			continue
		}
		switch c {
		case '{', '[':
			stack = append(stack, frame{table: c == '{', depth: value})
			if c == '{' {
				inKey, dots = true, 0
			} else {
				value++
				if value > MaxDepth {
					return too(value)
				}
			}
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && !stack[len(stack)-1].table {
				value = stack[len(stack)-1].depth + 1
			}
		case ',':
			if len(stack) > 0 {
				if top := stack[len(stack)-1]; top.table {
					inKey, dots = true, 0
				} else {
					value = top.depth + 1
				}
			}
		}
	}
	return nil
}

// skipString returns the length of the TOML string that b starts with (basic or literal, single- or
// multi-line; unterminated: the rest of b) and the newlines in it.
func skipString(b []byte) (n, lines int) {
	q := b[0]
	delim := b[:1]
	if len(b) >= 3 && b[1] == q && b[2] == q {
		delim = b[:3]
	}
	i := len(delim)
	for i < len(b) {
		switch {
		case q == '"' && b[i] == '\\':
			if i+1 < len(b) && b[i+1] == '\n' {
				lines++
			}
			i += 2
			continue
		case b[i] == '\n':
			lines++
			if len(delim) == 1 {
				return i, lines - 1 // a single-line string ends at the line; the caller counts the newline
			}
		case bytes.HasPrefix(b[i:], delim):
			i += len(delim)
			for len(delim) == 3 && i < len(b) && b[i] == q { // """a"""" ends with up to two more quotes
				i++
			}
			return i, lines
		}
		i++
	}
	return len(b), lines
}
