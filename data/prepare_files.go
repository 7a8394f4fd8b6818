package data

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"

	"github.com/smallinit/smallinit/tokenizer"
)

// Defaults of PrepareFiles, also used by `smallinit data prepare`.
const (
	// DefaultValFraction is the share of documents held out for validation: 1%.
	DefaultValFraction = 0.01
	// MaxValFraction bounds the validation share: more than half would leave less to train on than to test on.
	MaxValFraction = 0.5
	// DefaultTokenizerSample is how much training text a tokenizer is trained on: the first 50 MB (50·2^20
	// bytes) of training documents, in input order. BPE merges stabilise long before that, and the sample bounds
	// the memory and time of training whatever the corpus size.
	DefaultTokenizerSample = 50 << 20
)

// PrepareOptions configures PrepareFiles.
type PrepareOptions struct {
	// Inputs are files and directories, expanded by ExpandInputs.
	Inputs []string
	// TokenizerFile, if set, is an existing tokenizer.json to encode with; it is copied byte for byte into the
	// output directory. Otherwise a tokenizer of Vocab tokens is trained.
	TokenizerFile string
	// Vocab is the size of the tokenizer to train; 0 means tokenizer.DefaultVocabSize. It must be 0 when
	// TokenizerFile is set.
	Vocab int
	// ValFraction is the share of documents held out for validation, in [0, MaxValFraction]; see IsValidation.
	// The zero value holds out nothing (the command line defaults to DefaultValFraction).
	ValFraction float64
	// TextColumn and DocSep say how inputs are cut into documents (see InputOptions).
	TextColumn, DocSep string
	// SkipBad skips malformed records (see BadRecordError) and counts them per input, instead of failing.
	SkipBad bool
	// TokenizerSample is the number of bytes of training text a tokenizer is trained on; 0 means
	// DefaultTokenizerSample.
	TokenizerSample int64
	// Workers is the number of encoding goroutines; 0 means runtime.GOMAXPROCS(0). The output does not depend
	// on it.
	Workers int
	// Source is stats.json's "source"; empty means the inputs joined with spaces.
	Source string
	// Log receives progress messages (what is being done, and warnings); nil discards them.
	Log io.Writer
	// Progress, if set, is called from time to time during encoding with the bytes of input files read so far
	// (on disk, so compressed bytes for gzip files) and their total. It is called from a single goroutine,
	// not the caller's.
	Progress func(done, total int64)
	// Context, if set, stops the preparation when it is cancelled (SIGTERM): between two documents of the
	// tokenizer's sample, after the tokenizer's training, or between two batches of the encoding. The outputs
	// are then as before (the temporary files removed), and the error, which says where it stopped, wraps
	// context.Cause. (The tokenizer's training itself runs to its end: it holds no file open.)
	Context context.Context
}

// ctx is opt.Context, or a context that is never cancelled.
func (opt *PrepareOptions) ctx() context.Context {
	if opt.Context == nil {
		return context.Background()
	}
	return opt.Context
}

// interrupted is the error of a preparation whose context was cancelled at where: nothing of its outputs is
// written (their temporary files are removed), so the same call starts over.
func interrupted(ctx context.Context, where string) error {
	return fmt.Errorf("prepare: interrupted %s: nothing written (the outputs are as they were; run the same command again to start over): %w", where, context.Cause(ctx))
}

// FileInputStats are the counts of one input file: InputStats and what only files have.
type FileInputStats struct {
	InputStats
	// Format is the file's format (see the Format constants).
	Format string `json:"format"`
	// BytesPerToken is the file's bytes per token over both splits (documents only, <|endoftext|> included).
	BytesPerToken float64 `json:"bytes_per_token"`
	// BadRecords counts the malformed records skipped with SkipBad; without it there are none (it fails).
	BadRecords int64 `json:"bad_records"`
	// EmptyDocuments counts documents with empty text, which are left out (they hold no training signal).
	EmptyDocuments int64 `json:"empty_documents"`
	// ReplacedUTF8 counts JSON records whose invalid UTF-8 bytes were replaced with U+FFFD when decoded.
	ReplacedUTF8 int64 `json:"replaced_utf8_records"`
}

