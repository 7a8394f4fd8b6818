package inputfile

import (
	"fmt"
	"unicode/utf8"
)

// MaxQuote is how many bytes of outside data an error message quotes.
const MaxQuote = 64

// Quote returns s quoted for an error message, cut to MaxQuote bytes (at a rune boundary) with the length of
// what was left out, so that a 50 MB token in a hostile file makes a one-line error, not a 50 MB one.
func Quote(s string) string {
	if len(s) <= MaxQuote {
		return fmt.Sprintf("%q", s)
	}
	cut := MaxQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes in all)", s[:cut], len(s))
}
