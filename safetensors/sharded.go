package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/smallinit/smallinit/internal/inputfile"
)

// Reader is what model loaders use, so they need not care whether a
// checkpoint is one file (*File) or a sharded directory (*Sharded).
type Reader interface {
	// Path is the file or index path, for messages.
	Path() string
	// Metadata returns a copy of the checkpoint's metadata.
	Metadata() map[string]string
	// Tensors lists every tensor in a deterministic order.
	Tensors() []TensorInfo
	// Info describes one tensor.
	Info(name string) (TensorInfo, bool)
	// ReadFloat32, ReadFloat64, ReadInt32 and ReadBytes behave as the File
	// methods of the same names.
	ReadFloat32(name string, dst []float32) error
	ReadFloat64(name string, dst []float64) error
	ReadInt32(name string, dst []int32) error
	ReadBytes(name string, dst []byte) error
	// Close releases all open files.
	Close() error
}

var (
	_ Reader = (*File)(nil)
	_ Reader = (*Sharded)(nil)
)

// Standard file names of a Hugging Face checkpoint directory.
const (
	SingleFileName = "model.safetensors"
	IndexFileName  = "model.safetensors.index.json"
)

// maxIndexLen bounds the index JSON read into memory.
const maxIndexLen = MaxHeaderLen

// Sharded is a checkpoint split over several safetensors files, described by
// an index file (model.safetensors.index.json) whose weight_map names the
// shard holding each tensor. Every shard is opened and validated up front.
// Only tensors listed in the weight_map are visible.
type Sharded struct {
	path    string // index file
	meta    map[string]string
	shards  []*File // sorted by file name
	owner   map[string]*File
	tensors []TensorInfo
}

// OpenSharded opens the index file model.safetensors.index.json in dir and all
// shards it names. It refuses shard names that are not local to dir (absolute
// or containing ".." — symlinks inside dir are followed, since Hugging Face
// cache snapshots are made of them), missing or invalid shards, and tensors
// the weight_map assigns to a shard that lacks them. Index metadata values
// that are not strings (e.g. "total_size": 123) are kept as their JSON text.
func OpenSharded(dir string) (*Sharded, error) {
	return openIndex(filepath.Join(dir, IndexFileName))
}

