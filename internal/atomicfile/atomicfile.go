// Package atomicfile writes files so that a reader, or a crash, sees either the old file or the complete new
// one: data goes to a temporary file beside the target (".NAME.tmp…"), which is synced and renamed over it.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// File is a temporary file that becomes path on Commit.
type File struct {
	*os.File
	path string
}

// Create starts writing path. The file gets mode 0644 (os.CreateTemp's 0600 would make checkpoints and
// configs unreadable to other users).
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{File: f, path: path}, nil
}

// Commit syncs and closes the file and renames it over path; on any error the temporary file is removed and
// path is left as it was.
func (f *File) Commit() error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	return nil
}

// Abort discards the temporary file.
func (f *File) Abort() {
	f.Close()
	os.Remove(f.Name())
}

// Write writes data to path atomically.
func Write(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}
