// Package filesum proves that a file is the one that was written: the SHA-256 of a file's bytes, and a
// directory's manifest (manifest.json, the sums of every other file in it) written last, like a commit marker,
// and verified before the directory is trusted.
//
// Cost: hashing streams the file once; SHA-256 runs at the speed measured in docs/performance.md ("Content
// hashes"), far below a training step's cost per checkpoint, and never on the training step itself.
package filesum

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// ManifestFile is the name of a directory's manifest.
const ManifestFile = "manifest.json"

// Manifest is manifest.json: the lowercase hex SHA-256 of every regular file of its directory but itself.
type Manifest struct {
	SHA256 map[string]string `json:"sha256"`
}

// ErrNoManifest is wrapped by Verify's error for a directory without a manifest (one written by a build
// before manifests were recorded): the caller decides whether to trust it, and says so.
var ErrNoManifest = errors.New("no " + ManifestFile)

// File is the lowercase hex SHA-256 of the regular file at path (a symlink, FIFO or directory is refused
// naming the path).
func File(path string) (string, error) {
	f, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return Reader(f, path)
}

// Reader is the lowercase hex SHA-256 of everything r yields; name is for the error.
func Reader(r io.Reader, name string) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Check compares the file at path with want, a sum recorded in record (named in the error): a mismatch names
// the file, both sums and the record.
func Check(path, want, record string) error {
	got, err := File(path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s: sha256 %s, %s records %s: the file changed after it was written", path, got, record, want)
	}
	return nil
}

// Write writes dir's manifest: the sums of its regular files (every entry must be one), atomically and last.
func Write(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	m := Manifest{SHA256: map[string]string{}}
	for _, e := range entries {
		if e.Name() == ManifestFile {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if !e.Type().IsRegular() {
			return fmt.Errorf("manifest of %s: %s is %s, not a file", dir, p, inputfile.Kind(e.Type()))
		}
		if m.SHA256[e.Name()], err = File(p); err != nil {
			return fmt.Errorf("manifest of %s: %w", dir, err)
		}
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return atomicfile.Write(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// Verify checks dir against its manifest: every file it lists has its sum, and the directory holds no other
// entry. A missing manifest is an error wrapping ErrNoManifest; every other error names the file.
func Verify(dir string) error {
	path := filepath.Join(dir, ManifestFile)
	b, err := inputfile.ReadFile(path, inputfile.MaxConfig)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", dir, ErrNoManifest)
	}
	if err != nil {
		return err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || len(m.SHA256) == 0 {
		return fmt.Errorf("%s: not a manifest (want {\"sha256\": {file: sum}}): %v", path, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var have []string
	for _, e := range entries {
		if e.Name() == ManifestFile {
			continue
		}
		if _, ok := m.SHA256[e.Name()]; !ok {
			return fmt.Errorf("%s: not in %s (added after it was written)", filepath.Join(dir, e.Name()), path)
		}
		have = append(have, e.Name())
	}
	names := make([]string, 0, len(m.SHA256))
	for n := range m.SHA256 {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !slices.Contains(have, n) {
			return fmt.Errorf("%s: missing, %s lists it", filepath.Join(dir, n), path)
		}
		if err := Check(filepath.Join(dir, n), m.SHA256[n], path); err != nil {
			return err
		}
	}
	return nil
}
