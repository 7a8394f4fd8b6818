package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Writer builds a safetensors file atomically. Tensors are declared with the
// Add methods and written, in Add order, by Close: the header must precede the
// data and depends on every tensor, so nothing touches the disk before Close.
// Close writes to a temporary file in the destination directory, fsyncs it and
// renames it over the destination, so a reader never sees a partial file and a
// failure leaves any existing file untouched.
//
// The Add methods keep references to the data slices (large tensors are not
// copied); the caller must not modify them until Close or Abort returns. A
// Writer is not safe for concurrent use.
type Writer struct {
	path    string
	meta    map[string]string
	entries []writeEntry
	names   map[string]struct{}
	size    int64 // bytes of tensor data declared so far
	err     error // first error from Create or an Add; Close returns it
	done    bool
}

// Source element types of a writeEntry.
const (
	srcF32 = iota
	srcF64
	srcI32
)

// writeEntry is one declared tensor: its stored dtype, shape and the source
// slice selected by src (the others are nil).
type writeEntry struct {
	name  string
	dtype DType
	shape []int
	src   int
	f32   []float32
	f64   []float64
	i32   []int32
}

func (e *writeEntry) nbytes() int64 {
	n := max(len(e.f32), len(e.f64), len(e.i32))
	return int64(n) * int64(e.dtype.Size())
}

// errClosed is returned by Writer methods after Close or Abort.
var errClosed = errors.New("writer already closed or aborted")

// testHookBeforeRename, when set by tests, runs after the temporary file is
// complete and before the rename; an error from it makes Close fail there.
var testHookBeforeRename func(tmp string) error

// Create returns a Writer that will write a safetensors file at path with the
// given metadata (copied; nil for none). It does not touch the file system, so
// it cannot fail; problems such as an unwritable directory or metadata that is
// not valid UTF-8 are reported by Close.
func Create(path string, metadata map[string]string) *Writer {
	w := &Writer{path: path, meta: maps.Clone(metadata), names: make(map[string]struct{})}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			w.err = w.errorf("metadata entry %q is not valid UTF-8", k)
			break
		}
	}
	return w
}

// errorf formats an error naming the destination; %w wraps as in fmt.Errorf.
func (w *Writer) errorf(format string, args ...any) error {
	return fmt.Errorf("safetensors %s: "+format, append([]any{w.path}, args...)...)
}

// add validates and records a tensor. Any failure is also remembered so that
// Close refuses to write a file missing a tensor the caller meant to add.
func (w *Writer) add(e writeEntry, n int) error {
	err := w.check(&e, n)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return err
	}
	e.shape = slices.Clone(e.shape)
	w.names[e.name] = struct{}{}
	w.entries = append(w.entries, e)
	w.size += e.nbytes()
	return nil
}

func (w *Writer) check(e *writeEntry, n int) error {
	if w.done {
		return w.errorf("tensor %q: %w", e.name, errClosed)
	}
	switch {
	case e.name == "":
		return w.errorf("tensor name is empty")
	case e.name == metadataKey:
		return w.errorf("tensor name %q is reserved for metadata", e.name)
	case !utf8.ValidString(e.name):
		return w.errorf("tensor name %q is not valid UTF-8", e.name)
	}
	if _, dup := w.names[e.name]; dup {
		return w.errorf("tensor %q added twice", e.name)
	}
	want, ok := checkedElements(e.shape)
	if !ok {
		return w.errorf("tensor %q: invalid shape %v", e.name, e.shape)
	}
	if want != int64(n) {
		return w.errorf("tensor %q: shape %v has %d elements but data has %d", e.name, e.shape, want, n)
	}
	return nil
}

// AddFloat32 declares tensor name, stored as F32. len(data) must equal the
// product of shape (1 for the scalar shape []).
func (w *Writer) AddFloat32(name string, shape []int, data []float32) error {
	return w.AddFloat32As(name, F32, shape, data)
}

