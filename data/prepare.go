package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"

	"github.com/smallinit/smallinit/corpus"
	"github.com/smallinit/smallinit/tokenizer"
)

// Files of a prepared data directory.
const (
	TokenizerFile = "tokenizer.json"
	TrainFile     = "train.tok"
	ValFile       = "val.tok"
	StatsFile     = "stats.json"
)

// SplitStats counts one part (train or val) of one input.
type SplitStats struct {
	Documents int   `json:"documents"`
	Bytes     int64 `json:"bytes"`
	Tokens    int64 `json:"tokens"` // including one <|endoftext|> per document
}

// InputStats are the counts of one input (a file, or one file of the embedded corpus).
type InputStats struct {
	Name  string     `json:"name"`
	Lang  string     `json:"lang,omitempty"`
	Train SplitStats `json:"train"`
	Val   SplitStats `json:"val"`
}

// Stats is stats.json: what a prepared directory holds.
type Stats struct {
	Source        string       `json:"source"` // "embedded" or the inputs given
	VocabSize     int          `json:"vocab_size"`
	Train         SplitStats   `json:"train"`
	Val           SplitStats   `json:"val"`
	BytesPerToken float64      `json:"bytes_per_token"` // over train and val (documents only)
	Inputs        []InputStats `json:"inputs"`
	// ValByLang names, for the embedded corpus, the per-language validation token files
	// (val.<lang>.tok) and their byte counts, so that losses convert to bits per byte.
	ValByLang map[string]SplitStats `json:"val_by_lang,omitempty"`
	// TrainByLang counts the training split per language, for a corpus built from archives (PrepareArchives).
	TrainByLang map[string]SplitStats `json:"train_by_lang,omitempty"`
	// Archives says how a corpus built from npm package archives was made (PrepareArchives): the packages,
	// the script, the mix, and the documents removed as duplicates, held-out duplicates and over the mix.
	Archives *ArchiveBuild `json:"archives,omitempty"`
	// SHA256 is the sum of each token file and of tokenizer.json (sums.go: Verify), absent in a directory of a
	// build before it.
	SHA256 map[string]string `json:"sha256,omitempty"`
}

// Summary describes the corpus in one line for plans and reports: its source, training tokens and, where
// known, their languages ("archives: a.tgz b.tgz: 29,980,931 training tokens (en 20.0%, zh 80.0%)").
func (s *Stats) Summary() string {
	out := fmt.Sprintf("%s: %s training tokens", s.Source, groupDigits(s.Train.Tokens))
	if len(s.TrainByLang) > 0 && s.Train.Tokens > 0 {
		langs := make([]string, 0, len(s.TrainByLang))
		for l := range s.TrainByLang {
			langs = append(langs, l)
		}
		sort.Strings(langs)
		for i, l := range langs {
			langs[i] = fmt.Sprintf("%s %.1f%%", l, 100*float64(s.TrainByLang[l].Tokens)/float64(s.Train.Tokens))
		}
		out += " (" + strings.Join(langs, ", ") + ")"
	}
	return out
}

// groupDigits writes n with commas between groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Epochs is how many times a run that trains on tokens tokens sees each training token on average: tokens
// divided by the training split's tokens (0 for an empty split).
func (s *Stats) Epochs(tokens int64) float64 {
	if s.Train.Tokens == 0 {
		return 0
	}
	return float64(tokens) / float64(s.Train.Tokens)
}

// BitsPerByte converts a mean loss in nats per token over split s into bits per byte.
func (s SplitStats) BitsPerByte(loss float64) float64 {
	if s.Bytes == 0 {
		return 0
	}
	return loss * float64(s.Tokens) / float64(s.Bytes) / ln2
}

const ln2 = 0.6931471805599453

// ValLangFile is the per-language validation file name of the embedded corpus.
func ValLangFile(lang string) string { return "val." + lang + ".tok" }

// PrepareEmbedded tokenizes the embedded default corpus into dir: it trains a byte-level BPE of vocab tokens
// on the training parts of all five files (or uses tok when non-nil), and writes tokenizer.json, train.tok,
// val.tok, one val.<lang>.tok per language and stats.json. Documents are separated by <|endoftext|>; every
// file's fixed held-out tail (corpus.Split) is validation.
func PrepareEmbedded(dir string, vocab int, tok *tokenizer.Tokenizer) (*Stats, error) {
	created := !exists(dir)
	st, err := prepareEmbedded(dir, vocab, tok)
	if err != nil && created {
		os.Remove(dir) // the directory this call created, if it is still empty: a failure leaves nothing behind
	}
	return st, err
}

