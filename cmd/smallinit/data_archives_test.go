package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/smallinit/smallinit/data"
)

// archiveFixture is a fixture tarball of package data.
func archiveFixture(name string) string {
	return filepath.Join("..", "..", "data", "testdata", "archives", name)
}

// TestDataPrepareArchivesCommand parses `smallinit data prepare` on package tarballs with the mix flags and
// checks the printed stats (tokens per source and language, what was removed) and stats.json.
func TestDataPrepareArchivesCommand(t *testing.T) {
	var c struct {
		Data dataCmd `cmd:""`
	}
	parser, err := kong.New(&c, kong.Name("smallinit"), vars(), kong.Exit(func(code int) { t.Fatalf("kong exit %d", code) }))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "prepared")
	if _, err := parser.Parse([]string{"data", "prepare", "--in", archiveFixture("chinese-poetry.tgz"), "--in", archiveFixture("sotu.tgz"),
		"--in", archiveFixture("brown.tgz"), "--out", out, "--vocab", "300", "--min-share", "en=0.1", "--cap", "brown=1"}); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := c.Data.Prepare.run(context.Background(), &stdout, io.Discard, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package chinese-poetry@0.0.1-fixture", "chinese-poetry/quantangshi", "sotu", "language", "Chinese script: simplified",
		"removed: 1 duplicate documents"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	st, err := data.ReadStats(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Archives == nil || st.Archives.Mix.MinShare["en"] != 0.1 || st.Archives.Mix.Caps["brown"] != 1 || st.TrainByLang["zh"].Tokens == 0 {
		t.Errorf("stats.json: archives %+v, train by language %+v", st.Archives, st.TrainByLang)
	}
}

// TestDataPrepareArchivesFlags checks the refusals: archives mixed with files, file options with archives, and
// archive options without them.
func TestDataPrepareArchivesFlags(t *testing.T) {
	tgz := archiveFixture("sotu.tgz")
	for _, tc := range []struct {
		name string
		cmd  dataPrepareCmd
		want string
	}{
		{"archives and files", dataPrepareCmd{In: []string{tgz, "a.txt"}, TextColumn: "text", DocSep: "file"}, "not both"},
		{"file options", dataPrepareCmd{In: []string{tgz}, TextColumn: "body", DocSep: "line"}, "--text-column, --doc-sep: not for package archives"},
		{"archive options for files", dataPrepareCmd{In: []string{"a.txt"}, TextColumn: "text", DocSep: "file", Traditional: true}, "only for .tgz"},
		{"archive options for the embedded corpus", dataPrepareCmd{TextColumn: "text", DocSep: "file", ValFraction: 0.01, SkipUnknown: true}, "--skip-unknown"},
		{"a bad share", dataPrepareCmd{In: []string{tgz}, TextColumn: "text", DocSep: "file", MinShare: map[string]float64{"en": 1}}, "minimum share of en 1"},
	} {
		cmd := tc.cmd
		cmd.Out = filepath.Join(t.TempDir(), "out")
		err := cmd.run(context.Background(), io.Discard, io.Discard, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
