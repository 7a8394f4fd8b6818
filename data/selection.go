package data

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
	"github.com/smallinit/smallinit/tokenizer"
)

// Files of the LR-selection slice in a prepared directory (docs/definitions.md §7: "select hyperparameters on a separate
// slice"). The slice is carved out of the training documents, not out of the validation split, so that the
// verdict set stays the whole validation split and is never read while hyperparameters are chosen.
const (
	SelectFile      = "select.tok"       // the LR-selection slice: held-out training documents
	SelectTrainFile = "train.select.tok" // train.tok without the selection slice: what every run trains on
	SelectStatsFile = "select.json"      // counts and the rule, written last (its presence marks a complete slice)
)

// DefaultSelectShare is the share of each input's training tokens held out for learning-rate selection.
const DefaultSelectShare = 0.05

// SelectionStats is select.json.
type SelectionStats struct {
	Rule   string        `json:"rule"`
	Share  float64       `json:"share"`
	Select SplitStats    `json:"select"` // documents and tokens of select.tok (bytes are not known from tokens: 0)
	Train  SplitStats    `json:"train"`  // of train.select.tok
	Inputs []SelectInput `json:"inputs,omitempty"`
	// DroppedAsValDuplicates counts training documents left out of the slice because the validation split
	// holds the same token sequence: the slice never scores a verdict document, even a repeated one.
	DroppedAsValDuplicates int `json:"dropped_as_val_duplicates"`
}

// SelectInput counts one input's (stratum's) part of the slice.
type SelectInput struct {
	Name   string     `json:"name"`
	Lang   string     `json:"lang,omitempty"`
	Select SplitStats `json:"select"`
}

const selectRule = "per input (embedded corpus) or over the whole file, the training documents with the smallest " +
	"FNV-1a 64 hashes of their token ids until the share of the input's tokens is reached; documents that also " +
	"occur in val.tok are never selected"

