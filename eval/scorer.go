package eval

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/smallinit/smallinit/model"
)

// Request asks for the log-likelihood of Continuation given Context. The continuation carries its own
// delimiter (usually a leading space), as in lm-evaluation-harness.
type Request struct {
	Context      string
	Continuation string
}

// Score is the answer to one Request.
type Score struct {
	LogProb   float64 // Σ log p(token) over the continuation's scored tokens, in nats (≤ 0)
	Tokens    int     // continuation tokens scored
	Greedy    bool    // every scored token is the model's argmax (the LAMBADA accuracy)
	Truncated bool    // the context (or, if longer than the context length, the continuation) was cut
}

// Scorer returns the log-likelihood of each request's continuation given its context. It is the seam between
// task logic and the model, so that metrics can be tested against a scorer with known log-likelihoods.
type Scorer interface {
	Score(reqs []Request) ([]Score, error)
}

// GenRequest asks for a greedy completion of Prompt: at most MaxTokens tokens, cut before the first of Stop
// (the stop string itself is not part of the completion) or at the end-of-text token.
type GenRequest struct {
	Prompt    string
	MaxTokens int
	Stop      []string
}

// Completion is the answer to one GenRequest.
type Completion struct {
	Text string
	// PromptTruncated: the prompt lost its start so that it and MaxTokens new tokens fit the context.
	PromptTruncated bool
}

// Generator completes prompts greedily (generative tasks and probes).
type Generator interface {
	Generate(reqs []GenRequest) ([]Completion, error)
}

// Backend is what RunTask needs from a model. A backend that also implements TextScorer can run lm tasks.
type Backend interface {
	Scorer
	Generator
}

// Tokenizer is the part of tokenizer.Tokenizer that eval uses; tests may substitute a byte-level fake.
type Tokenizer interface {
	Encode(text string) []int32 // special tokens spelled in text are plain text
	Decode(ids []int32) []byte
	EOT() int32 // id of <|endoftext|>, or -1
}

// SpecialEncoder is a Tokenizer that can also encode the special tokens spelled in text as their ids
// (tokenizer.Tokenizer's EncodeWithSpecial, which follows Hugging Face tokenizers). A Tokenizer without it has
// no special tokens to find, and SpecialParse encodes with its Encode.
type SpecialEncoder interface {
	EncodeWithSpecial(text string) []int32
}

// SpecialTokens is how an LM encodes text that spells a special token, such as a literal "<|endoftext|>" in a
// benchmark record.
type SpecialTokens string

const (
	// SpecialParse encodes it as the special token's id: what Hugging Face tokenizers do by default, and so
	// what lm-evaluation-harness scores (its HFLM.tok_encode calls tokenizer.encode, which splits added tokens
	// out of the text before pre-tokenisation). The default for evaluation.
	SpecialParse SpecialTokens = "parse"
	// SpecialLiteral encodes it as the plain bytes it is made of, as smallinit's data pipeline encodes
	// training text (a document can never inject a document boundary).
	SpecialLiteral SpecialTokens = "literal"
)

// ParseSpecialTokens returns the SpecialTokens named s ("parse" or "literal").
func ParseSpecialTokens(s string) (SpecialTokens, error) {
	switch m := SpecialTokens(s); m {
	case SpecialParse, SpecialLiteral:
		return m, nil
	}
	return "", fmt.Errorf("special tokens %q: want %q or %q", s, SpecialParse, SpecialLiteral)
}

// TokenRequest is a Request already tokenised. Context must not be empty.
type TokenRequest struct {
	Context      []int32
	Continuation []int32
}