func prepareEmbedded(dir string, vocab int, tok *tokenizer.Tokenizer) (*Stats, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	docs := map[string]map[string][]string{} // file -> part -> documents
	var trainTexts []string
	for _, f := range corpus.Files() {
		docs[f.Name] = map[string][]string{}
		for _, part := range []string{corpus.Train, corpus.Val} {
			d, err := corpus.Documents(f.Name, part)
			if err != nil {
				return nil, fmt.Errorf("prepare embedded corpus: %w", err)
			}
			docs[f.Name][part] = d
			if part == corpus.Train {
				trainTexts = append(trainTexts, d...)
			}
		}
	}
	if tok == nil {
		if err := CheckVocab("prepare embedded corpus: vocabulary size", vocab); err != nil {
			return nil, err
		}
		var err error
		if tok, err = tokenizer.Train(trainTexts, vocab); err != nil {
			return nil, fmt.Errorf("prepare embedded corpus: train tokenizer: %w", err)
		}
	}
	if tok.EOT() < 0 {
		return nil, fmt.Errorf("prepare: tokenizer has no %s token", tokenizer.EndOfText)
	}
	st := &Stats{Source: "embedded", VocabSize: tok.VocabSize(), ValByLang: map[string]SplitStats{}}
	var train, val []int32
	valLang := map[string][]int32{}
	encode := func(dst []int32, ds []string, s *SplitStats) []int32 {
		for _, d := range ds {
			n := len(dst)
			dst = tok.AppendEncode(dst, d)
			dst = append(dst, tok.EOT())
			s.Documents++
			s.Bytes += int64(len(d))
			s.Tokens += int64(len(dst) - n)
		}
		return dst
	}
	for _, f := range corpus.Files() {
		in := InputStats{Name: f.Name, Lang: f.Lang}
		train = encode(train, docs[f.Name][corpus.Train], &in.Train)
		val = encode(val, docs[f.Name][corpus.Val], &in.Val)
		valLang[f.Lang] = encode(valLang[f.Lang], docs[f.Name][corpus.Val], new(SplitStats))
		ls := st.ValByLang[f.Lang]
		ls.Documents, ls.Bytes, ls.Tokens = ls.Documents+in.Val.Documents, ls.Bytes+in.Val.Bytes, ls.Tokens+in.Val.Tokens
		st.ValByLang[f.Lang] = ls
		st.Inputs = append(st.Inputs, in)
		st.Train.add(in.Train)
		st.Val.add(in.Val)
	}
	st.BytesPerToken = float64(st.Train.Bytes+st.Val.Bytes) / float64(st.Train.Tokens+st.Val.Tokens)
	// stats.json marks a complete directory (WriteStats): an old one must not survive beside new files.
	if err := os.Remove(filepath.Join(dir, StatsFile)); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("prepare %s: %w", dir, err)
	}
	if err := tok.Save(filepath.Join(dir, TokenizerFile)); err != nil {
		return nil, err
	}
	if err := WriteTokens(filepath.Join(dir, TrainFile), train); err != nil {
		return nil, err
	}
	if err := WriteTokens(filepath.Join(dir, ValFile), val); err != nil {
		return nil, err
	}
	langs := make([]string, 0, len(valLang))
	for l := range valLang {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	for _, l := range langs {
		if err := WriteTokens(filepath.Join(dir, ValLangFile(l)), valLang[l]); err != nil {
			return nil, err
		}
	}
	files := map[string]string{}
	for _, n := range []string{TokenizerFile, TrainFile, ValFile} {
		files[n] = filepath.Join(dir, n)
	}
	for _, l := range langs {
		files[ValLangFile(l)] = filepath.Join(dir, ValLangFile(l))
	}
	if err := st.seal(files); err != nil {
		return nil, err
	}
	return st, WriteStats(dir, st)
}

func (s *SplitStats) add(o SplitStats) {
	s.Documents += o.Documents
	s.Bytes += o.Bytes
	s.Tokens += o.Tokens
}

// WriteStats writes dir/stats.json atomically (it is written last, so its presence marks a complete directory).
func WriteStats(dir string, st *Stats) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, StatsFile), append(b, '\n'))
}

// ReadStats reads dir/stats.json.
func ReadStats(dir string) (*Stats, error) {
	path := filepath.Join(dir, StatsFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("read data stats: %w", err)
	}
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("read data stats %s: %w", path, err)
	}
	return &st, nil
}