// PrepareSelection writes the LR-selection slice of the prepared directory dir: from train.tok (documents end
// with <|endoftext|>), per input of the embedded corpus (so each language keeps its share; one stratum for a
// directory prepared from files, whose inputs may be interleaved), the documents whose token hash is smallest
// until share of the input's training tokens is held out go to select.tok, all others, in order, to
// train.select.tok. The choice depends on each document's tokens alone, so it is the same on every machine and
// for any document order. train.tok, val.tok and stats.json are left as they are.
func PrepareSelection(dir string, share float64) (*SelectionStats, error) {
	if !(share > 0 && share < 0.5) {
		return nil, fmt.Errorf("prepare selection slice: share %g: must be in (0, 0.5)", share)
	}
	st, err := ReadStats(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(filepath.Join(dir, TokenizerFile))
	if err != nil {
		return nil, fmt.Errorf("prepare selection slice: %w", err)
	}
	eot := tok.EOT()
	if eot < 0 {
		return nil, fmt.Errorf("prepare selection slice: %s has no %s token", filepath.Join(dir, TokenizerFile), tokenizer.EndOfText)
	}
	train, err := ReadTokens(filepath.Join(dir, TrainFile), st.VocabSize)
	if err != nil {
		return nil, err
	}
	val, err := ReadTokens(filepath.Join(dir, ValFile), st.VocabSize)
	if err != nil {
		return nil, err
	}
	valDocs := map[uint64]bool{}
	for _, d := range splitDocs(val, eot) {
		valDocs[docHash(val[d[0]:d[1]])] = true
	}
	docs := splitDocs(train, eot)
	// Strata: the embedded corpus writes its inputs' training parts in order; a file-prepared directory may not.
	type stratum struct {
		in         SelectInput
		start, end int // document indices
		tokens     int64
	}
	var strata []stratum
	if st.Source == "embedded" && len(st.Inputs) > 0 {
		di := 0
		var at int64
		for _, in := range st.Inputs {
			s := stratum{in: SelectInput{Name: in.Name, Lang: in.Lang}, start: di}
			at += in.Train.Tokens
			for di < len(docs) && int64(docs[di][1]) <= at {
				s.tokens += int64(docs[di][1] - docs[di][0])
				di++
			}
			s.end = di
			strata = append(strata, s)
		}
		if di != len(docs) || at != int64(len(train)) {
			return nil, fmt.Errorf("prepare selection slice: %s: the inputs' training tokens in %s (%d) do not match %s (%d tokens)", dir, StatsFile, at, TrainFile, len(train))
		}
	} else {
		strata = []stratum{{in: SelectInput{Name: "all"}, end: len(docs), tokens: int64(len(train))}}
	}
	out := &SelectionStats{Rule: selectRule, Share: share}
	chosen := make([]bool, len(docs))
	for i := range strata {
		s := &strata[i]
		type cand struct {
			i int
			h uint64
		}
		var cs []cand
		for d := s.start; d < s.end; d++ {
			h := docHash(train[docs[d][0]:docs[d][1]])
			if valDocs[h] {
				out.DroppedAsValDuplicates++
				continue
			}
			cs = append(cs, cand{d, h})
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(a.h, b.h), cmp.Compare(a.i, b.i)) })
		goal := int64(share * float64(s.tokens))
		for _, c := range cs {
			if s.in.Select.Tokens >= goal {
				break
			}
			n := int64(docs[c.i][1] - docs[c.i][0])
			if s.in.Select.Tokens+n > 2*goal+1 && s.in.Select.Tokens > 0 {
				continue // a document far larger than what is left would overshoot: try the next
			}
			chosen[c.i] = true
			s.in.Select.Documents++
			s.in.Select.Tokens += n
		}
		if s.in.Select.Documents == 0 && len(cs) > 1 {
			return nil, fmt.Errorf("prepare selection slice: input %s: no training document fits a share of %g", s.in.Name, share)
		}
		out.Inputs = append(out.Inputs, s.in)
	}
	var sel, rest []int32
	for i, d := range docs {
		if chosen[i] {
			sel = append(sel, train[d[0]:d[1]]...)
			out.Select.Documents++
		} else {
			rest = append(rest, train[d[0]:d[1]]...)
			out.Train.Documents++
		}
	}
	out.Select.Tokens, out.Train.Tokens = int64(len(sel)), int64(len(rest))
	if len(sel) == 0 {
		return nil, fmt.Errorf("prepare selection slice: %s: no document selected (%d training documents)", dir, len(docs))
	}
	if err := os.Remove(filepath.Join(dir, SelectStatsFile)); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("prepare selection slice: %w", err)
	}
	if err := WriteTokens(filepath.Join(dir, SelectFile), sel); err != nil {
		return nil, err
	}
	if err := WriteTokens(filepath.Join(dir, SelectTrainFile), rest); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return out, atomicfile.Write(filepath.Join(dir, SelectStatsFile), append(b, '\n'))
}

// ReadSelectionStats reads dir/select.json; an error means PrepareSelection has not completed in dir.
func ReadSelectionStats(dir string) (*SelectionStats, error) {
	path := filepath.Join(dir, SelectStatsFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("read selection slice stats: %w", err)
	}
	var st SelectionStats
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("read selection slice stats %s: %w", path, err)
	}
	return &st, nil
}

// splitDocs returns [start, end) token ranges of the documents of toks, each ending with its eot (a last
// document without one runs to the end).
func splitDocs(toks []int32, eot int32) [][2]int {
	var out [][2]int
	s := 0
	for i, t := range toks {
		if t == eot {
			out = append(out, [2]int{s, i + 1})
			s = i + 1
		}
	}
	if s < len(toks) {
		out = append(out, [2]int{s, len(toks)})
	}
	return out
}

// docHash is FNV-1a 64 over a document's token ids (little-endian uint32).
func docHash(doc []int32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, t := range doc {
		binary.LittleEndian.PutUint32(b[:], uint32(t))
		h.Write(b[:])
	}
	return h.Sum64()
}
