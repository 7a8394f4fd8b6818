package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// The Parquet library believes the sizes a file claims: it allocates the footer length, every list length of
// the Thrift metadata and every page size the file states before checking them against the bytes that are
// there, so a corrupt file of a few hundred bytes made it allocate hundreds of megabytes (fuzzing found an
// 8-byte file allocating 800 MB, and a 418-byte one 387 MB). The checks below run first and refuse such files
// as corrupt, so that reading a Parquet file allocates at most a bound proportional to its size:
//
//   - the frame: "PAR1" at both ends and a footer length that fits in the file;
//   - the footer and every page header of the text column are well-formed Thrift (compact protocol) whose
//     lists and byte strings are no longer than the bytes left to hold them;
//   - each page of the text column lies inside its column chunk, which lies inside the file, and claims at most
//     maxPageExpansion times its stored size (plus 64 kB) once uncompressed, and at most 8 values per
//     uncompressed byte (plus 64 Ki).

// maxPageExpansion bounds a page's uncompressed size relative to its compressed size. Real text compresses
// by less than 20× with any codec Parquet uses.
const maxPageExpansion = 1024

// errThriftShort means a Thrift value runs past the end of its buffer.
var errThriftShort = errors.New("truncated Thrift data")

// checkParquetFrame checks a Parquet file's frame: the magic "PAR1" at both ends and a footer length that fits
// in the file. It returns the footer length.
func checkParquetFrame(f io.ReaderAt, size int64) (int64, error) {
	const magic = "PAR1"
	if size < 12 {
		return 0, fmt.Errorf("not a Parquet file: %d bytes, too short for the header and footer", size)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return 0, err
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return 0, err
	}
	if string(head[:]) != magic || string(tail[4:]) != magic {
		if string(head[:]) == "PARE" || string(tail[4:]) == "PARE" {
			return 0, errors.New("encrypted Parquet files are not supported")
		}
		return 0, fmt.Errorf("not a Parquet file (magic %q and %q, want %q)", head[:], tail[4:], magic)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return 0, fmt.Errorf("corrupt Parquet file: footer of %d bytes in a %d-byte file", n, size)
	}
	return n, nil
}

// checkParquetFooter checks that the footer of a file whose frame checkParquetFrame accepted is one Thrift
// struct whose lengths fit in it.
func checkParquetFooter(f io.ReaderAt, size, footerLen int64) error {
	b := make([]byte, footerLen)
	if _, err := f.ReadAt(b, size-8-footerLen); err != nil {
		return err
	}
	n, err := thriftStructLen(b)
	if err != nil {
		return fmt.Errorf("corrupt Parquet footer: %w", err)
	}
	if n != len(b) {
		return fmt.Errorf("corrupt Parquet footer: %d bytes after the metadata", len(b)-n)
	}
	return nil
}

// checkParquetPages walks the page headers of column col in every row group and checks the sizes they claim
// (see the top of this file). dataEnd is where the footer begins.
func checkParquetPages(f io.ReaderAt, md *format.FileMetaData, col int, dataEnd int64) error {
	buf := make([]byte, 256)
	for g, rg := range md.RowGroups {
		if col >= len(rg.Columns) {
			return fmt.Errorf("corrupt Parquet file: row group %d has %d columns", g, len(rg.Columns))
		}
		cm := rg.Columns[col].MetaData
		base := cm.DataPageOffset
		if cm.DictionaryPageOffset != 0 {
			base = cm.DictionaryPageOffset
		}
		if base < 4 || cm.TotalCompressedSize < 0 || cm.TotalCompressedSize > dataEnd-base {
			return fmt.Errorf("corrupt Parquet file: row group %d: column chunk [%d, +%d) outside the data [4, %d)", g, base, cm.TotalCompressedSize, dataEnd)
		}
		end := base + cm.TotalCompressedSize
		for pos := base; pos < end; {
			rest := end - pos
			n, err := f.ReadAt(buf[:min(int64(len(buf)), rest)], pos)
			hl, herr := thriftStructLen(buf[:n])
			if herr == errThriftShort && int64(n) < rest && n == len(buf) {
				if len(buf) >= 1<<20 {
					return fmt.Errorf("corrupt Parquet file: row group %d: page header at %d is over 1 MB", g, pos)
				}
				buf = make([]byte, min(1<<20, 2*int64(len(buf))))
				continue // read again with the larger buffer
			}
			if herr != nil {
				if err != nil && err != io.EOF {
					return err
				}
				return fmt.Errorf("corrupt Parquet file: row group %d: page header at %d: %w", g, pos, herr)
			}
			var h format.PageHeader
			if err := thrift.Unmarshal(new(thrift.CompactProtocol), buf[:hl], &h); err != nil {
				return fmt.Errorf("corrupt Parquet file: row group %d: page header at %d: %w", g, pos, err)
			}
			if err := checkPageHeader(&h, rest-int64(hl)); err != nil {
				return fmt.Errorf("corrupt Parquet file: row group %d: page at %d: %w", g, pos, err)
			}
			pos += int64(hl) + int64(h.CompressedPageSize)
		}
	}
	return nil
}

