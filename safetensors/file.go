package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"unsafe"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// File is an open safetensors file whose header has been read and fully
// validated. Tensor data is not loaded: each Read call fetches one tensor with
// ReadAt, so multi-gigabyte checkpoints cost only the memory of the tensors
// actually read. The Read methods are safe for concurrent use; Close must not
// run concurrently with them.
type File struct {
	path      string
	fh        *os.File
	dataStart int64 // file offset of the byte buffer (8 + header length)
	meta      map[string]string
	tensors   []TensorInfo // sorted by Begin
	index     map[string]int
}

// Open opens the safetensors file at path and validates its header: length
// within the file and MaxHeaderLen, UTF-8 JSON object with no repeated keys,
// string-valued __metadata__, known dtypes, non-negative shapes whose byte
// size matches data_offsets, and tensors tiling the byte buffer exactly with
// no holes or overlaps. It reads only the 8-byte length prefix and the header,
// never tensor data, so a header claiming huge tensors is refused before any
// allocation. Every error names path.
func Open(path string) (*File, error) {
	fh, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	f, err := newFile(path, fh)
	if err != nil {
		fh.Close()
		return nil, err
	}
	return f, nil
}

// newFile validates the already-open fh; path is used for errors and Path.
func newFile(path string, fh *os.File) (*File, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("safetensors %s: is a directory, not a file", path)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors %s: not a regular file (mode %v)", path, st.Mode())
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("safetensors %s: file is %d bytes, too short for the 8-byte header length", path, size)
	}
	var lenBuf [8]byte
	if _, err := fh.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors %s: reading header length: %w", path, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderLen {
		return nil, fmt.Errorf("safetensors %s: header length %d exceeds the %d-byte limit", path, n, MaxHeaderLen)
	}
	if n > uint64(size-8) {
		return nil, fmt.Errorf("safetensors %s: header length %d exceeds the %d bytes after the length prefix", path, n, size-8)
	}
	if n == 0 {
		return nil, fmt.Errorf("safetensors %s: header is empty", path)
	}
	hdr := make([]byte, n)
	if _, err := fh.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("safetensors %s: reading %d-byte header: %w", path, n, err)
	}
	dataStart := 8 + int64(n)
	tensors, meta, err := parseHeader(path, hdr, size-dataStart)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(tensors))
	for i, t := range tensors {
		index[t.Name] = i
	}
	return &File{path: path, fh: fh, dataStart: dataStart, meta: meta, tensors: tensors, index: index}, nil
}

// Path returns the path the file was opened with, for messages.
func (f *File) Path() string { return f.path }

// Metadata returns a copy of the header's __metadata__ map (nil if the file
// has none).
func (f *File) Metadata() map[string]string { return maps.Clone(f.meta) }

// Tensors returns the tensors in file order (sorted by Begin). The result is
// a copy the caller may modify.
func (f *File) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(f.tensors))
	for i, t := range f.tensors {
		t.Shape = slices.Clone(t.Shape)
		out[i] = t
	}
	return out
}

// Info returns the description of tensor name and whether it exists.
func (f *File) Info(name string) (TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	t := f.tensors[i]
	t.Shape = slices.Clone(t.Shape)
	return t, true
}

// Close closes the underlying file. Read methods fail afterwards.
func (f *File) Close() error {
	if err := f.fh.Close(); err != nil {
		return fmt.Errorf("safetensors %s: %w", f.path, err)
	}
	return nil
}

// lookup finds tensor name and checks that the destination holds exactly its
// element count.
func (f *File) lookup(name string, dstLen int) (TensorInfo, error) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	t := f.tensors[i]
	if n := t.NumElements(); n != dstLen {
		return t, fmt.Errorf("safetensors %s: tensor %q: has %d elements (shape %v) but destination has %d",
			f.path, name, n, t.Shape, dstLen)
	}
	return t, nil
}

func (f *File) unsupported(t TensorInfo, to string) error {
	return fmt.Errorf("safetensors %s: tensor %q: cannot read dtype %s as %s", f.path, t.Name, t.DType, to)
}