// AddFloat32As declares tensor name stored as dtype, which must be F32, F16,
// BF16 (both rounded to nearest even; out-of-range values become ±Inf) or F64
// (exact). It lets the engine export half-precision checkpoints for other
// tools.
func (w *Writer) AddFloat32As(name string, dtype DType, shape []int, data []float32) error {
	switch dtype {
	case F32, F16, BF16, F64:
	default:
		err := w.errorf("tensor %q: cannot store float32 data as dtype %q", name, dtype)
		if w.err == nil {
			w.err = err
		}
		return err
	}
	return w.add(writeEntry{name: name, dtype: dtype, shape: shape, src: srcF32, f32: data}, len(data))
}

// AddInt32 declares tensor name, stored as I32.
func (w *Writer) AddInt32(name string, shape []int, data []int32) error {
	return w.add(writeEntry{name: name, dtype: I32, shape: shape, src: srcI32, i32: data}, len(data))
}

// AddFloat64 declares tensor name, stored as F64.
func (w *Writer) AddFloat64(name string, shape []int, data []float64) error {
	return w.add(writeEntry{name: name, dtype: F64, shape: shape, src: srcF64, f64: data}, len(data))
}

// Abort discards the writer. Nothing has been written before Close, so there
// is nothing on disk to remove and any existing file at the path is left
// alone. Abort after Close does nothing.
func (w *Writer) Abort() {
	w.done = true
	w.entries = nil
}

// header renders the header of the declared tensors (EncodeHeader).
func (w *Writer) header() ([]byte, error) {
	ts := make([]HeaderTensor, len(w.entries))
	for i, e := range w.entries {
		ts[i] = HeaderTensor{Name: e.name, DType: e.dtype, Shape: e.shape}
	}
	hdr, err := EncodeHeader(w.meta, ts)
	if err != nil {
		return nil, w.errorf("%w", err)
	}
	return hdr, nil
}

// HeaderTensor is one tensor of a header to encode: its name, stored dtype and shape.
type HeaderTensor struct {
	Name  string
	DType DType
	Shape []int
}

