package data

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TokWriter writes a token file (.tok, see ReadTokens for the format) as a stream, so that a corpus larger than
// memory can be tokenized: ids are appended with Write and never held in memory. The file is written beside its
// final path under a temporary name, with a placeholder count in the header; Close patches the count, syncs the
// file and renames it into place. So the final path holds either a complete token file or whatever it held
// before, never a partial one.
//
// The width of the ids is fixed when the writer is created, from the vocabulary size: 2 bytes when every id
// of the vocabulary fits in uint16 (vocab ≤ 65536), else 4. A TokWriter is not safe for concurrent use.
type TokWriter struct {
	path, tmp string
	f         *os.File
	w         *bufio.Writer
	vocab     int
	width     int
	n         uint64
	scratch   []byte
	err       error // the first write error; sticky
	finished  bool  // Finish has run: the file is complete under its temporary name
	done      bool  // Close or Abort has run
}

// NewTokWriter creates a streaming token writer for path, for ids in [0, vocab). It creates the temporary file
// at once, so an unwritable directory is reported here rather than after the work of producing the tokens.
func NewTokWriter(path string, vocab int) (*TokWriter, error) {
	if vocab < 1 {
		return nil, fmt.Errorf("write tokens %s: vocabulary size %d: must be positive", path, vocab)
	}
	width := 2
	if vocab > 1<<16 {
		width = 4
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("write tokens %s: %w", path, err)
	}
	tw := &TokWriter{path: path, tmp: f.Name(), f: f, w: bufio.NewWriterSize(f, 1<<20), vocab: vocab, width: width}
	var hdr [tokHeaderSize]byte
	copy(hdr[:], TokMagic)
	binary.LittleEndian.PutUint32(hdr[8:], TokVersion)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(width))
	// hdr[16:24], the count, stays 0 until Close patches it.
	if _, err := tw.w.Write(hdr[:]); err != nil {
		tw.Abort()
		return nil, fmt.Errorf("write tokens %s: %w", path, err)
	}
	return tw, nil
}

// Width returns the bytes per token of the file: 2 or 4.
func (tw *TokWriter) Width() int { return tw.width }

// Count returns the number of tokens written so far.
func (tw *TokWriter) Count() int64 { return int64(tw.n) }

// Write appends ids to the file. An id outside [0, vocab) is an error (it would make an unreadable or
// misleading file); after any error every later call fails with the same error.
func (tw *TokWriter) Write(ids []int32) error {
	if tw.done {
		return fmt.Errorf("write tokens %s: writer is closed", tw.path)
	}
	if tw.err != nil {
		return tw.err
	}
	if tw.finished {
		return fmt.Errorf("write tokens %s: writer is finished", tw.path)
	}
	need := len(ids) * tw.width
	if cap(tw.scratch) < need {
		tw.scratch = make([]byte, need)
	}
	b := tw.scratch[:need]
	for i, id := range ids {
		if id < 0 || int(id) >= tw.vocab {
			tw.err = fmt.Errorf("write tokens %s: token %d has id %d, outside the vocabulary [0, %d)", tw.path, tw.n+uint64(i), id, tw.vocab)
			return tw.err
		}
		if tw.width == 2 {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(id))
		} else {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
		}
	}
	if _, err := tw.w.Write(b); err != nil {
		tw.err = fmt.Errorf("write tokens %s: %w", tw.path, err)
		return tw.err
	}
	tw.n += uint64(len(ids))
	return nil
}

// Finish writes the file out under its temporary name: it flushes the buffer, writes the token count into
// the header and syncs the file, so that Close has only the rename left, which does not fail for lack of
// space. Writing after Finish is an error; Finish is optional (Close calls it) and may be called once.
func (tw *TokWriter) Finish() error {
	if tw.done {
		return fmt.Errorf("write tokens %s: writer is already closed", tw.path)
	}
	if tw.finished || tw.err != nil {
		return tw.err
	}
	tw.finished = true
	if err := tw.w.Flush(); err != nil {
		tw.err = fmt.Errorf("write tokens %s: %w", tw.path, err)
		return tw.err
	}
	var cnt [8]byte
	binary.LittleEndian.PutUint64(cnt[:], tw.n)
	if _, err := tw.f.WriteAt(cnt[:], 16); err != nil {
		tw.err = fmt.Errorf("write tokens %s: header: %w", tw.path, err)
		return tw.err
	}
	if err := errors.Join(tw.f.Chmod(0o644), tw.f.Sync()); err != nil {
		tw.err = fmt.Errorf("write tokens %s: %w", tw.path, err)
	}
	return tw.err
}

// Staged is the temporary path the file is written at until Close renames it (to hash it after Finish).
func (tw *TokWriter) Staged() string { return tw.tmp }

// Close finishes the file (see Finish) and renames it over the final path. On any error the temporary file is
// removed and the final path is untouched. Calling Close again, or after Abort, is an error.
func (tw *TokWriter) Close() error {
	if tw.done {
		return fmt.Errorf("write tokens %s: writer is already closed", tw.path)
	}
	err := tw.Finish()
	if cerr := tw.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write tokens %s: %w", tw.path, cerr)
	}
	if err == nil {
		if rerr := os.Rename(tw.tmp, tw.path); rerr != nil {
			err = fmt.Errorf("write tokens %s: %w", tw.path, rerr)
		}
	}
	tw.done = true
	if err != nil {
		os.Remove(tw.tmp)
	}
	return err
}

// Abort discards the file: it closes and removes the temporary file and leaves the final path untouched. It is
// a no-op after Close or Abort, so it can be deferred unconditionally.
func (tw *TokWriter) Abort() {
	if tw.done {
		return
	}
	tw.done = true
	tw.f.Close()
	os.Remove(tw.tmp)
}