// readAt fills p from byte off of tensor t's data, reporting short reads (the
// file may have been truncated since Open) with the file and tensor names.
func (f *File) readAt(t TensorInfo, p []byte, off int64) error {
	n, err := f.fh.ReadAt(p, f.dataStart+t.Begin+off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("safetensors %s: tensor %q: short read (%d of %d bytes at data offset %d): %w",
		f.path, t.Name, n, len(p), t.Begin+off, err)
}

// chunkBytes bounds the scratch buffer used for converting reads, so reading
// a huge F16 tensor needs no second full-size buffer.
const chunkBytes = 1 << 20

// forChunks reads tensor t's bytes in pieces that hold whole elements of
// elemSize bytes and calls fn with each piece and the index of its first
// element.
func (f *File) forChunks(t TensorInfo, elemSize int, fn func(src []byte, first int) error) error {
	total := t.End - t.Begin
	bufLen := min(total, int64(chunkBytes/elemSize*elemSize))
	buf := make([]byte, bufLen)
	for off := int64(0); off < total; {
		n := min(bufLen, total-off)
		if err := f.readAt(t, buf[:n], off); err != nil {
			return err
		}
		if err := fn(buf[:n], int(off/int64(elemSize))); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// bytesOf views a slice of fixed-size numbers as its underlying bytes.
func bytesOf[E float32 | float64 | int32](s []E) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// ReadFloat32 reads tensor name into dst, whose length must equal the
// tensor's element count. F32 is read straight into dst's memory on
// little-endian hosts; F16, BF16, F64, F8_E4M3 and F8_E5M2 are converted (F64
// rounds to nearest even, overflowing to ±Inf; the others are exact). Other
// dtypes are refused. Errors name the file and tensor.
func (f *File) ReadFloat32(name string, dst []float32) error {
	t, err := f.lookup(name, len(dst))
	if err != nil {
		return err
	}
	switch t.DType {
	case F32:
		if littleEndian {
			return f.readAt(t, bytesOf(dst), 0)
		}
		return f.forChunks(t, 4, func(src []byte, first int) error {
			for i := range len(src) / 4 {
				dst[first+i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
			return nil
		})
	case F64:
		return f.forChunks(t, 8, func(src []byte, first int) error {
			for i := range len(src) / 8 {
				dst[first+i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
			}
			return nil
		})
	case F16, BF16, F8E4M3, F8E5M2:
		size := smallFloatSize(t.DType)
		return f.forChunks(t, size, func(src []byte, first int) error {
			decodeSmallFloats(t.DType, dst[first:first+len(src)/size], src)
			return nil
		})
	}
	return f.unsupported(t, "float32")
}

// smallFloatSize returns the bytes per element of the 16- and 8-bit float
// dtypes that decodeSmallFloats handles, or 0.
func smallFloatSize(d DType) int {
	switch d {
	case F16, BF16:
		return 2
	case F8E4M3, F8E5M2:
		return 1
	}
	return 0
}

// f16Table maps every binary16 bit pattern to its float32 value; a table
// lookup is several times faster than decoding subnormals bit by bit.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = f16ToF32(uint16(i))
	}
	return &t
})

// decodeSmallFloats converts little-endian elements of dtype d from src into
// dst (len(dst) elements), exactly.
func decodeSmallFloats(d DType, dst []float32, src []byte) {
	switch d {
	case F16:
		tab := f16Table()
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = tab[uint16(src[2*i])|uint16(src[2*i+1])<<8]
		}
	case BF16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(src[2*i])<<16 | uint32(src[2*i+1])<<24)
		}
	case F8E4M3:
		for i, b := range src[:len(dst)] {
			dst[i] = f8e4m3ToF32(b)
		}
	case F8E5M2:
		tab := f16Table()
		for i, b := range src[:len(dst)] {
			dst[i] = tab[uint16(b)<<8]
		}
	}
}

// ReadFloat64 reads tensor name into dst, whose length must equal the
// tensor's element count. F64 is read directly; F32, F16, BF16, F8_E4M3 and
// F8_E5M2 are widened exactly. Other dtypes are refused.
func (f *File) ReadFloat64(name string, dst []float64) error {
	t, err := f.lookup(name, len(dst))
	if err != nil {
		return err
	}
	switch t.DType {
	case F64:
		if littleEndian {
			return f.readAt(t, bytesOf(dst), 0)
		}
		return f.forChunks(t, 8, func(src []byte, first int) error {
			for i := range len(src) / 8 {
				dst[first+i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
			}
			return nil
		})
	case F32:
		return f.forChunks(t, 4, func(src []byte, first int) error {
			for i := range len(src) / 4 {
				dst[first+i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
			}
			return nil
		})
	case F16, BF16, F8E4M3, F8E5M2:
		size := smallFloatSize(t.DType)
		var tmp []float32
		return f.forChunks(t, size, func(src []byte, first int) error {
			n := len(src) / size
			if cap(tmp) < n {
				tmp = make([]float32, n)
			}
			decodeSmallFloats(t.DType, tmp[:n], src)
			for i, v := range tmp[:n] {
				dst[first+i] = float64(v)
			}
			return nil
		})
	}
	return f.unsupported(t, "float64")
}

// ReadInt32 reads tensor name into dst, whose length must equal the tensor's
// element count. I32 is read directly; I64 is narrowed, failing on the first
// value outside the int32 range. Other dtypes are refused.
func (f *File) ReadInt32(name string, dst []int32) error {
	t, err := f.lookup(name, len(dst))
	if err != nil {
		return err
	}
	switch t.DType {
	case I32:
		if littleEndian {
			return f.readAt(t, bytesOf(dst), 0)
		}
		return f.forChunks(t, 4, func(src []byte, first int) error {
			for i := range len(src) / 4 {
				dst[first+i] = int32(binary.LittleEndian.Uint32(src[4*i:]))
			}
			return nil
		})
	case I64:
		return f.forChunks(t, 8, func(src []byte, first int) error {
			for i := range len(src) / 8 {
				v := int64(binary.LittleEndian.Uint64(src[8*i:]))
				if v < math.MinInt32 || v > math.MaxInt32 {
					return fmt.Errorf("safetensors %s: tensor %q: element %d = %d does not fit in int32",
						f.path, t.Name, first+i, v)
				}
				dst[first+i] = int32(v)
			}
			return nil
		})
	}
	return f.unsupported(t, "int32")
}

// ReadBytes copies tensor name's raw little-endian bytes into dst, whose
// length must equal End-Begin. It works for every dtype, for callers that
// decode types the typed readers do not handle.
func (f *File) ReadBytes(name string, dst []byte) error {
	i, ok := f.index[name]
	if !ok {
		return fmt.Errorf("safetensors %s: no tensor %q", f.path, name)
	}
	t := f.tensors[i]
	if int64(len(dst)) != t.End-t.Begin {
		return fmt.Errorf("safetensors %s: tensor %q: has %d bytes but destination has %d",
			f.path, name, t.End-t.Begin, len(dst))
	}
	return f.readAt(t, dst, 0)
}