// EncodeHeader renders the start of a safetensors file, everything before the tensor data: the 8-byte
// little-endian header length, then the JSON header with metadata first (keys sorted; no __metadata__ entry
// when metadata is nil), then the tensors in order with consecutive data_offsets (elements × dtype size),
// padded with spaces to a multiple of 8 bytes so that the data starts aligned. It is the one rendering of a
// header: Writer writes it, and a caller that streams the tensor data itself (scale.Init's shards) writes it
// and then the tensors' bytes in the same order, which gives the file Writer would have written. A header over
// MaxHeaderLen, a dtype of no whole byte size or an invalid shape is refused.
func EncodeHeader(metadata map[string]string, tensors []HeaderTensor) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(make([]byte, 8)) // the length, filled in below
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	str := func(s string) {
		_ = enc.Encode(s) // cannot fail for a string
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteByte('{')
	if metadata != nil {
		str(metadataKey)
		buf.WriteString(":{")
		for i, k := range slices.Sorted(maps.Keys(metadata)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			str(k)
			buf.WriteByte(':')
			str(metadata[k])
		}
		buf.WriteByte('}')
	}
	var off int64
	for i, t := range tensors {
		n, ok := checkedElements(t.Shape)
		es := int64(t.DType.Size())
		if !ok || es == 0 {
			return nil, fmt.Errorf("tensor %q: cannot encode dtype %q shape %v", t.Name, t.DType, t.Shape)
		}
		if i > 0 || metadata != nil {
			buf.WriteByte(',')
		}
		str(t.Name)
		buf.WriteString(`:{"dtype":`)
		str(string(t.DType))
		buf.WriteString(`,"shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.Itoa(d))
		}
		end := off + n*es
		fmt.Fprintf(&buf, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	buf.WriteByte('}')
	for (buf.Len()-8)%8 != 0 {
		buf.WriteByte(' ')
	}
	n := buf.Len() - 8
	if n > MaxHeaderLen {
		return nil, fmt.Errorf("header would be %d bytes, over the %d-byte limit readers accept", n, MaxHeaderLen)
	}
	out := buf.Bytes()
	binary.LittleEndian.PutUint64(out, uint64(n))
	return out, nil
}

// Close writes the file: header and data to a temporary file next to the
// destination, fsync, rename over the destination, then a best-effort fsync of
// the directory. It returns the first error, including one from an earlier
// Create or Add, in which case nothing is written. On any failure the
// temporary file is removed and an existing destination is unchanged. The new
// file gets permissions 0666 minus the umask, like os.Create.
func (w *Writer) Close() error {
	if w.done {
		return w.errorf("%w", errClosed)
	}
	w.done = true
	defer func() { w.entries = nil }()
	if w.err != nil {
		return w.err
	}
	hdr, err := w.header()
	if err != nil {
		return err
	}
	dir, base := filepath.Split(w.path)
	if dir == "" {
		dir = "."
	}
	tmp, tmpPath, err := createTemp(dir, "."+base+".tmp-")
	if err != nil {
		return w.errorf("creating temporary file: %w", err)
	}
	fail := func(format string, args ...any) error {
		tmp.Close()
		os.Remove(tmpPath)
		return w.errorf(format, args...)
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	bw.Write(hdr)
	for i := range w.entries {
		if err := writeData(bw, &w.entries[i]); err != nil {
			return fail("writing tensor %q to %s: %w", w.entries[i].name, tmpPath, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fail("writing %s: %w", tmpPath, err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("syncing %s: %w", tmpPath, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpPath)
		return w.errorf("closing %s: %w", tmpPath, err)
	}
	if testHookBeforeRename != nil {
		if err := testHookBeforeRename(tmpPath); err != nil {
			os.Remove(tmpPath)
			return w.errorf("%w", err)
		}
	}
	if err := os.Rename(tmpPath, w.path); err != nil {
		os.Remove(tmpPath)
		return w.errorf("%w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems refuse to sync directories
		d.Close()
	}
	return nil
}

// createTemp creates a new file in dir with a random name starting with
// prefix, mode 0666 before umask (os.CreateTemp would force 0600, which is
// wrong for a checkpoint others may need to read).
func createTemp(dir, prefix string) (*os.File, string, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", errors.New("could not find an unused temporary file name")
}

// writeScratch is the conversion buffer size in elements.
const writeScratch = 1 << 16

// writeData writes one tensor's bytes in little-endian order, converting to
// the stored dtype in bounded chunks. F32 from float32 (and I32, F64 from
// their own types) is written straight from the slice's memory on
// little-endian hosts.
func writeData(w io.Writer, e *writeEntry) error {
	switch e.src {
	case srcI32:
		if littleEndian {
			_, err := w.Write(bytesOf(e.i32))
			return err
		}
		return convertChunks(w, len(e.i32), 4, func(dst []byte, i int) {
			binary.LittleEndian.PutUint32(dst, uint32(e.i32[i]))
		})
	case srcF64:
		if littleEndian {
			_, err := w.Write(bytesOf(e.f64))
			return err
		}
		return convertChunks(w, len(e.f64), 8, func(dst []byte, i int) {
			binary.LittleEndian.PutUint64(dst, math.Float64bits(e.f64[i]))
		})
	}
	src := e.f32
	switch e.dtype {
	case F32:
		if littleEndian {
			_, err := w.Write(bytesOf(src))
			return err
		}
		return convertChunks(w, len(src), 4, func(dst []byte, i int) {
			binary.LittleEndian.PutUint32(dst, math.Float32bits(src[i]))
		})
	case F16:
		return convertChunks(w, len(src), 2, func(dst []byte, i int) {
			binary.LittleEndian.PutUint16(dst, f32ToF16(src[i]))
		})
	case BF16:
		return convertChunks(w, len(src), 2, func(dst []byte, i int) {
			binary.LittleEndian.PutUint16(dst, F32ToBF16(src[i]))
		})
	case F64:
		return convertChunks(w, len(src), 8, func(dst []byte, i int) {
			binary.LittleEndian.PutUint64(dst, math.Float64bits(float64(src[i])))
		})
	}
	return fmt.Errorf("internal error: no encoder for %s", e.dtype)
}

// convertChunks writes n elements of size bytes each, produced by put, through
// a bounded scratch buffer.
func convertChunks(w io.Writer, n, size int, put func(dst []byte, i int)) error {
	buf := make([]byte, min(n, writeScratch)*size)
	for start := 0; start < n; start += writeScratch {
		end := min(start+writeScratch, n)
		b := buf[:(end-start)*size]
		for i := start; i < end; i++ {
			put(b[(i-start)*size:], i)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
