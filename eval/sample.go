package eval

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"unicode/utf8"
)

// SampleOptions choose the next token from logits. Temperature 0 is greedy decoding (argmax, the lowest id on
// ties); otherwise the logits are divided by Temperature, restricted to the TopK most likely tokens (0: all)
// and then to the smallest set whose probability reaches TopP (0 or 1: all), in that order as in Hugging Face
// transformers, and sampled with a PCG generator seeded by Seed, so a seed reproduces a completion.
type SampleOptions struct {
	Temperature float64
	TopK        int
	TopP        float64
	Seed        uint64
}

// Validate reports an option out of range.
func (o SampleOptions) Validate() error {
	switch {
	case o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0):
		return fmt.Errorf("temperature %g: must be finite and ≥ 0", o.Temperature)
	case o.TopK < 0:
		return fmt.Errorf("top-k %d: must be ≥ 0 (0: no limit)", o.TopK)
	case !(o.TopP >= 0 && o.TopP <= 1):
		return fmt.Errorf("top-p %g: must be in [0, 1] (0 or 1: no limit)", o.TopP)
	}
	return nil
}

// Sampler draws tokens from logits by its SampleOptions. It keeps scratch buffers; not safe for concurrent use.
type Sampler struct {
	o   SampleOptions
	rng *rand.Rand
	idx []int32
	p   []float64
}

// NewSampler returns a sampler for o.
func NewSampler(o SampleOptions) (*Sampler, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x5eed))}, nil
}