// checkPageHeader checks the sizes of one page whose column chunk has room bytes after the header.
func checkPageHeader(h *format.PageHeader, room int64) error {
	c, u := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	switch {
	case c < 0 || c > room:
		return fmt.Errorf("%d bytes stored, %d left in the column chunk", c, room)
	case u < 0 || u > 64<<10+maxPageExpansion*c:
		return fmt.Errorf("%d bytes uncompressed from %d stored", u, c)
	}
	values := int64(0)
	if h.DataPageHeader.Valid {
		values = int64(h.DataPageHeader.V.NumValues)
	}
	if h.DictionaryPageHeader.Valid {
		values = max(values, int64(h.DictionaryPageHeader.V.NumValues))
	}
	if v2 := h.DataPageHeaderV2; v2.Valid {
		values = max(values, int64(v2.V.NumValues), int64(v2.V.NumRows), int64(v2.V.NumNulls))
		if l := int64(v2.V.DefinitionLevelsByteLength) + int64(v2.V.RepetitionLevelsByteLength); l < 0 || l > c || l > u {
			return fmt.Errorf("%d bytes of levels in a page of %d bytes", l, c)
		}
	}
	if values < 0 || values > 64<<10+8*u {
		return fmt.Errorf("%d values in %d uncompressed bytes", values, u)
	}
	return nil
}

// thriftStructLen returns the length of the Thrift compact-protocol struct at the start of b, checking that
// every list, set, map and byte string is no longer than the bytes left. It returns errThriftShort when b ends
// inside the struct.
func thriftStructLen(b []byte) (int, error) {
	r := thriftWalker{b: b}
	if err := r.structure(0); err != nil {
		return 0, err
	}
	return r.i, nil
}

// thriftWalker skips over compact-protocol values.
type thriftWalker struct {
	b []byte
	i int
}

func (r *thriftWalker) byte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errThriftShort
	}
	r.i++
	return r.b[r.i-1], nil
}

func (r *thriftWalker) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("Thrift varint too long")
}

// skip advances past n bytes, or fails if fewer are left.
func (r *thriftWalker) skip(n uint64) error {
	if n > uint64(len(r.b)-r.i) {
		return errThriftShort
	}
	r.i += int(n)
	return nil
}

// count reads a collection size and checks that at least min bytes per element are left.
func (r *thriftWalker) count(n uint64, per uint64) error {
	if n > uint64(len(r.b)-r.i)/per {
		return fmt.Errorf("Thrift collection of %d elements in %d bytes", n, len(r.b)-r.i)
	}
	return nil
}

func (r *thriftWalker) structure(depth int) error {
	if depth > 64 {
		return errors.New("Thrift structs nested too deep")
	}
	for {
		h, err := r.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil
		}
		if h>>4 == 0 { // a field id as zigzag varint follows
			if _, err := r.varint(); err != nil {
				return err
			}
		}
		if t := h & 0x0f; t != 1 && t != 2 { // booleans are in the field header
			if err := r.value(t, depth); err != nil {
				return err
			}
		}
	}
}

func (r *thriftWalker) value(t byte, depth int) error {
	switch t {
	case 1, 2, 3: // boolean (as a collection element), byte
		return r.skip(1)
	case 4, 5, 6: // i16, i32, i64
		_, err := r.varint()
		return err
	case 7: // double
		return r.skip(8)
	case 8: // binary
		n, err := r.varint()
		if err != nil {
			return err
		}
		return r.skip(n)
	case 9, 10: // list, set
		h, err := r.byte()
		if err != nil {
			return err
		}
		n := uint64(h >> 4)
		if n == 15 {
			if n, err = r.varint(); err != nil {
				return err
			}
		}
		if err := r.count(n, 1); err != nil {
			return err
		}
		for range n {
			if err := r.value(h&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 11: // map
		n, err := r.varint()
		if err != nil || n == 0 {
			return err
		}
		kv, err := r.byte()
		if err != nil {
			return err
		}
		if err := r.count(n, 2); err != nil {
			return err
		}
		for range n {
			if err := r.value(kv>>4, depth+1); err != nil {
				return err
			}
			if err := r.value(kv&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 12: // struct
		return r.structure(depth + 1)
	}
	return fmt.Errorf("Thrift type %d unknown", t)
}

// checkParquet runs every check on an open file before its text column is read.
func checkParquet(f io.ReaderAt, size, footerLen int64, pf *parquet.File, col int) error {
	return checkParquetPages(f, pf.Metadata(), col, size-8-footerLen)
}
