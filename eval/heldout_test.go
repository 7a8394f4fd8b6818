package eval

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/train"
)

// TestScoreTokensScoresEveryTarget checks that every target is scored once, that on whole windows the mean
// equals train.EvalLoss (an independent implementation), and that each target past the last full window is
// scored with the context of the last window: the same loss as scoring that window's prefix ending there.
func TestScoreTokensScoresEveryTarget(t *testing.T) {
	const V, T, B = 64, 8, 3
	m := testModel(t, V, T, B, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{2, T - 1, T, T + 1, T + 2, 4*T + 1, 7*T + 5, 10*T + 1} {
		toks := randomTokens(rng, n, V)
		sum, got, err := ScoreTokens(context.Background(), m, toks, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got != int64(n-1) {
			t.Errorf("n=%d: scored %d targets, want %d", n, got, n-1)
		}
		nw := data.NumWindows(n, T)
		var full float64
		if nw > 0 {
			l, w, err := train.EvalLoss(m, toks, 0)
			if err != nil || w != nw {
				t.Fatal(err, w)
			}
			full = l * float64(nw*T)
		}
		if (n-1)%T == 0 && math.Abs(sum-full) > 1e-4*math.Abs(full) {
			t.Errorf("n=%d: sum %v, train.EvalLoss gives %v", n, sum, full)
		}
		// Brute force for the tail: target p with the last window's context, toks[start:p].
		var tail float64
		L := min(T, n-1)
		start := n - 1 - L
		for p := nw*T + 1; p < n; p++ {
			in, tg := append([]int32(nil), toks[start:p]...), append([]int32(nil), toks[start+1:p+1]...)
			if _, err := m.ForwardSeq(in, tg, len(in)); err != nil {
				t.Fatal(err)
			}
			tail += float64(m.TokenLoss()[len(in)-1])
		}
		if want := full + tail; math.Abs(sum-want) > 1e-4*math.Abs(want) {
			t.Errorf("n=%d: sum %v, windows + brute-force tail %v", n, sum, want)
		}
	}
	if _, _, err := ScoreTokens(context.Background(), m, []int32{1}, nil); err == nil {
		t.Error("a single token scored")
	}
	// Progress counts windows: 0 first, then after each batch of B, the partial window last, ending at the total.
	for _, c := range []struct {
		n    int
		want []int64
	}{{7*T + 1, []int64{0, 3, 6, 7}}, {7*T + 5, []int64{0, 3, 6, 7, 8}}, {T - 1, []int64{0, 1}}} {
		var got []int64
		if _, _, err := ScoreTokens(context.Background(), m, randomTokens(rng, c.n, V), func(done, total int64) {
			if total != c.want[len(c.want)-1] {
				t.Errorf("n=%d: total %d, want %d", c.n, total, c.want[len(c.want)-1])
			}
			got = append(got, done)
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("n=%d: progress %v, want %v", c.n, got, c.want)
		}
	}
}

// heldOutDir writes a prepared directory with val.tok = en + zh and the per-language files and stats of the
// embedded corpus, plus a selection slice, and returns it and the three token streams.
func heldOutDir(t *testing.T, V int) (dir string, en, zh, sel []int32) {
	dir = t.TempDir()
	rng := rand.New(rand.NewPCG(2, 2))
	en, zh, sel = randomTokens(rng, 301, V), randomTokens(rng, 157, V), randomTokens(rng, 90, V)
	write := func(name string, toks []int32) {
		if err := data.WriteTokens(filepath.Join(dir, name), toks); err != nil {
			t.Fatal(err)
		}
	}
	write(data.ValFile, append(append([]int32(nil), en...), zh...))
	write(data.ValLangFile("en"), en)
	write(data.ValLangFile("zh"), zh)
	write(data.SelectFile, sel)
	st := &data.Stats{Source: "embedded", VocabSize: V,
		Val:       data.SplitStats{Documents: 2, Bytes: 2000, Tokens: int64(len(en) + len(zh))},
		ValByLang: map[string]data.SplitStats{"en": {Documents: 1, Bytes: 1200, Tokens: int64(len(en))}, "zh": {Documents: 1, Bytes: 800, Tokens: int64(len(zh))}}}
	if err := data.WriteStats(dir, st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, data.SelectStatsFile), []byte(`{"share":0.05}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, en, zh, sel
}

// TestScoreHeldOutWholeSplitByLanguage checks the verdict score: each language scores every token of its file,
// the overall loss is their token-weighted mean, bits per byte follow data.SplitStats, and Nats gives the
// numbers reproduce.Loss holds. Without per-language files val.tok is scored itself.
func TestScoreHeldOutWholeSplitByLanguage(t *testing.T) {
	const V = 64
	m := testModel(t, V, 16, 4, 3)
	dir, en, zh, _ := heldOutDir(t, V)
	h, err := ScoreHeldOut(context.Background(), m, dir)
	if err != nil {
		t.Fatal(err)
	}
	se, ne, _ := ScoreTokens(context.Background(), m, en, nil)
	sz, nz, _ := ScoreTokens(context.Background(), m, zh, nil)
	if h.ByLanguage["en"].Tokens != ne || h.ByLanguage["zh"].Tokens != nz || h.Overall.Tokens != ne+nz {
		t.Fatalf("tokens: %+v", h)
	}
	if math.Abs(h.ByLanguage["en"].Loss-se/float64(ne)) > 1e-12 || math.Abs(h.Overall.Loss-(se+sz)/float64(ne+nz)) > 1e-12 {
		t.Errorf("losses %+v, want en %v overall %v", h, se/float64(ne), (se+sz)/float64(ne+nz))
	}
	st, _ := data.ReadStats(dir)
	if want := st.ValByLang["zh"].BitsPerByte(h.ByLanguage["zh"].Loss); h.ByLanguage["zh"].BitsPerByte != want {
		t.Errorf("zh bpb %v, want %v", h.ByLanguage["zh"].BitsPerByte, want)
	}
	if want := st.Val.BitsPerByte(h.Overall.Loss); h.Overall.BitsPerByte != want {
		t.Errorf("overall bpb %v, want %v", h.Overall.BitsPerByte, want)
	}
	o, by := h.Nats()
	if o != h.Overall.Loss || by["en"] != h.ByLanguage["en"].Loss || len(by) != 2 {
		t.Errorf("Nats() = %v %v", o, by)
	}
	if !strings.Contains(h.Source, "456 tokens (en 300, zh 156)") {
		t.Errorf("source %q", h.Source)
	}
	// A directory without per-language files: val.tok itself.
	st.ValByLang = nil
	if err := data.WriteStats(dir, st); err != nil {
		t.Fatal(err)
	}
	h, err = ScoreHeldOut(context.Background(), m, dir)
	if err != nil {
		t.Fatal(err)
	}
	sv, nv, _ := ScoreTokens(context.Background(), m, append(append([]int32(nil), en...), zh...), nil)
	if h.Overall.Tokens != nv || math.Abs(h.Overall.Loss-sv/float64(nv)) > 1e-12 || h.ByLanguage != nil {
		t.Errorf("val.tok alone: %+v, want %d tokens loss %v", h, nv, sv/float64(nv))
	}
	// A model of another vocabulary is refused.
	if _, err := ScoreHeldOut(context.Background(), testModel(t, 2*V, 16, 4, 3), dir); err == nil {
		t.Error("vocabulary mismatch accepted")
	}
}

// TestScoreValidationWindowCap: with a window cap each language file is scored on every target of its first
// windows·SeqLen targets, by the same definition as the whole split; a cap past a file's end scores it whole.
func TestScoreValidationWindowCap(t *testing.T) {
	const V = 64
	m := testModel(t, V, 16, 4, 3)
	dir, en, zh, _ := heldOutDir(t, V)
	T := m.Config.SeqLen
	h, err := ScoreValidation(context.Background(), m, dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	se, ne, _ := ScoreTokens(context.Background(), m, en[:2*T+1], nil)
	sz, nz, _ := ScoreTokens(context.Background(), m, zh[:2*T+1], nil)
	if ne != int64(2*T) || h.ByLanguage["en"].Tokens != ne || h.ByLanguage["zh"].Tokens != nz {
		t.Fatalf("tokens %+v, want %d per language", h, 2*T)
	}
	if math.Abs(h.ByLanguage["en"].Loss-se/float64(ne)) > 1e-12 || math.Abs(h.Overall.Loss-(se+sz)/float64(ne+nz)) > 1e-12 {
		t.Errorf("capped losses %+v, want en %v overall %v", h, se/float64(ne), (se+sz)/float64(ne+nz))
	}
	if !strings.Contains(h.Source, "first 2 windows") {
		t.Errorf("source %q does not say the cap", h.Source)
	}
	whole, err := ScoreHeldOut(context.Background(), m, dir)
	if err != nil {
		t.Fatal(err)
	}
	big, err := ScoreValidation(context.Background(), m, dir, 1<<20)
	if err != nil || big.Overall != whole.Overall {
		t.Errorf("a cap past the end: %+v, %v; want the whole split's %+v", big.Overall, err, whole.Overall)
	}
}

// TestScoreSelectionNeverReadsValidation checks that the selection score reads select.tok alone: it works with
// every validation file removed, and it refuses a directory whose slice was not prepared.
func TestScoreSelectionNeverReadsValidation(t *testing.T) {
	const V = 64
	m := testModel(t, V, 16, 4, 5)
	dir, _, _, sel := heldOutDir(t, V)
	for _, f := range []string{data.ValFile, data.ValLangFile("en"), data.ValLangFile("zh"), data.StatsFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ScoreSelection(context.Background(), m, dir)
	if err != nil {
		t.Fatal(err)
	}
	sum, n, _ := ScoreTokens(context.Background(), m, sel, nil)
	if s.Tokens != n || math.Abs(s.Loss-sum/float64(n)) > 1e-12 {
		t.Errorf("selection score %+v, want %d tokens loss %v", s, n, sum/float64(n))
	}
	if err := os.Remove(filepath.Join(dir, data.SelectStatsFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ScoreSelection(context.Background(), m, dir); err == nil || !strings.Contains(err.Error(), "PrepareSelection") {
		t.Errorf("unprepared slice: %v", err)
	}
}

// TestScoreTokensStops: a context cancelled while a file is scored (SIGTERM inside its windows, issue 48, 4)
// stops the scoring before the next forward pass, saying how far it got, with an error that is
// context.Canceled and no partial sum; ScoreValidation passes it on, naming the file.
func TestScoreTokensStops(t *testing.T) {
	const V, T, B = 64, 8, 3
	m := testModel(t, V, T, B, 1)
	rng := rand.New(rand.NewPCG(2, 2))
	toks := randomTokens(rng, 10*T+3, V) // 10 windows and a partial one: 11 in all, 4 batches and the tail
	for _, tc := range []struct {
		name     string
		cancelAt int64 // cancel when progress reports this many windows done (-1: cancelled before the call)
		want     string
	}{
		{"before the first window", -1, "stopped after 0 of 11 windows"},
		{"after the first batch", 3, "stopped after 3 of 11 windows"},
		{"after the last batch, before the partial window", 10, "stopped after 10 of 11 windows"},
		{"after the second batch", 6, "stopped after 6 of 11 windows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelAt < 0 {
				cancel()
			}
			sum, n, err := ScoreTokens(ctx, m, toks, func(done, total int64) {
				if done == tc.cancelAt {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), tc.want) || sum != 0 || n != 0 {
				t.Errorf("ScoreTokens: %v, %d targets, sum %g; want %q, nothing scored", err, n, sum, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir, _, _, _ := heldOutDir(t, V)
	if _, err := ScoreValidation(ctx, testModel(t, V, 16, 4, 3), dir, 0); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "score "+filepath.Join(dir, "val.")) {
		t.Errorf("ScoreValidation: %v, want context.Canceled naming the file", err)
	}
}