// LM is the Backend on a model.Model: batched log-likelihoods (Score, ScoreTokens), greedy generation through
// a Stepper (Generate) and rolling-window text loss (ScoreText). It is not safe for concurrent use.
type LM struct {
	m   *model.Model
	tok Tokenizer
	gen Stepper // generation; PrefixStepper unless the caller supplies another

	// Prefix is put before every context (Score) and prompt (Generate); nil puts nothing, as
	// lm-evaluation-harness does. A model trained on documents separated by <|endoftext|> saw every document
	// begin right after that token, so []int32{EOT} scores its prompts where training put them (the probe mix
	// ends every probe line with it; ScoreProbes sets it). ScoreTokens and ScoreText take their tokens as given.
	Prefix []int32

	// Special is how text spelling a special token is encoded (NewLM: SpecialParse, as the harness does).
	Special SpecialTokens

	in, tg []int32
	order  []int
	seqs   [][]int32

	// Counters since creation, for throughput reports.
	ScoredTokens  int64 // continuation tokens scored
	ForwardTokens int64 // token rows run through the model, padding included
}

// NewLM returns the backend for m and tok. gen is the Stepper used for generation; nil means a
// PrefixStepper on m (a model.Decoder is much faster for long completions).
func NewLM(m *model.Model, tok Tokenizer, gen Stepper) *LM {
	if gen == nil {
		gen = NewPrefixStepper(m)
	}
	n := m.Batch() * m.Config.SeqLen
	return &LM{m: m, tok: tok, gen: gen, Special: SpecialParse, in: make([]int32, n), tg: make([]int32, n)}
}

// encode tokenises text as l.Special says.
func (l *LM) encode(text string) []int32 {
	if se, ok := l.tok.(SpecialEncoder); ok && l.Special != SpecialLiteral {
		return se.EncodeWithSpecial(text)
	}
	return l.tok.Encode(text)
}

// Model is the model the backend scores with.
func (l *LM) Model() *model.Model { return l.m }

// splitTrailingSpace moves the context's trailing whitespace to the front of the continuation, as
// lm-evaluation-harness does, so that "Answer: " + "42" is scored as "Answer:" + " 42".
func splitTrailingSpace(ctx, cont string) (string, string) {
	t := strings.TrimRightFunc(ctx, unicode.IsSpace)
	return t, ctx[len(t):] + cont
}

// Score tokenises the requests (context and continuation separately, after moving the context's trailing
// whitespace to the continuation, so that the continuation's tokens are exactly its own bytes), puts Prefix
// before each context and scores them with ScoreTokens. An empty context (and no Prefix) becomes the
// end-of-text token.
func (l *LM) Score(reqs []Request) ([]Score, error) {
	treqs := make([]TokenRequest, len(reqs))
	var prevCtx string
	var prevTok []int32
	for i, r := range reqs {
		ctx, cont := splitTrailingSpace(r.Context, r.Continuation)
		var ct []int32
		if i > 0 && ctx == prevCtx {
			ct = prevTok // multiple choice: the same context for every choice
		} else {
			ct = append(slices.Clip(l.Prefix), l.encode(ctx)...)
			if len(ct) == 0 {
				if l.tok.EOT() < 0 {
					return nil, fmt.Errorf("score: empty context and the tokenizer has no end-of-text token to stand for it")
				}
				ct = []int32{l.tok.EOT()}
			}
			prevCtx, prevTok = ctx, ct
		}
		treqs[i] = TokenRequest{Context: ct, Continuation: l.encode(cont)}
	}
	return l.ScoreTokens(treqs)
}

