package eval

import (
	"fmt"
	"math"

	"github.com/smallinit/smallinit/model"
)

// A Stepper returns the next-token logits after appending tokens to the sequence it holds. Generation is
// written against it so that a key/value-cache decoder (model.Decoder) and the recomputing PrefixStepper are
// interchangeable.
//
// Append returns the logits [V] at the last appended position; they are valid until the next call and must not
// be modified. Max is the most tokens the stepper can hold; appending past it may fail (model.Decoder) or keep
// only the last Max tokens (PrefixStepper): Generate never relies on either (it resets and re-feeds a suffix).
type Stepper interface {
	Reset()
	Append(tokens []int32) ([]float32, error)
	Max() int
}

// PrefixStepper is the reference Stepper: every Append runs ForwardSeq over the whole prefix (b = 1,
// T = prefix length). It needs nothing but Forward, so it is the specification other steppers are checked
// against; it costs a full forward per token. When the prefix exceeds SeqLen it keeps the last SeqLen tokens.
type PrefixStepper struct {
	m   *model.Model
	seq []int32
}

// NewPrefixStepper returns a PrefixStepper on m (any batch size ≥ 1). It shares m's activations: do not run
// another forward on m between an Append and the use of its logits.
func NewPrefixStepper(m *model.Model) *PrefixStepper {
	return &PrefixStepper{m: m, seq: make([]int32, 0, m.Config.SeqLen)}
}

// Reset empties the sequence.
func (p *PrefixStepper) Reset() { p.seq = p.seq[:0] }

// Max is the model's context length.
func (p *PrefixStepper) Max() int { return p.m.Config.SeqLen }

// Len is the number of tokens held (at most Max).
func (p *PrefixStepper) Len() int { return len(p.seq) }

// Append appends tokens, drops all but the last Max, and returns the logits after the last token.
func (p *PrefixStepper) Append(tokens []int32) ([]float32, error) {
	c := p.m.Config
	if len(tokens) == 0 {
		return nil, fmt.Errorf("prefix stepper: no tokens")
	}
	for _, t := range tokens {
		if uint32(t) >= uint32(c.Vocab) {
			return nil, fmt.Errorf("prefix stepper: token %d outside the vocabulary [0, %d)", t, c.Vocab)
		}
	}
	p.seq = append(p.seq, tokens...)
	if over := len(p.seq) - c.SeqLen; over > 0 {
		p.seq = p.seq[:copy(p.seq, p.seq[over:])]
	}
	T := len(p.seq)
	// The targets are irrelevant; the inputs are valid ids and serve.
	if _, err := p.m.ForwardSeq(p.seq, p.seq, T); err != nil {
		return nil, fmt.Errorf("prefix stepper: %w", err)
	}
	return p.m.Logits()[(T-1)*c.Vocab : T*c.Vocab], nil
}

// CompareSteppers checks got against the reference ref token for token at temperature 0: both are reset and
// fed prompt, then steps greedy steps in which both are fed ref's argmax token (teacher forcing, so one early
// disagreement does not hide later ones). It fails at the first position where the logits differ by more than
// tol relative to the largest reference logit, or where the argmaxes differ although ref's two candidates are
// more than tol apart (a near tie may flip either way). It is exported so that any new Stepper (a KV cache, a
// quantised decoder) can be tested against PrefixStepper with one call.
func CompareSteppers(ref, got Stepper, prompt []int32, steps int, tol float64) error {
	ref.Reset()
	got.Reset()
	if len(prompt)+steps > min(ref.Max(), got.Max()) {
		return fmt.Errorf("compare steppers: prompt %d + %d steps exceed the context length %d", len(prompt), steps, min(ref.Max(), got.Max()))
	}
	feed := prompt
	for pos := 0; pos <= steps; pos++ {
		rl, err := ref.Append(feed)
		if err != nil {
			return fmt.Errorf("compare steppers: reference at step %d: %w", pos, err)
		}
		r := append([]float32(nil), rl...) // ref's buffer may be reused by got (the same model)
		gl, err := got.Append(feed)
		if err != nil {
			return fmt.Errorf("compare steppers: step %d: %w", pos, err)
		}
		if len(gl) != len(r) {
			return fmt.Errorf("compare steppers: step %d: %d logits, reference has %d", pos, len(gl), len(r))
		}
		var scale, diff float64
		for j := range r {
			scale = math.Max(scale, math.Abs(float64(r[j])))
			diff = math.Max(diff, math.Abs(float64(gl[j])-float64(r[j])))
		}
		if diff > tol*math.Max(scale, 1) {
			return fmt.Errorf("compare steppers: step %d: logits differ by %.3g (largest reference logit %.3g, tolerance %.3g)", pos, diff, scale, tol)
		}
		a, b := argmax(r), argmax(gl)
		if a != b && float64(r[a]-r[b]) > tol*math.Max(scale, 1) {
			return fmt.Errorf("compare steppers: step %d: greedy token %d, reference %d (reference margin %.3g)", pos, b, a, r[a]-r[b])
		}
		feed = []int32{a}
	}
	return nil
}
