// Package inputfile is the one way smallinit opens a file it reads: it refuses anything that is not a regular
// file (a device such as /dev/zero, a FIFO, a socket, a directory), also behind a symlink, before reading a
// byte and without blocking, and it caps a file's size by what its format can sanely be.
//
// Every reader of outside input calls Open or ReadFile with the cap of its format (the constants below), so a
// hostile path gets an error naming the file and what it is instead of an out-of-memory death or a hang:
//
//	b, err := inputfile.ReadFile(path, inputfile.MaxConfig) // config.json, tokenizer.json, TOML, ...
//	f, err := inputfile.Open(path, inputfile.NoLimit)       // streamed formats: check the kind, not the size
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Size caps of the formats smallinit reads whole. Each is far above what a real file of its kind holds (a
// Llama-3 tokenizer.json is 9 MB, a config.json a few KB) and far below what would exhaust memory.
const (
	// MaxConfig caps config.json, run configs, grids, plans, init.json, state.json and other small JSON or TOML.
	MaxConfig int64 = 16 << 20
	// MaxTokenizer caps tokenizer.json (the largest public ones, with 256k-entry vocabularies, are ~35 MB).
	MaxTokenizer int64 = 256 << 20
	// MaxTable caps result tables and run records read whole (sweep results, fit tables, summaries, claims).
	MaxTable int64 = 1 << 30
	// NoLimit leaves the size unchecked, for formats that are streamed or validated against their own header
	// (safetensors, .tok, corpora, JSON-lines task files).
	NoLimit int64 = -1
)

// ErrNotRegular is wrapped by the error for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file over its format's cap.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading after checking that it names a regular file of at most limit bytes (limit < 0:
// any size). The path is stat'ed before it is opened, so a FIFO is never opened (an open of a FIFO blocks until
// a writer appears), and the opened file is stat'ed again, so a path swapped in between is caught. Errors name
// the path and what it is.
func Open(path string, limit int64) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err // *fs.PathError already names the path
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	f, err := openNonblocking(path)
	if err != nil {
		return nil, err
	}
	st2, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !os.SameFile(st, st2) {
		f.Close()
		return nil, fmt.Errorf("%s: changed while it was opened", path)
	}
	if err := check(path, st2, limit); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads the whole regular file at path, of at most limit bytes (limit < 0: any size). A file that
// grows past limit while it is read is refused too.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if limit >= 0 && int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: grew past %s while it was read: %w", path, Bytes(limit), ErrTooLarge)
	}
	return b, nil
}

// Check reports whether st, the result of os.Stat(path), is a regular file of at most limit bytes; readers that
// stat a path themselves (to list a directory, say) use it for the same message.
func Check(path string, st fs.FileInfo, limit int64) error { return check(path, st, limit) }

func check(path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: is %s, %w", path, Kind(st.Mode()), ErrNotRegular)
	}
	if limit >= 0 && st.Size() > limit {
		return fmt.Errorf("%s: %s, more than the %s such a file can sanely be: %w", path, Bytes(st.Size()), Bytes(limit), ErrTooLarge)
	}
	return nil
}

// Kind names what a non-regular file is, for error messages.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	case m.IsRegular():
		return "a regular file"
	}
	return fmt.Sprintf("a file of mode %v", m)
}

// Bytes formats a byte count for messages: 16 MiB, 3.2 GiB, 512 B.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}

// OpenAppend opens path for appending, creating it (mode 0644) if it is not there: the way a run appends to its
// logs and records (metrics.jsonl, train.log, results.jsonl). Like Open it refuses anything but a regular file
// without blocking: the open is non-blocking, so a FIFO without a reader fails at once instead of waiting for
// one (where a stop signal could not reach it), and a FIFO, device or socket that does open is refused by the
// check of the opened file.
func OpenAppend(path string) (*os.File, error) {
	f, err := openAppendNonblocking(path)
	if err != nil {
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
			return nil, check(path, st, NoLimit)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = check(path, st, NoLimit)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