// Next returns the next token for logits (which it does not modify).
func (s *Sampler) Next(logits []float32) int32 {
	if s.o.Temperature == 0 || s.o.TopK == 1 {
		return argmax(logits)
	}
	V := len(logits)
	s.idx = s.idx[:0]
	for j := 0; j < V; j++ {
		s.idx = append(s.idx, int32(j))
	}
	restrict := (s.o.TopK > 0 && s.o.TopK < V) || (s.o.TopP > 0 && s.o.TopP < 1)
	if restrict {
		slices.SortFunc(s.idx, func(a, b int32) int {
			if logits[a] != logits[b] {
				if logits[a] > logits[b] {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
		if s.o.TopK > 0 && s.o.TopK < V {
			s.idx = s.idx[:s.o.TopK]
		}
	}
	mx := float64(logits[argmax(logits)])
	s.p = s.p[:0]
	var sum float64
	for _, j := range s.idx {
		e := math.Exp((float64(logits[j]) - mx) / s.o.Temperature)
		s.p = append(s.p, e)
		sum += e
	}
	if s.o.TopP > 0 && s.o.TopP < 1 {
		var c float64
		for k, e := range s.p {
			c += e
			if c >= s.o.TopP*sum {
				s.p, s.idx, sum = s.p[:k+1], s.idx[:k+1], c
				break
			}
		}
	}
	u := s.rng.Float64() * sum
	for k, e := range s.p {
		if u < e {
			return s.idx[k]
		}
		u -= e
	}
	return s.idx[len(s.idx)-1]
}

// GenerateOptions control Generate.
type GenerateOptions struct {
	MaxTokens int           // most tokens to generate
	Stop      []string      // the completion ends before the first occurrence of any of these
	EOT       int32         // end-of-text token that ends the completion (not part of it); < 0: none
	Sample    SampleOptions // zero value: greedy
}

// Generation is the result of Generate.
type Generation struct {
	Text   string  // the completion, stop string excluded
	Tokens []int32 // the tokens generated (including those of a stop string; excluding the end-of-text token)
	Reason string  // "stop" (a stop string), "eot" (end-of-text token) or "length" (MaxTokens)
}

// Generate feeds prompt to s (after Reset) and generates up to o.MaxTokens tokens, writing the text to w (nil:
// nowhere) as it becomes final: bytes that might still turn out to begin a stop string, or that end in the middle
// of a UTF-8 character, are held back until the next token decides them. When the sequence would exceed s.Max(),
// s is reset and fed the last three quarters of it, so a Stepper that cannot slide its window still generates on.
// A prompt longer than s.Max() keeps its last s.Max() tokens.
func Generate(s Stepper, tok Tokenizer, prompt []int32, o GenerateOptions, w io.Writer) (Generation, error) {
	var g Generation
	if len(prompt) == 0 {
		return g, fmt.Errorf("generate: empty prompt")
	}
	sm, err := NewSampler(o.Sample)
	if err != nil {
		return g, fmt.Errorf("generate: %w", err)
	}
	ctxLen := s.Max()
	if ctxLen < 2 {
		return g, fmt.Errorf("generate: context length %d is too short", ctxLen)
	}
	hist := slices.Clone(prompt)
	if len(hist) > ctxLen {
		hist = hist[len(hist)-ctxLen:]
	}
	s.Reset()
	logits, err := s.Append(hist)
	if err != nil {
		return g, fmt.Errorf("generate: prompt: %w", err)
	}
	held := len(hist)
	var text []byte // decoded completion
	emitted := 0    // bytes of text written to w
	cut := -1       // where a stop string begins
	g.Reason = "length"
	for len(g.Tokens) < o.MaxTokens {
		t := sm.Next(logits)
		if o.EOT >= 0 && t == o.EOT {
			g.Reason = "eot"
			break
		}
		g.Tokens = append(g.Tokens, t)
		hist = append(hist, t)
		from := max(len(text)-maxLen(o.Stop)+1, 0)
		text = tok.Decode(g.Tokens)
		if cut = findStop(text, o.Stop, from); cut >= 0 {
			g.Reason = "stop"
			break
		}
		if w != nil {
			if safe := safeLen(text, o.Stop); safe > emitted {
				if _, err := w.Write(text[emitted:safe]); err != nil {
					return g, fmt.Errorf("generate: %w", err)
				}
				emitted = safe
			}
		}
		if len(g.Tokens) == o.MaxTokens {
			break
		}
		if held+1 > ctxLen {
			keep := ctxLen * 3 / 4
			s.Reset()
			logits, err = s.Append(hist[len(hist)-keep:])
			held = keep
		} else {
			logits, err = s.Append([]int32{t})
			held++
		}
		if err != nil {
			return g, fmt.Errorf("generate: step %d: %w", len(g.Tokens), err)
		}
	}
	if cut < 0 {
		cut = len(text)
	}
	if w != nil && cut > emitted {
		if _, err := w.Write(text[emitted:cut]); err != nil {
			return g, fmt.Errorf("generate: %w", err)
		}
	}
	g.Text = string(text[:cut])
	return g, nil
}

// maxLen is the length of the longest string.
func maxLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n = max(n, len(s))
	}
	return n
}

// findStop returns where the earliest stop string begins in text (searching from byte from), or -1.
func findStop(text []byte, stop []string, from int) int {
	best := -1
	for _, s := range stop {
		if s == "" {
			continue
		}
		if i := bytes.Index(text[from:], []byte(s)); i >= 0 && (best < 0 || from+i < best) {
			best = from + i
		}
	}
	return best
}

// safeLen is how much of text can be written now: all but a tail that is a proper prefix of a stop string or an
// incomplete UTF-8 character.
func safeLen(text []byte, stop []string) int {
	n := len(text)
	for _, s := range stop {
		for k := min(len(s)-1, len(text)); k > 0; k-- {
			if bytes.HasSuffix(text, []byte(s[:k])) {
				n = min(n, len(text)-k)
				break
			}
		}
	}
	// Hold back a trailing incomplete UTF-8 sequence (at most 3 bytes).
	for k := 1; k <= 3 && k <= n; k++ {
		b := text[n-k]
		if b < 0x80 {
			break
		}
		if utf8.RuneStart(b) {
			if !utf8.FullRune(text[n-k : n]) {
				n -= k
			}
			break
		}
	}
	return n
}
