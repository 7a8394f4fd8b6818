package eval

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"unicode"
	"unicode/utf8"
)

// TextScorer scores plain text (lm tasks): at most maxWindows windows (0: all). progress is called with the
// bytes read so far.
type TextScorer interface {
	ScoreText(ctx context.Context, r io.Reader, maxWindows int, progress func(bytes int64)) (TextScore, error)
}

// TextScore is the result of ScoreText.
type TextScore struct {
	Tokens     int64   // tokens scored
	Bytes      int64   // bytes of the tokens scored (of the whole text unless limited by maxWindows)
	Windows    int     // forward windows
	LossMean   float64 // mean loss per token, nats
	LossStdErr float64 // standard error of LossMean, treating tokens as independent (an underestimate)
}

// BitsPerByte is the total loss in bits divided by the bytes of text, which compares models with different
// tokenizers.
func (s TextScore) BitsPerByte() float64 {
	return s.LossMean * float64(s.Tokens) / float64(s.Bytes) / math.Ln2
}

func (s TextScore) metrics() Metrics {
	n := int(s.Tokens)
	k := float64(s.Tokens) / float64(s.Bytes) / math.Ln2
	return Metrics{
		// Means with a standard error and no interval (Lo, Hi NaN): a zero Lo and Hi would print as the
		// 95% interval [0, 0] beside the loss.
		{Name: "loss", Value: s.LossMean, StdErr: s.LossStdErr, Lo: math.NaN(), Hi: math.NaN(), N: n},
		{Name: "bits_per_byte", Value: s.BitsPerByte(), StdErr: s.LossStdErr * k, Lo: math.NaN(), Hi: math.NaN(), N: n},
		plain("perplexity", math.Exp(s.LossMean), n),
		plain("tokens", float64(s.Tokens), n),
		plain("bytes", float64(s.Bytes), n),
	}
}

const (
	textChunk    = 1 << 16 // bytes encoded at a time
	textMaxChunk = 1 << 22 // past this, a chunk is cut even where the cut may change the tokenization
)

// cutPoint returns the end of the longest prefix of b that can be tokenised on its own exactly as it would be
// inside the whole text: after a line break that follows a non-space character and precedes a printable ASCII
// one. Pre-tokenizers of the GPT-2 family (smallinit's included) end every pre-token at such a point (the
// whitespace run, or the punctuation run with its trailing line breaks, stops there, and no word takes a
// leading line break), and BPE never merges across pre-tokens. A longer whitespace run before the cut would
// not do: GPT-2's `\s+(?!\S)` takes "\n\n" whole at the end of a chunk but as "\n", "\n" before a word. It
// returns 0 if there is no such point.
func cutPoint(b []byte) int {
	for i := len(b) - 1; i >= 1; i-- {
		if b[i-1] == '\n' && b[i] > ' ' && b[i] < 0x7f {
			if r, _ := utf8.DecodeLastRune(b[:i-1]); i == 1 || !unicode.IsSpace(r) {
				return i
			}
		}
	}
	return 0
}