// ScoreTokens scores tokenised requests. Each request is one row ctx‖cont, left-truncated to SeqLen+1 tokens
// (inputs are the first SeqLen, targets the last); a continuation longer than SeqLen keeps its last SeqLen
// tokens. Requests are sorted by length, longest first, and packed greedily: a forward of row length L (its
// longest request) takes as many rows as fit in Batch·SeqLen tokens, shorter rows padded at the end, where the
// causal mask keeps the padding out of every scored position.
func (l *LM) ScoreTokens(reqs []TokenRequest) ([]Score, error) {
	T, V := l.m.Config.SeqLen, l.m.Config.Vocab
	out := make([]Score, len(reqs))
	l.seqs = l.seqs[:0]
	l.order = l.order[:0]
	nconts := make([]int, len(reqs))
	for i, r := range reqs {
		if len(r.Context) == 0 {
			return nil, fmt.Errorf("score: request %d has an empty context", i)
		}
		nc := len(r.Continuation)
		seq := append(slices.Clip(r.Context), r.Continuation...)
		if nc > T {
			nc = T
			out[i].Truncated = true
		}
		if len(seq) > T+1 {
			seq = seq[len(seq)-(T+1):]
			out[i].Truncated = true
		}
		for _, t := range seq {
			if uint32(t) >= uint32(V) {
				return nil, fmt.Errorf("score: request %d: token %d outside the model's vocabulary [0, %d)", i, t, V)
			}
		}
		nconts[i] = nc
		out[i].Tokens = nc
		out[i].Greedy = true
		l.seqs = append(l.seqs, seq)
		if nc > 0 {
			l.order = append(l.order, i)
		}
	}
	// Longest first; ties by index, so packing is deterministic.
	slices.SortStableFunc(l.order, func(a, b int) int { return len(l.seqs[b]) - len(l.seqs[a]) })
	capTokens := l.m.Batch() * T
	for k := 0; k < len(l.order); {
		L := len(l.seqs[l.order[k]]) - 1
		rows := min(capTokens/L, len(l.order)-k)
		batch := l.order[k : k+rows]
		in, tg := l.in[:rows*L], l.tg[:rows*L]
		clear(in)
		clear(tg)
		for r, i := range batch {
			s := l.seqs[i]
			copy(in[r*L:], s[:len(s)-1])
			copy(tg[r*L:], s[1:])
		}
		if _, err := l.m.ForwardSeq(in, tg, L); err != nil {
			return nil, fmt.Errorf("score: %w", err)
		}
		loss, logits := l.m.TokenLoss(), l.m.Logits()
		for r, i := range batch {
			n := len(l.seqs[i]) - 1
			var lp float64
			for p := n - nconts[i]; p < n; p++ {
				row := r*L + p
				lp -= float64(loss[row])
				if out[i].Greedy && argmax(logits[row*V:(row+1)*V]) != tg[row] {
					out[i].Greedy = false
				}
			}
			out[i].LogProb = lp
			l.ScoredTokens += int64(nconts[i])
		}
		l.ForwardTokens += int64(rows * L)
		k += rows
	}
	return out, nil
}

// argmax returns the index of the largest value, the first one on ties.
func argmax(z []float32) int32 {
	best := 0
	for j, v := range z {
		if v > z[best] {
			best = j
		}
	}
	return int32(best)
}

// Generate completes each prompt greedily with the backend's Stepper, one request after another. A prompt
// longer than the room left for the completion keeps its last tokens (at least half the context length stays
// for the prompt) and is reported as truncated; Prefix comes before each prompt, and an empty prompt (and no
// Prefix) becomes the end-of-text token.
func (l *LM) Generate(reqs []GenRequest) ([]Completion, error) {
	out := make([]Completion, len(reqs))
	for i, r := range reqs {
		prompt := append(slices.Clip(l.Prefix), l.encode(r.Prompt)...)
		if len(prompt) == 0 {
			if l.tok.EOT() < 0 {
				return nil, fmt.Errorf("generate: empty prompt and the tokenizer has no end-of-text token to stand for it")
			}
			prompt = []int32{l.tok.EOT()}
		}
		room := l.gen.Max() - min(r.MaxTokens, l.gen.Max()/2)
		if len(prompt) > room {
			prompt = prompt[len(prompt)-room:]
			out[i].PromptTruncated = true
		}
		g, err := Generate(l.gen, l.tok, prompt, GenerateOptions{MaxTokens: r.MaxTokens, Stop: r.Stop, EOT: l.tok.EOT()}, nil)
		if err != nil {
			return nil, err
		}
		out[i].Text = g.Text
	}
	return out, nil
}
