package data

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadArchive feeds arbitrary bytes, as a .tgz, to the two passes of PrepareArchives over an archive
// (scanArchive, readArchive): each returns documents or an error naming the archive, and never panics. The
// seeds are the fixture archives. Run with: go test -run='^$' -fuzz='^FuzzReadArchive$' -fuzztime=60s ./data/
func FuzzReadArchive(f *testing.F) {
	entries, err := os.ReadDir(archiveFixtureDir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(archiveFixtureDir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "in.tgz")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ps, l, _, err := scanArchive(p, true)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the archive", err)
			}
			return
		}
		err = readArchive(p, l, &ps, nil, 2, func(memberRule, string, []rawDoc) {}, func(int64) {})
		if err != nil && !strings.Contains(err.Error(), p) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error %q does not name the archive", err)
		}
	})
}