// FileStats is stats.json of a directory prepared by PrepareFiles: Stats, whose fields it shares (so ReadStats
// reads it), plus the settings of the run and per-input format, bad and empty record counts. Its Inputs shadow
// Stats.Inputs in JSON; both are filled.
type FileStats struct {
	Stats
	ValFraction     float64 `json:"val_fraction"`
	DocSep          string  `json:"doc_sep"`
	TextColumn      string  `json:"text_column"`
	Tokenizer       string  `json:"tokenizer"`                        // "trained", or the tokenizer file used
	TokenizerSample int64   `json:"tokenizer_sample_bytes,omitempty"` // bytes of text a trained tokenizer saw
	BadRecords      int64   `json:"bad_records"`
	EmptyDocuments  int64   `json:"empty_documents"`
	ReplacedUTF8    int64   `json:"replaced_utf8_records"` // JSON records with invalid UTF-8, replaced by U+FFFD
	// PreTokenizer is the tokenizer's splitter (tokenizer.PreTokenizer): "… (approximate)" when a loaded file's
	// pre-tokenizer is one this package only approximates, so ids may differ from Hugging Face's on some text.
	PreTokenizer string `json:"pre_tokenizer"`
	// Inputs are the per-file counts, in reading order.
	Inputs []FileInputStats `json:"inputs"`
}

// IsValidation reports whether document index of the input file with the given key (InputFile.Key,
// Document.Index) is held out for validation at the given fraction. The rule is deterministic and depends on
// nothing else, so the split is stable across runs, machines, worker counts and skipped bad records:
//
//	u = the first 8 bytes, big-endian, of SHA-256(key + "\n" + decimal index)
//	validation  ⇔  u < ⌊fraction · 2^64⌋
//
// In Python: int.from_bytes(hashlib.sha256(f"{key}\n{index}".encode()).digest()[:8], "big") <
// math.floor(fraction * 2**64).
func IsValidation(key string, index int64, fraction float64) bool {
	if !(fraction > 0) {
		return false
	}
	u := validationKey(key, index)
	t := math.Ldexp(min(fraction, 1), 64)
	if t >= 1<<64 {
		return true
	}
	return u < uint64(t)
}

// validationKey is IsValidation's u for document index of the input with the given key: the order in which
// documents are held out (the smallest first), also for a stratified split (ArchiveOptions.ValDocs).
func validationKey(key string, index int64) uint64 {
	var buf [64]byte
	b := append(append(append(buf[:0], key...), '\n'), strconv.FormatInt(index, 10)...)
	sum := sha256.Sum256(b)
	return binary.BigEndian.Uint64(sum[:8])
}

