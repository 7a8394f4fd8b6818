package reproduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/kernel"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/tokenizer"
	"github.com/smallinit/smallinit/train"
)

// The probe arm tests the second half of claim 1, that γ = 1's gains are largest on reasoning: γ = 0.5 and 1
// (both fixes, width 128) train on the corpus with eval's reasoning and memorisation probes mixed in, and are
// scored on held-out reasoning prompts (answerable only by doing the task) and on memorisation prompts seen in
// training (answerable only by recalling them).
const (
	// ProbeDataDir (in the output directory) holds the mixed training tokens, the tokenizer and the probe test
	// sets.
	ProbeDataDir = "probes-data"
	// probeShare is the share of the mixed training tokens that are probes.
	probeShare = 0.25
	// probeEvalFile (in a probe run's directory) caches its probe scores.
	probeEvalFile = "probe_eval.json"
)

// probeConfig is the probe set: every kind, 2-digit sums (learnt soonest), enough training probes per kind to
// fill probeShare of a mixed file built from the embedded corpus.
func probeConfig(test int) eval.ProbeConfig {
	return eval.ProbeConfig{Seed: 1, Train: 4000, Test: test, Table: 256, AddDigits: 2}
}

// prepareProbeData writes OUT/probes-data: train.tok, the corpus training tokens of dataDir with probe lines
// (each a document ended by <|endoftext|>, as `data prepare --doc-sep line` writes them) spread evenly between
// the corpus documents until they make up probeShare of the tokens; the corpus tokenizer; and test.jsonl and
// recall.jsonl. A finished directory is reused.
func prepareProbeData(out, dataDir string, vocab, test int) (string, error) {
	dir := filepath.Join(out, ProbeDataDir)
	trainPath := filepath.Join(dir, data.TrainFile)
	if _, err := os.Stat(trainPath); err == nil {
		return dir, nil // written last: the directory is complete
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("probe data: %w", err)
	}
	tokPath := filepath.Join(dataDir, data.TokenizerFile)
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return "", fmt.Errorf("probe data: %w", err)
	}
	eot := tok.EOT()
	if eot < 0 {
		return "", fmt.Errorf("probe data: %s has no <|endoftext|> token to end probe lines with", tokPath)
	}
	ps, err := eval.MakeProbes(probeConfig(test))
	if err != nil {
		return "", err
	}
	for name, set := range map[string][]eval.Probe{"test.jsonl": ps.Test, "recall.jsonl": ps.Recall} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		for _, p := range set {
			if err := enc.Encode(p); err != nil {
				return "", err
			}
		}
		if err := model.WriteFileAtomic(filepath.Join(dir, name), []byte(b.String())); err != nil {
			return "", err
		}
	}
	tb, err := os.ReadFile(tokPath)
	if err != nil {
		return "", fmt.Errorf("probe data: %w", err)
	}
	if err := model.WriteFileAtomic(filepath.Join(dir, data.TokenizerFile), tb); err != nil {
		return "", err
	}
	corpus, err := data.ReadTokens(filepath.Join(dataDir, data.TrainFile), vocab)
	if err != nil {
		return "", fmt.Errorf("probe data: %w", err)
	}
	w, err := data.NewTokWriter(trainPath, vocab)
	if err != nil {
		return "", err
	}
	defer w.Abort()
	var written, probeToks float64
	next := 0
	writeProbes := func() error {
		for probeToks < probeShare*written {
			if next == len(ps.Train) {
				next = 0 // a corpus larger than the probes cycles through them again
			}
			ids := append(tok.Encode(ps.Train[next].Text()), eot)
			next++
			if err := w.Write(ids); err != nil {
				return err
			}
			written += float64(len(ids))
			probeToks += float64(len(ids))
		}
		return nil
	}
	start := 0
	for i, id := range corpus {
		if id != eot && i != len(corpus)-1 {
			continue
		}
		if err := w.Write(corpus[start : i+1]); err != nil {
			return "", err
		}
		written += float64(i + 1 - start)
		start = i + 1
		if err := writeProbes(); err != nil {
			return "", err
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return dir, nil
}

// ProbeScores are one run's probe results: exact-match accuracy and the gold answer's loss per token, on the
// held-out reasoning prompts and on the recalled memorisation prompts, with the chance accuracies.
type ProbeScores struct {
	ReasoningAcc      float64 `json:"acc_reasoning"`
	ReasoningChance   float64 `json:"chance_reasoning"`
	ReasoningLoss     float64 `json:"gold_loss_per_token_reasoning"`
	MemorisationAcc   float64 `json:"acc_memorisation"`
	MemorisationLoss  float64 `json:"gold_loss_per_token_memorisation"`
	MemorisationCount int     `json:"memorisation_records"`
	ReasoningCount    int     `json:"reasoning_records"`
}

// scoreProbes scores the final model of a probe run (cached in the run directory).
func scoreProbes(runDir, probeDir string) (*ProbeScores, error) {
	cache := filepath.Join(runDir, probeEvalFile)
	if b, err := os.ReadFile(cache); err == nil {
		var s ProbeScores
		if err := json.Unmarshal(b, &s); err == nil {
			return &s, nil
		}
	}
	pool := kernel.NewPool(0)
	defer pool.Close()
	m, _, err := model.Load(filepath.Join(runDir, train.FinalDir), 8, pool)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(filepath.Join(probeDir, data.TokenizerFile))
	if err != nil {
		return nil, err
	}
	be := eval.NewLM(m, tok, m.NewDecoder())
	results := map[string]*eval.TaskResult{}
	get := func(task, metric string) (eval.Metric, error) {
		res := results[task]
		if res == nil {
			var err error
			res, err = eval.RunTask(context.Background(), eval.TaskSpec{Name: "probe_" + task, Kind: eval.KindProbe,
				File: filepath.Join(probeDir, task+".jsonl")}, be, eval.Options{StrictRecords: true})
			if err != nil {
				return eval.Metric{}, err
			}
			results[task] = res
		}
		v, ok := res.Metrics.Get(metric)
		if !ok {
			return eval.Metric{}, fmt.Errorf("probe %s: no metric %s", task, metric)
		}
		return v, nil
	}
	var s ProbeScores
	var errs []error
	for _, q := range []struct {
		task, metric string
		dst          *float64
		n            *int
	}{
		{"test", "acc_reasoning", &s.ReasoningAcc, &s.ReasoningCount},
		{"test", "chance_reasoning", &s.ReasoningChance, nil},
		{"test", "gold_loss_per_token_reasoning", &s.ReasoningLoss, nil},
		{"recall", "acc_memorisation", &s.MemorisationAcc, &s.MemorisationCount},
		{"recall", "gold_loss_per_token_memorisation", &s.MemorisationLoss, nil},
	} {
		v, err := get(q.task, q.metric)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		*q.dst = v.Value
		if q.n != nil {
			*q.n = v.N
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("score probes of %s: %w", runDir, err)
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := model.WriteFileAtomic(cache, append(b, '\n')); err != nil {
		return nil, err
	}
	return &s, nil
}

// reasoningClaim compares γ = 1 with γ = 0.5 on the probes: the drop of the gold answers' loss per token on
// held-out reasoning prompts against the drop on recalled memorisation prompts, each a mean over seeds with
// its standard error. Supported when γ = 1 lowers the reasoning loss and lowers it by more than the
// memorisation loss (both beyond two standard errors); not supported when either goes clearly the other way.
func reasoningClaim(rows []row, probeDir string) Claim {
	c := Claim{N: 1, Text: "γ = 1's gains are largest on reasoning: probes mixed into training, held-out reasoning prompts against memorised answers", Verdict: Inconclusive}
	by := map[float64][]*ProbeScores{}
	for _, r := range rows {
		if r.exp != ExpProbes {
			continue
		}
		s, err := scoreProbes(r.dir, probeDir)
		if err != nil {
			c.Evidence = err.Error()
			return c
		}
		by[r.num("init.gamma")] = append(by[r.num("init.gamma")], s)
	}
	if len(by[0.5]) == 0 || len(by[1]) == 0 {
		c.Evidence = "probe runs missing"
		return c
	}
	stat := func(gm float64, f func(*ProbeScores) float64) (float64, float64) {
		xs := make([]float64, len(by[gm]))
		for i, s := range by[gm] {
			xs[i] = f(s)
		}
		return meanSE(xs)
	}
	rl := func(s *ProbeScores) float64 { return s.ReasoningLoss }
	ml := func(s *ProbeScores) float64 { return s.MemorisationLoss }
	ra := func(s *ProbeScores) float64 { return s.ReasoningAcc }
	ma := func(s *ProbeScores) float64 { return s.MemorisationAcc }
	r05, sr05 := stat(0.5, rl)
	r1, sr1 := stat(1, rl)
	m05, sm05 := stat(0.5, ml)
	m1, sm1 := stat(1, ml)
	a05, sa05 := stat(0.5, ra)
	a1, sa1 := stat(1, ra)
	b05, sb05 := stat(0.5, ma)
	b1, sb1 := stat(1, ma)
	dr, sdr := r05-r1, math.Hypot(sr05, sr1)
	dm, sdm := m05-m1, math.Hypot(sm05, sm1)
	dd, sdd := dr-dm, math.Hypot(sdr, sdm)
	c.Evidence = fmt.Sprintf("gold-answer loss per token, held-out reasoning prompts: γ=0.5 %.4f ± %.4f, γ=1 %.4f ± %.4f (γ=1 lower by %.4f ± %.4f); "+
		"recalled memorisation prompts: γ=0.5 %.4f ± %.4f, γ=1 %.4f ± %.4f (lower by %.4f ± %.4f); reasoning gain minus memorisation gain %.4f ± %.4f; "+
		"exact match, reasoning: γ=0.5 %.3f ± %.3f, γ=1 %.3f ± %.3f (chance %.3f, %d prompts); memorisation: γ=0.5 %.3f ± %.3f, γ=1 %.3f ± %.3f (%d prompts)",
		r05, sr05, r1, sr1, dr, sdr, m05, sm05, m1, sm1, dm, sdm, dd, sdd,
		a05, sa05, a1, sa1, by[1][0].ReasoningChance, by[1][0].ReasoningCount, b05, sb05, b1, sb1, by[1][0].MemorisationCount)
	switch {
	case verdict(dr, sdr) == Supported && verdict(dd, sdd) == Supported:
		c.Verdict = Supported
	case verdict(dr, sdr) == NotSupported || verdict(dd, sdd) == NotSupported:
		c.Verdict = NotSupported
	}
	return c
}