// ScoreText reads text from r and returns its loss per token and bits per byte. The text is one document: its
// tokens are preceded by the end-of-text token (when the tokenizer has one; otherwise the first token is only
// context) and cut into consecutive windows of SeqLen predicted tokens, each window conditioned on the token
// before it and nothing earlier; the last, shorter window runs on the SeqLen tokens before its end and scores
// only its new tokens. That is lm-evaluation-harness's loglikelihood_rolling (get_rolling_token_windows with
// max_seq_len = SeqLen and context_len = 1, then make_disjoint_window). Full windows are batched Batch at a
// time; with maxWindows > 0 scoring stops after that many. Bits per byte count the bytes of the tokens scored.
// The text is encoded in chunks cut at line breaks (see cutPoint), so memory stays bounded for any file size.
func (l *LM) ScoreText(ctx context.Context, r io.Reader, maxWindows int, progress func(int64)) (TextScore, error) {
	T, B := l.m.Config.SeqLen, l.m.Batch()
	var res TextScore
	var loss mean
	var stream []int32
	if eot := l.tok.EOT(); eot >= 0 {
		stream = append(stream, eot)
	}
	rows := 0
	// forward runs b rows of n positions and scores all but the first skip positions (skip > 0 only with b = 1).
	forward := func(n, b, skip int) error {
		if ctx.Err() != nil { // SIGTERM inside a text: stop before the next forward pass
			return fmt.Errorf("stopped after %d windows: %w", res.Windows, context.Cause(ctx))
		}
		if _, err := l.m.ForwardSeq(l.in[:b*n], l.tg[:b*n], n); err != nil {
			return err
		}
		for _, v := range l.m.TokenLoss()[skip:] {
			loss.add(float64(v))
		}
		res.Bytes += int64(len(l.tok.Decode(l.tg[skip : b*n])))
		res.Windows += b
		l.ForwardTokens += int64(b * n)
		return nil
	}
	// stream[h] is the context token of the next window; the T tokens before it are kept for the last window.
	h := 0
	// drain moves full windows (T+1 tokens, overlapping the next by one) into the batch; with final it also
	// scores the rest: its n new tokens, on the T tokens before the end.
	full := func() bool { return maxWindows > 0 && res.Windows+rows >= maxWindows }
	drain := func(final bool) error {
		for len(stream)-h >= T+1 && !full() {
			w := stream[h : h+T+1]
			copy(l.in[rows*T:], w[:T])
			copy(l.tg[rows*T:], w[1:])
			rows++
			h += T
			if rows == B {
				if err := forward(T, rows, 0); err != nil {
					return err
				}
				rows = 0
			}
		}
		drop := max(0, h-T)
		stream, h = stream[:copy(stream, stream[drop:])], h-drop
		if !final && !full() {
			return nil
		}
		if rows > 0 {
			if err := forward(T, rows, 0); err != nil {
				return err
			}
			rows = 0
		}
		if n := len(stream) - 1 - h; n >= 1 && !full() {
			start := max(0, len(stream)-1-T)
			L := len(stream) - 1 - start
			copy(l.in, stream[start:start+L])
			copy(l.tg, stream[start+1:])
			if err := forward(L, 1, L-n); err != nil {
				return err
			}
		}
		return nil
	}
	V := int32(l.m.Config.Vocab)
	encode := func(text []byte) error {
		n := len(stream)
		stream = append(stream, l.encode(string(text))...)
		for _, t := range stream[n:] {
			if t < 0 || t >= V {
				return fmt.Errorf("token %d outside the model's vocabulary [0, %d)", t, V)
			}
		}
		return nil
	}
	br := bufio.NewReaderSize(r, textChunk)
	buf := make([]byte, 0, 2*textChunk)
	var read int64
	for eof := false; !eof && !full(); {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		// Fill up to textChunk more bytes.
		start := len(buf)
		buf = append(buf, make([]byte, textChunk)...)
		n, err := io.ReadFull(br, buf[start:])
		buf = buf[:start+n]
		read += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			eof = true
		} else if err != nil {
			return res, err
		}
		cut := len(buf)
		if !eof {
			if cut = cutPoint(buf); cut == 0 {
				if len(buf) < textMaxChunk {
					continue
				}
				cut = len(buf) - 1 // cut before the last character's first byte, never inside a character
				for cut > 0 && buf[cut]&0xc0 == 0x80 {
					cut--
				}
			}
		}
		if err := encode(buf[:cut]); err != nil {
			return res, err
		}
		buf = buf[:copy(buf, buf[cut:])]
		if err := drain(eof); err != nil {
			return res, err
		}
		if progress != nil {
			progress(read)
		}
	}
	if loss.n == 0 {
		return res, errNoText
	}
	res.Tokens = int64(loss.n)
	res.LossMean, res.LossStdErr = loss.mu, loss.stderr()
	return res, nil
}