// PrepareFiles tokenizes the user's corpus (opt.Inputs: .txt, .txt.gz, .jsonl, .jsonl.gz, .parquet files and
// directories of them, see ExpandInputs) into dir: tokenizer.json, train.tok, val.tok and stats.json (a
// FileStats, which ReadStats reads as Stats).
//
// Documents: a JSON line or a Parquet row is one document; a .txt file is one document, or is cut at blank lines
// or into lines (opt.DocSep, see the DocSep constants). Documents with empty text are left out and counted. Each
// document is followed by <|endoftext|> in the token stream. Which documents are validation is IsValidation's
// rule, on the file's key and the document's index.
//
// Tokenizer: opt.TokenizerFile is loaded and copied; otherwise a byte-level BPE of opt.Vocab tokens is trained
// on the first opt.TokenizerSample bytes (DefaultTokenizerSample, 50 MB) of training documents in input order,
// read in a first pass that stops there, so memory stays bounded whatever the corpus size.
//
// Encoding: a second pass streams every input through a reader goroutine, opt.Workers encoder goroutines working
// on batches of documents, and a writer that puts the batches back in input order into streaming token writers
// (TokWriter), so the output is the same for any number of workers and memory is bounded.
//
// The outputs are complete or absent: token files are written under temporary names and renamed at the end, an
// old stats.json is removed before the renames and the new one written last, so a directory with a stats.json
// is complete. Bad input fails with an error naming the file and line (or Parquet row group and row), unless
// opt.SkipBad, which skips malformed records and counts them; a file that cannot be read at all (or a Parquet
// file without the text column) fails either way, and so does a corpus with no text.
func PrepareFiles(dir string, opt PrepareOptions) (*FileStats, error) {
	created := !exists(dir)
	st, err := prepareFiles(dir, opt)
	if err != nil && created {
		os.Remove(dir) // the directory this call created, if it is still empty: a failure leaves nothing behind
	}
	return st, err
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Bounds of a vocabulary to train: at least the 256 bytes and <|endoftext|>; at most the largest vocab_size a
// model takes (arch.MaxDim, 2^24, held equal by TestMaxVocabIsTheModelsBound without data importing model, so
// that the summary's build stays free of the model), far above any tokenizer in use (256k). Every reader of a
// vocabulary size to train (--vocab, a plan's data.vocab, PrepareFiles, PrepareEmbedded) checks it with
// CheckVocab.
const (
	MinVocab = 257
	MaxVocab = 1 << 24
)

// CheckVocab refuses a vocabulary size to train outside [MinVocab, MaxVocab]; what names the flag or key.
func CheckVocab(what string, vocab int) error {
	if vocab < MinVocab || vocab > MaxVocab {
		return fmt.Errorf("%s %d: must be in [%d, %d] (256 bytes and %s at least)", what, vocab, MinVocab, MaxVocab, tokenizer.EndOfText)
	}
	return nil
}

func prepareFiles(dir string, opt PrepareOptions) (*FileStats, error) {
	start := time.Now()
	logf := func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", args...)
		}
	}
	if !(opt.ValFraction >= 0 && opt.ValFraction <= MaxValFraction) {
		return nil, fmt.Errorf("prepare: validation fraction %g: must be in [0, %g]", opt.ValFraction, MaxValFraction)
	}
	if opt.TokenizerFile != "" && opt.Vocab != 0 {
		return nil, errors.New("prepare: give a tokenizer file or a vocabulary size to train one, not both")
	}
	if opt.Vocab == 0 && opt.TokenizerFile == "" {
		opt.Vocab = tokenizer.DefaultVocabSize
	}
	if opt.TokenizerFile == "" {
		if err := CheckVocab("prepare: vocabulary size", opt.Vocab); err != nil {
			return nil, err
		}
	}
	if opt.TextColumn == "" {
		opt.TextColumn = DefaultTextColumn
	}
	switch opt.DocSep {
	case "":
		opt.DocSep = DocSepFile
	case DocSepFile, DocSepBlank, DocSepLine:
	default:
		return nil, fmt.Errorf("prepare: document separator %q: want %q, %q or %q", opt.DocSep, DocSepFile, DocSepBlank, DocSepLine)
	}
	if opt.TokenizerSample == 0 {
		opt.TokenizerSample = DefaultTokenizerSample
	}
	if opt.TokenizerSample < 0 {
		return nil, fmt.Errorf("prepare: tokenizer sample of %d bytes: must be positive", opt.TokenizerSample)
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	files, err := ExpandInputs(opt.Inputs)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := checkFormatOptions(files, opt); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := checkWritableDir(dir); err != nil {
		return nil, err
	}
	removeStaleTemps(dir, logf)
	var total int64
	for _, f := range files {
		total += f.Size
	}
	logf("reading %d input file(s), %s on disk", len(files), humanBytes(total))
	in := InputOptions{TextColumn: opt.TextColumn, DocSep: opt.DocSep}

	var tok *tokenizer.Tokenizer
	var tokRaw []byte // the tokenizer file's bytes, copied to dir
	var sampled int64
	if opt.TokenizerFile != "" {
		if tokRaw, err = inputfile.ReadFile(opt.TokenizerFile, inputfile.MaxTokenizer); err != nil {
			return nil, fmt.Errorf("prepare: tokenizer: %w", err)
		}
		if tok, err = tokenizer.Load(opt.TokenizerFile); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		logf("using the tokenizer %s (%d tokens, pre-tokenizer %s)", opt.TokenizerFile, tok.VocabSize(), tok.PreTokenizer())
		if strings.HasSuffix(tok.PreTokenizer(), "(approximate)") {
			logf("warning: %s: its pre-tokenizer is not one this tokenizer implements exactly; it is approximated by Llama 3's pattern, so ids can differ from Hugging Face's on some text (recorded in stats.json as pre_tokenizer)", opt.TokenizerFile)
		}
	} else {
		sample, err := trainingSample(files, in, opt)
		if err != nil {
			return nil, err
		}
		for _, s := range sample {
			sampled += int64(len(s))
		}
		logf("training a byte-level BPE tokenizer of %d tokens on %s of training text...", opt.Vocab, humanBytes(sampled))
		t0 := time.Now()
		if tok, err = tokenizer.Train(sample, opt.Vocab); err != nil {
			return nil, fmt.Errorf("prepare: train tokenizer: %w", err)
		}
		logf("trained the tokenizer (%d tokens) in %.1fs", tok.VocabSize(), time.Since(t0).Seconds())
		if opt.ctx().Err() != nil {
			return nil, interrupted(opt.ctx(), "after training the tokenizer, before encoding")
		}
	}
	if tok.EOT() < 0 {
		return nil, fmt.Errorf("prepare: tokenizer %s has no %s token to separate documents", opt.TokenizerFile, tokenizer.EndOfText)
	}

	train, err := NewTokWriter(filepath.Join(dir, TrainFile), tok.VocabSize())
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer train.Abort()
	val, err := NewTokWriter(filepath.Join(dir, ValFile), tok.VocabSize())
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer val.Abort()

	logf("encoding with %d worker(s)...", opt.Workers)
	st := &FileStats{
		Stats:       Stats{Source: opt.Source, VocabSize: tok.VocabSize()},
		ValFraction: opt.ValFraction, DocSep: opt.DocSep, TextColumn: opt.TextColumn, Tokenizer: "trained",
		TokenizerSample: sampled, Inputs: make([]FileInputStats, len(files)),
	}
	if st.Source == "" {
		st.Source = strings.Join(opt.Inputs, " ")
	}
	if opt.TokenizerFile != "" {
		st.Tokenizer = opt.TokenizerFile
	}
	st.PreTokenizer = tok.PreTokenizer()
	for i, f := range files {
		st.Inputs[i] = FileInputStats{InputStats: InputStats{Name: f.Path}, Format: f.Format}
	}
	if err := encodeAll(files, in, opt, tok, train, val, st, total); err != nil {
		return nil, err
	}
	for i := range st.Inputs {
		in := &st.Inputs[i]
		st.Train.add(in.Train)
		st.Val.add(in.Val)
		st.BadRecords += in.BadRecords
		st.EmptyDocuments += in.EmptyDocuments
		st.ReplacedUTF8 += in.ReplacedUTF8
		if n := in.Train.Tokens + in.Val.Tokens; n > 0 {
			in.BytesPerToken = float64(in.Train.Bytes+in.Val.Bytes) / float64(n)
		}
		st.Stats.Inputs = append(st.Stats.Inputs, in.InputStats)
	}
	if st.Train.Documents+st.Val.Documents == 0 {
		return nil, emptyCorpusError(st.Inputs)
	}
	if st.Train.Documents == 0 {
		return nil, fmt.Errorf("prepare: no training documents: all %d documents fell into the validation split; lower the validation fraction", st.Val.Documents)
	}
	if st.Val.Documents == 0 && opt.ValFraction > 0 {
		logf("warning: no document fell into the validation split (%d documents, fraction %g): val.tok is empty", st.Train.Documents, opt.ValFraction)
	}
	st.BytesPerToken = float64(st.Train.Bytes+st.Val.Bytes) / float64(st.Train.Tokens+st.Val.Tokens)
	if st.ReplacedUTF8 > 0 {
		logf("warning: %d JSON record(s) held invalid UTF-8, replaced by U+FFFD when decoded; stats.json counts them per input (replaced_utf8_records)", st.ReplacedUTF8)
	}
	if st.BadRecords > 0 {
		logf("skipped %d bad record(s); stats.json counts them per input", st.BadRecords)
	}

	// Stage: every output is written in full and synced under a temporary name first, so that a full disk or
	// any other write error fails here and leaves the directory as it was.
	statsPath := filepath.Join(dir, StatsFile)
	tokStaged := filepath.Join(dir, "."+TokenizerFile+".tmp-staged")
	statsStaged := filepath.Join(dir, "."+StatsFile+".tmp-staged")
	defer os.Remove(tokStaged)
	defer os.Remove(statsStaged)
	if tokRaw != nil {
		err = atomicfile.Write(tokStaged, tokRaw)
		if err == nil {
			err = os.Chmod(tokStaged, 0o644) // as tokenizer.Save leaves it
		}
	} else {
		err = tok.Save(tokStaged)
	}
	if err != nil {
		return nil, fmt.Errorf("prepare: %s: %w", filepath.Join(dir, TokenizerFile), err)
	}
	if err := train.Finish(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := val.Finish(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := st.seal(map[string]string{TokenizerFile: tokStaged, TrainFile: train.Staged(), ValFile: val.Staged()}); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := atomicfile.Write(statsStaged, append(b, '\n')); err != nil {
		return nil, fmt.Errorf("prepare: %s: %w", statsPath, err)
	}
	os.Chmod(statsStaged, 0o644) // readable like the other files; a failure here changes nothing else

	// Commit, by renames only: from here on the directory is incomplete until stats.json is in place.
	if err := os.Remove(statsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := os.Rename(tokStaged, filepath.Join(dir, TokenizerFile)); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := train.Close(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := val.Close(); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if err := os.Rename(statsStaged, statsPath); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	logf("prepared %s in %.1fs", dir, time.Since(start).Seconds())
	return st, nil
}

// checkWritableDir creates dir if needed and checks that a file can be created in it, so that an unwritable
// output directory fails at once, with one clear error, before any work.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("prepare: output directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".write-test*")
	if err != nil {
		return fmt.Errorf("prepare: output directory %s is not writable: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// removeStaleTemps removes the temporary files an earlier run in dir left behind when it was killed (a
// process killed with SIGKILL cannot remove them): the outputs' ".NAME.tmp*" (tokenizer.json's "NAME.tmp*")
// and the writability probe. Two runs must not prepare the same directory at once anyway.
func removeStaleTemps(dir string, logf func(string, ...any)) {
	patterns := []string{".write-test*", TokenizerFile + ".tmp*", // the second: tokenizer temporaries of versions before internal/atomicfile
		"." + ValLangFile("*") + ".tmp*"} // PrepareArchives' per-language validation files
	for _, name := range []string{TrainFile, ValFile, StatsFile, TokenizerFile} {
		patterns = append(patterns, "."+name+".tmp*")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		for _, pat := range patterns {
			if ok, _ := filepath.Match(pat, e.Name()); ok && e.Type().IsRegular() {
				if p := filepath.Join(dir, e.Name()); os.Remove(p) == nil {
					logf("removed %s, left behind by an interrupted run", p)
				}
				break
			}
		}
	}
}

// trainingSample reads training documents in input order until it has opt.TokenizerSample bytes (the last
// document cut at a character boundary to fit). Validation documents are left out, so the tokenizer never sees
// held-out text.
func trainingSample(files []InputFile, in InputOptions, opt PrepareOptions) ([]string, error) {
	var sample []string
	var n, docs, valDocs int64
	for _, f := range files {
		r, err := OpenInput(f.Path, in)
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		for n < opt.TokenizerSample {
			if opt.ctx().Err() != nil {
				r.Close()
				return nil, interrupted(opt.ctx(), fmt.Sprintf("while reading the tokenizer's sample (%s of %s)", humanBytes(n), humanBytes(opt.TokenizerSample)))
			}
			d, err := r.Next()
			if err == io.EOF {
				break
			}
			var bad *BadRecordError
			if errors.As(err, &bad) && opt.SkipBad {
				continue
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("prepare: %w", err)
			}
			if d.Text == "" {
				continue
			}
			docs++
			if IsValidation(f.Key, d.Index, opt.ValFraction) {
				valDocs++
				continue
			}
			text := d.Text
			if rest := opt.TokenizerSample - n; int64(len(text)) > rest {
				cut := int(rest)
				for cut > 0 && !utf8.RuneStart(text[cut]) {
					cut--
				}
				text = strings.Clone(text[:cut]) // not a slice of the whole document, which may be huge
			}
			sample = append(sample, text)
			n += int64(len(text))
		}
		r.Close()
		if n >= opt.TokenizerSample {
			break
		}
	}
	if n == 0 {
		if docs == 0 {
			return nil, emptyCorpusErrorFiles(files)
		}
		return nil, fmt.Errorf("prepare: no training text to train a tokenizer on: all %d documents fell into the validation split; lower the validation fraction", valDocs)
	}
	return sample, nil
}

// emptyCorpusError explains a corpus without documents, naming the inputs and what was found in them.
func emptyCorpusError(inputs []FileInputStats) error {
	if len(inputs) == 1 {
		in := inputs[0]
		return fmt.Errorf("prepare: empty corpus: %s holds no text (%d empty documents, %d bad records skipped)", in.Name, in.EmptyDocuments, in.BadRecords)
	}
	var bad, empty int64
	names := make([]string, 0, 4)
	for i, in := range inputs {
		bad += in.BadRecords
		empty += in.EmptyDocuments
		if i < 3 {
			names = append(names, in.Name)
		}
	}
	if len(inputs) > 3 {
		names = append(names, "...")
	}
	return fmt.Errorf("prepare: empty corpus: the %d inputs (%s) hold no text (%d empty documents, %d bad records skipped)", len(inputs), strings.Join(names, ", "), empty, bad)
}

// emptyCorpusErrorFiles is emptyCorpusError before the counts are known (the tokenizer sample pass).
func emptyCorpusErrorFiles(files []InputFile) error {
	if len(files) == 1 {
		return fmt.Errorf("prepare: empty corpus: %s holds no text", files[0].Path)
	}
	names := make([]string, 0, 4)
	for i, f := range files {
		if i < 3 {
			names = append(names, f.Path)
		}
	}
	if len(files) > 3 {
		names = append(names, "...")
	}
	return fmt.Errorf("prepare: empty corpus: the %d inputs (%s) hold no text", len(files), strings.Join(names, ", "))
}

// encBatch is a batch of consecutive documents on its way through the encoding pipeline.
type encBatch struct {
	seq  int
	docs []encDoc
	toks []int32 // the documents' tokens, each followed by <|endoftext|>
	ends []int   // document i's tokens are toks[ends[i-1]:ends[i]]
}

type encDoc struct {
	input int // index into the input list
	val   bool
	bytes int
	text  string // dropped once encoded
}

// A batch is cut after batchBytes bytes of text or batchDocs documents (variables so that tests can make
// batches tiny and exercise the reordering).
var (
	batchBytes = 1 << 20
	batchDocs  = 1024
)

// encodeAll is the second pass: a reader goroutine cuts the inputs into batches, opt.Workers goroutines encode
// them, and this goroutine writes them in order to train and val, counting into st.Inputs. At most
// 4·workers batches are in flight, which bounds memory.
func encodeAll(files []InputFile, in InputOptions, opt PrepareOptions, tok *tokenizer.Tokenizer, train, val *TokWriter, st *FileStats, total int64) error {
	jobs := make(chan *encBatch, opt.Workers)
	results := make(chan *encBatch, opt.Workers)
	slots := make(chan struct{}, 4*opt.Workers) // one per batch in flight
	quit := make(chan struct{})
	readErr := make(chan error, 1)
	bad := make([]int64, len(files))
	empty := make([]int64, len(files))
	replaced := make([]int64, len(files))

	go func() {
		defer close(jobs)
		readErr <- readBatches(files, in, opt, total, bad, empty, replaced, jobs, slots, quit)
	}()
	done := make(chan struct{})
	for range opt.Workers {
		go func() {
			defer func() { done <- struct{}{} }()
			eot := tok.EOT()
			for b := range jobs {
				select {
				case <-quit:
					continue
				default:
				}
				n := 0
				for _, d := range b.docs {
					n += d.bytes
				}
				b.ends = make([]int, len(b.docs))
				b.toks = make([]int32, 0, n/3+len(b.docs)+64)
				for i := range b.docs {
					b.toks = tok.AppendEncode(b.toks, b.docs[i].text)
					b.toks = append(b.toks, eot)
					b.ends[i] = len(b.toks)
					b.docs[i].text = ""
				}
				select {
				case results <- b:
				case <-quit:
				}
			}
		}()
	}
	go func() {
		for range opt.Workers {
			<-done
		}
		close(results)
	}()

	var werr error
	pending := map[int]*encBatch{}
	next := 0
	ctx := opt.ctx()
	for b := range results {
		if werr != nil {
			continue
		}
		if ctx.Err() != nil { // stopped: the writers are aborted by the caller, nothing is committed
			var docs int
			for _, in := range st.Inputs {
				docs += in.Train.Documents + in.Val.Documents
			}
			werr = interrupted(ctx, fmt.Sprintf("while encoding, after %d documents", docs))
			close(quit)
			continue
		}
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if werr = writeBatch(b, train, val, st); werr != nil {
				close(quit)
				break
			}
			<-slots
		}
	}
	rerr := <-readErr
	if werr != nil && ctx.Err() != nil {
		return werr
	} else if werr != nil {
		return fmt.Errorf("prepare: %w", werr)
	}
	if rerr != nil {
		return rerr
	}
	for i := range files {
		st.Inputs[i].BadRecords, st.Inputs[i].EmptyDocuments, st.Inputs[i].ReplacedUTF8 = bad[i], empty[i], replaced[i]
	}
	return nil
}

// writeBatch writes a batch's documents to their split and counts them.
func writeBatch(b *encBatch, train, val *TokWriter, st *FileStats) error {
	prev := 0
	for i, d := range b.docs {
		ids := b.toks[prev:b.ends[i]]
		prev = b.ends[i]
		w, s := train, &st.Inputs[d.input].Train
		if d.val {
			w, s = val, &st.Inputs[d.input].Val
		}
		if err := w.Write(ids); err != nil {
			return err
		}
		s.Documents++
		s.Bytes += int64(d.bytes)
		s.Tokens += int64(len(ids))
	}
	return nil
}

// readBatches reads every input in order, cuts the documents into batches and sends them to jobs, taking a slot
// per batch. It counts bad records (with SkipBad) and empty documents per input, and reports progress.
func readBatches(files []InputFile, in InputOptions, opt PrepareOptions, total int64, bad, empty, replaced []int64,
	jobs chan<- *encBatch, slots chan struct{}, quit <-chan struct{}) error {
	seq := 0
	cur := &encBatch{}
	curBytes := 0
	send := func() error {
		if len(cur.docs) == 0 {
			return nil
		}
		cur.seq = seq
		select {
		case slots <- struct{}{}:
		case <-quit:
			return errors.New("aborted")
		}
		select {
		case jobs <- cur:
		case <-quit:
			return errors.New("aborted")
		}
		seq++
		cur, curBytes = &encBatch{}, 0
		return nil
	}
	var before, reported int64 // bytes of the files already read; last progress reported
	progress := func(done int64) {
		if opt.Progress != nil && done > reported && (done-reported >= 1<<20 || done == total) {
			opt.Progress(done, total)
			reported = done
		}
	}
	for fi, f := range files {
		r, err := OpenInput(f.Path, in)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		for {
			d, err := r.Next()
			if err == io.EOF {
				break
			}
			var be *BadRecordError
			if errors.As(err, &be) && opt.SkipBad {
				bad[fi]++
				continue
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("prepare: %w", err)
			}
			if d.Replaced {
				replaced[fi]++
			}
			if d.Text == "" {
				empty[fi]++
				continue
			}
			cur.docs = append(cur.docs, encDoc{input: fi, val: IsValidation(f.Key, d.Index, opt.ValFraction), bytes: len(d.Text), text: d.Text})
			curBytes += len(d.Text)
			if curBytes >= batchBytes || len(cur.docs) >= batchDocs {
				if err := send(); err != nil {
					r.Close()
					return err
				}
				progress(before + r.Offset())
			}
		}
		r.Close()
		before += f.Size
		progress(before)
	}
	return send()
}

// humanBytes formats a byte count for messages: "812 B", "3.4 MB", "1.20 GB" (powers of 1024).
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
}
