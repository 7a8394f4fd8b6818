package tokenizer

import "unicode/utf8"

// The GPT-2 byte-level alphabet: tokenizer.json stores each token's bytes as a string in which every byte is
// replaced by one printable rune, so that vocab keys and merges never contain spaces, control characters or
// invalid UTF-8. Bytes that are printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other
// 68 bytes map in order to U+0100, U+0101, ... (so ' ' is 'Ġ' and '\n' is 'Ċ'). This is bytes_to_unicode() of
// OpenAI's GPT-2 encoder.py, which Hugging Face's ByteLevel pre-tokenizer and decoder use too.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelEncode returns the byte-level string of raw bytes b.
func byteLevelEncode(b []byte) string {
	buf := make([]byte, 0, 2*len(b))
	for _, c := range b {
		buf = utf8.AppendRune(buf, byteToRune[c])
	}
	return string(buf)
}

// byteLevelDecode returns the raw bytes of byte-level string s, or ok=false if s holds a rune outside the
// alphabet.
func byteLevelDecode(s string) (b []byte, ok bool) {
	b = make([]byte, 0, len(s))
	for _, r := range s {
		c, found := runeToByte[r]
		if !found {
			return nil, false
		}
		b = append(b, c)
	}
	return b, true
}
