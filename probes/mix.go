package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/eval"
	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/model"
	"github.com/smallinit/smallinit/probes/probescore"
	"github.com/smallinit/smallinit/tokenizer"
)

// Files of a probe mix directory (WriteMix).
const (
	TestFile   = "test.jsonl"   // held-out probes: reasoning kinds measure generalisation
	RecallFile = "recall.jsonl" // probes from training: memorisation kinds measure memorisation
)

// MixShare is the default share of probe tokens in a mix: enough that the probes are seen thousands of
// times in a few minutes of training, little enough that the corpus still dominates.
const MixShare = 0.25

// MixConfig is the probe set the demo and reproduce mix into the embedded corpus: every kind, 2-digit sums
// (learnt soonest), 4000 training probes per kind (about as many tokens as MixShare of the corpus needs),
// memorisation tables of 256 prompts, and test probes per kind.
func MixConfig(test int) Config {
	return Config{Seed: 1, Train: 4000, Test: test, Table: 256, AddDigits: 2}
}

// WriteMix writes dir: train.tok, the training tokens of the prepared corpus in dataDir with the probes of
// c mixed in, each probe line a document ended by <|endoftext|> (as `data prepare --doc-sep line` writes
// them), spread evenly between the corpus documents until they make up share of the tokens (cycling through
// the probes if the corpus needs more); the corpus tokenizer.json, so that runs trained on the mix carry it;
// and test.jsonl and recall.jsonl to score them with. train.tok is written last and atomically, so a directory
// that has it is complete and is reused as it is.
func WriteMix(dir, dataDir string, vocab int, c Config, share float64) error {
	trainPath := filepath.Join(dir, data.TrainFile)
	if _, err := os.Stat(trainPath); err == nil {
		return nil
	}
	if !(share > 0 && share < 1) {
		return fmt.Errorf("probe mix: share %g of probe tokens: want (0, 1)", share)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("probe mix: %w", err)
	}
	tokPath := filepath.Join(dataDir, data.TokenizerFile)
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		return fmt.Errorf("probe mix: %w", err)
	}
	eot := tok.EOT()
	if eot < 0 {
		return fmt.Errorf("probe mix: %s has no <|endoftext|> token to end probe lines with", tokPath)
	}
	ps, err := Make(c)
	if err != nil {
		return err
	}
	for name, set := range map[string][]eval.Probe{TestFile: ps.Test, RecallFile: ps.Recall} {
		recs, err := Records(set)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(dir, name), recs); err != nil {
			return err
		}
	}
	tb, err := inputfile.ReadFile(tokPath, inputfile.MaxTable)
	if err != nil {
		return fmt.Errorf("probe mix: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, data.TokenizerFile), tb); err != nil {
		return err
	}
	corpus, err := data.ReadTokens(filepath.Join(dataDir, data.TrainFile), vocab)
	if err != nil {
		return fmt.Errorf("probe mix: %w", err)
	}
	w, err := data.NewTokWriter(trainPath, vocab)
	if err != nil {
		return err
	}
	defer w.Abort()
	var written, probeToks float64
	next := 0
	for start, i := 0, 0; i < len(corpus); i++ {
		if corpus[i] != eot && i != len(corpus)-1 {
			continue
		}
		if err := w.Write(corpus[start : i+1]); err != nil {
			return err
		}
		written += float64(i + 1 - start)
		start = i + 1
		// Probes follow each corpus document until they are share of what is written.
		for probeToks < share*written {
			ids := append(tok.Encode(ps.Train[next%len(ps.Train)].Text()), eot)
			next++
			if err := w.Write(ids); err != nil {
				return err
			}
			written += float64(len(ids))
			probeToks += float64(len(ids))
		}
	}
	return w.Close()
}

// Records renders probes as the JSON lines of a probe task file, {prompt, answer, kind, chance} each.
func Records(ps []eval.Probe) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<", ">" and "&" of bracket probes readable
	for _, p := range ps {
		if err := enc.Encode(p); err != nil {
			return nil, fmt.Errorf("probe %q: %w", p.Prompt, err)
		}
	}
	return b.Bytes(), nil
}

// Prefix is what Score puts before every prompt: the <|endoftext|> that precedes each probe line in
// the mix (WriteMix), so that prompts are scored where training put them, not at position 0 of a window,
// which in training only ever held a corpus token or a probe continued from the previous window.
const Prefix = "<|endoftext|>"

// Score scores m on dir's test.jsonl (reasoning kinds) and recall.jsonl (memorisation kinds), each prompt
// after Prefix, completions generated with m's KV-cache decoder.
func Score(ctx context.Context, m *model.Model, tok eval.Tokenizer, dir string) (*probescore.Scores, error) {
	return ScoreFirst(ctx, m, tok, dir, 0)
}

// ScoreFirst is Score on the first limit records of each file (0: all of them): what a wall-time estimate
// times to price Score (reproduce's probe scoring).
func ScoreFirst(ctx context.Context, m *model.Model, tok eval.Tokenizer, dir string, limit int) (*probescore.Scores, error) {
	eot := tok.EOT()
	if eot < 0 {
		return nil, fmt.Errorf("probes %s: the tokenizer has no %s token to put before the prompts", dir, Prefix)
	}
	be := eval.NewLM(m, tok, m.NewDecoder())
	be.Prefix = []int32{eot}
	results := map[string]*eval.TaskResult{}
	get := func(file, metric string) (eval.Metric, error) {
		res := results[file]
		if res == nil {
			var err error
			res, err = eval.RunTask(ctx, eval.TaskSpec{Name: "probe_" + strings.TrimSuffix(file, ".jsonl"), Kind: eval.KindProbe,
				File: filepath.Join(dir, file)}, be, eval.Options{StrictRecords: true, Limit: limit})
			if err != nil {
				return eval.Metric{}, err
			}
			results[file] = res
		}
		v, ok := res.Metrics.Get(metric)
		if !ok {
			return eval.Metric{}, fmt.Errorf("probes %s: no metric %s", filepath.Join(dir, file), metric)
		}
		return v, nil
	}
	s := probescore.Scores{Prefix: Prefix}
	var errs []error
	for _, q := range []struct {
		file, metric string
		dst          *float64
		n            *int
	}{
		{TestFile, "acc_reasoning", &s.ReasoningAcc, &s.ReasoningCount},
		{TestFile, "chance_reasoning", &s.ReasoningChance, nil},
		{TestFile, "gold_loss_per_token_reasoning", &s.ReasoningLoss, nil},
		{RecallFile, "acc_memorisation", &s.MemorisationAcc, &s.MemorisationCount},
		{RecallFile, "gold_loss_per_token_memorisation", &s.MemorisationLoss, nil},
	} {
		v, err := get(q.file, q.metric)
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
		return nil, err
	}
	return &s, nil
}