func openIndex(path string) (*Sharded, error) {
	dir := filepath.Dir(path)
	fh, err := inputfile.Open(path, inputfile.NoLimit)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors %s: index is not a regular file", path)
	}
	if st.Size() > maxIndexLen {
		return nil, fmt.Errorf("safetensors %s: index is %d bytes, over the %d-byte limit", path, st.Size(), maxIndexLen)
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxIndexLen+1))
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	if len(data) > maxIndexLen {
		return nil, fmt.Errorf("safetensors %s: index is over the %d-byte limit", path, maxIndexLen)
	}
	meta, weightMap, err := parseIndex(data)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: index: %w", path, err)
	}

	s := &Sharded{path: path, meta: meta, owner: make(map[string]*File, len(weightMap))}
	byShard := make(map[string]*File)
	for _, shard := range slices.Sorted(maps.Values(weightMap)) {
		if _, ok := byShard[shard]; ok {
			continue
		}
		if !filepath.IsLocal(shard) || strings.Contains(shard, `\`) {
			s.Close()
			return nil, fmt.Errorf("safetensors %s: index: shard path %q is not inside %s", path, truncate(shard), dir)
		}
		f, err := Open(filepath.Join(dir, shard))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("safetensors %s: shard %q: %w", path, truncate(shard), err)
		}
		byShard[shard] = f
		s.shards = append(s.shards, f)
	}
	for name, shard := range weightMap {
		f := byShard[shard]
		if _, ok := f.index[name]; !ok {
			s.Close()
			return nil, fmt.Errorf("safetensors %s: index lists tensor %q in shard %q, which does not contain it", path, truncate(name), truncate(shard))
		}
		s.owner[name] = f
	}
	for _, f := range s.shards {
		for _, t := range f.tensors {
			if s.owner[t.Name] == f {
				t.Shape = slices.Clone(t.Shape)
				s.tensors = append(s.tensors, t)
			}
		}
	}
	return s, nil
}

// parseIndex decodes the index JSON, refusing duplicate keys. weight_map must
// be a non-empty object of strings.
func parseIndex(data []byte) (map[string]string, map[string]string, error) {
	if !utf8.Valid(data) {
		return nil, nil, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var meta, weightMap map[string]string
	err := walkObject(dec, func(key string) error {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return jsonError(err)
		}
		switch key {
		case "metadata":
			m, err := parseLooseStringMap(raw)
			if err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
			meta = m
		case "weight_map":
			m, err := parseStringMap(raw)
			if err != nil {
				return fmt.Errorf("weight_map: %w", err)
			}
			weightMap = m
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if rest := data[dec.InputOffset():]; len(bytes.TrimSpace(rest)) != 0 {
		return nil, nil, fmt.Errorf("unexpected data after the JSON object at byte %d", dec.InputOffset())
	}
	if len(weightMap) == 0 {
		return nil, nil, errors.New("weight_map is missing or empty")
	}
	return meta, weightMap, nil
}

// parseLooseStringMap decodes an object (or null), keeping string values as
// they are and any other value as its compact JSON text.
func parseLooseStringMap(raw []byte) (map[string]string, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	m := make(map[string]string)
	err := walkObject(dec, func(key string) error {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return jsonError(err)
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			m[key] = s
			return nil
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return jsonError(err)
		}
		m[key] = buf.String()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Path returns the index file path.
func (s *Sharded) Path() string { return s.path }

// Metadata returns a copy of the index's metadata.
func (s *Sharded) Metadata() map[string]string { return maps.Clone(s.meta) }

// Tensors returns the weight_map tensors ordered by shard file name, then by
// position in the shard. Begin and End are relative to the tensor's shard.
func (s *Sharded) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(s.tensors))
	for i, t := range s.tensors {
		t.Shape = slices.Clone(t.Shape)
		out[i] = t
	}
	return out
}

// Info describes tensor name (offsets relative to its shard).
func (s *Sharded) Info(name string) (TensorInfo, bool) {
	f, ok := s.owner[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Info(name)
}

// Shard returns the open shard holding tensor name, for callers that need the
// shard's path or metadata. The Sharded still owns it: do not close it.
func (s *Sharded) Shard(name string) (*File, bool) {
	f, ok := s.owner[name]
	return f, ok
}

func (s *Sharded) shard(name string) (*File, error) {
	f, ok := s.owner[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: no tensor %q", s.path, name)
	}
	return f, nil
}

// ReadFloat32 reads tensor name from its shard; see File.ReadFloat32.
func (s *Sharded) ReadFloat32(name string, dst []float32) error {
	f, err := s.shard(name)
	if err != nil {
		return err
	}
	return f.ReadFloat32(name, dst)
}

// ReadFloat64 reads tensor name from its shard; see File.ReadFloat64.
func (s *Sharded) ReadFloat64(name string, dst []float64) error {
	f, err := s.shard(name)
	if err != nil {
		return err
	}
	return f.ReadFloat64(name, dst)
}

// ReadInt32 reads tensor name from its shard; see File.ReadInt32.
func (s *Sharded) ReadInt32(name string, dst []int32) error {
	f, err := s.shard(name)
	if err != nil {
		return err
	}
	return f.ReadInt32(name, dst)
}

// ReadBytes reads tensor name's raw bytes from its shard; see File.ReadBytes.
func (s *Sharded) ReadBytes(name string, dst []byte) error {
	f, err := s.shard(name)
	if err != nil {
		return err
	}
	return f.ReadBytes(name, dst)
}

// Close closes every shard and returns all errors joined.
func (s *Sharded) Close() error {
	var errs []error
	for _, f := range s.shards {
		errs = append(errs, f.Close())
	}
	s.shards = nil
	return errors.Join(errs...)
}

// OpenModel opens a checkpoint: path may be a safetensors file, or a
// directory containing model.safetensors (preferred, as in transformers) or
// model.safetensors.index.json.
func OpenModel(path string) (Reader, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	// Each branch returns through a typed variable check so that a failed
	// open yields a nil interface, not an interface holding a nil pointer.
	file := path
	if st.IsDir() {
		file = filepath.Join(path, SingleFileName)
		if _, err := os.Stat(file); err != nil {
			index := filepath.Join(path, IndexFileName)
			if _, err := os.Stat(index); err != nil {
				return nil, fmt.Errorf("safetensors %s: directory has neither %s nor %s", path, SingleFileName, IndexFileName)
			}
			s, err := openIndex(index)
			if err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	f, err := Open(file)
	if err != nil {
		return nil, err
	}
	return f, nil
}
