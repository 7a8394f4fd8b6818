package safetensors

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxHeaderLen is the largest JSON header Open accepts, in bytes. It matches
// the limit of the reference implementation and bounds the memory a hostile
// file can make the reader allocate before anything is validated.
const MaxHeaderLen = 100_000_000

// metadataKey is the reserved header key holding the string-to-string
// metadata map; it is not a tensor.
const metadataKey = "__metadata__"

// TensorInfo describes one tensor as declared in a header. It carries no data;
// use the File's Read methods to fetch the values.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int
	// Begin and End are the header's data_offsets: a half-open byte range
	// relative to the start of the byte buffer that follows the header.
	Begin, End int64
}

// NumElements returns the number of elements implied by Shape (1 for the
// scalar shape [], 0 if any dimension is 0). For a TensorInfo obtained from an
// opened File the product has been checked not to overflow.
func (t TensorInfo) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// headerError builds the error for a malformed header of the file at path.
func headerError(path, format string, args ...any) error {
	return fmt.Errorf("safetensors %s: header: %s", path, fmt.Sprintf(format, args...))
}

// parseHeader decodes and validates the JSON header hdr of the file at path
// whose byte buffer is bufLen bytes long. It returns the tensors sorted by
// data offset and the metadata map (nil if absent). Every tensor is checked:
// known dtype, non-negative shape whose element count does not overflow,
// offsets inside the buffer and consistent with shape and dtype; together the
// tensors must tile the buffer exactly. Duplicate keys anywhere that matters
// (tensor names, tensor fields, metadata keys) are refused.
func parseHeader(path string, hdr []byte, bufLen int64) ([]TensorInfo, map[string]string, error) {
	if !utf8.Valid(hdr) {
		return nil, nil, headerError(path, "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	var (
		tensors []TensorInfo
		meta    map[string]string
	)
	err := walkObject(dec, func(key string) error {
		if key == metadataKey {
			m, err := parseMetadata(dec)
			if err != nil {
				return fmt.Errorf("%s: %w", metadataKey, err)
			}
			meta = m
			return nil
		}
		t, err := parseTensorInfo(dec, key, bufLen)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", truncate(key), err)
		}
		tensors = append(tensors, t)
		return nil
	})
	if err != nil {
		return nil, nil, headerError(path, "%v", err)
	}
	// Only whitespace (the reference writer pads with spaces) may follow.
	if rest := hdr[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, nil, headerError(path, "unexpected data after the JSON object at byte %d", dec.InputOffset())
	}

	slices.SortStableFunc(tensors, func(a, b TensorInfo) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End))
	})
	var cur int64
	for i, t := range tensors {
		if t.Begin > cur {
			return nil, nil, headerError(path, "hole in the byte buffer: bytes [%d,%d) belong to no tensor (next is %q at [%d,%d])",
				cur, t.Begin, truncate(t.Name), t.Begin, t.End)
		}
		if t.Begin < cur {
			return nil, nil, headerError(path, "tensor %q data_offsets [%d,%d] overlap tensor %q, which ends at %d",
				truncate(t.Name), t.Begin, t.End, truncate(tensors[i-1].Name), cur)
		}
		cur = t.End
	}
	if cur != bufLen {
		return nil, nil, headerError(path, "byte buffer is %d bytes but tensors cover only the first %d", bufLen, cur)
	}
	return tensors, meta, nil
}

// walkObject consumes one JSON object from dec, calling fn for each key; fn
// must consume exactly the key's value. Repeated keys are an error, which is
// why objects are walked token by token instead of unmarshaled into a map.
func walkObject(dec *json.Decoder, fn func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("expected a JSON object, found %s", describeToken(tok))
	}
	seen := make(map[string]struct{})
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("expected an object key, found %s", describeToken(tok))
		}
		if _, dup := seen[key]; dup {
			return fmt.Errorf("duplicate key %q", truncate(key))
		}
		seen[key] = struct{}{}
		if err := fn(key); err != nil {
			return err
		}
	}
	tok, err = dec.Token()
	if err != nil {
		return jsonError(err)
	}
	if tok != json.Delim('}') {
		return fmt.Errorf("expected end of object, found %s", describeToken(tok))
	}
	return nil
}

// jsonError turns decoder errors into a message that says the JSON is broken;
// io.EOF in particular means the header ended inside a value.
func jsonError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: unexpected end of header")
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return fmt.Sprintf("string %q", truncate(v))
	case json.Number:
		return "number " + truncate(string(v))
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// truncate shortens hostile header strings (names can be megabytes long)
// before they go into error messages.
func truncate(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// parseMetadata consumes the __metadata__ value: an object whose values are
// all strings, or null (which the reference reader also accepts).
func parseMetadata(dec *json.Decoder) (map[string]string, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonError(err)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	return parseStringMap(raw)
}

// parseStringMap decodes a JSON object whose values must all be strings,
// refusing repeated keys.
func parseStringMap(raw []byte) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	m := make(map[string]string)
	err := walkObject(dec, func(key string) error {
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err)
		}
		s, ok := tok.(string)
		if !ok {
			return fmt.Errorf("value of %q must be a string, found %s", truncate(key), describeToken(tok))
		}
		m[key] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// parseTensorInfo consumes one tensor entry and checks it against a buffer of
// bufLen bytes. Unknown fields are ignored, as the reference reader does.
func parseTensorInfo(dec *json.Decoder, name string, bufLen int64) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	var haveDType, haveShape, haveOffsets bool
	var offsets []int64
	err := walkObject(dec, func(key string) error {
		switch key {
		case "dtype":
			tok, err := dec.Token()
			if err != nil {
				return jsonError(err)
			}
			s, ok := tok.(string)
			if !ok {
				return fmt.Errorf("dtype must be a string, found %s", describeToken(tok))
			}
			t.DType, haveDType = DType(s), true
		case "shape":
			dims, err := parseIntArray(dec, "shape")
			if err != nil {
				return err
			}
			t.Shape = make([]int, len(dims))
			for i, d := range dims {
				if d > math.MaxInt {
					return fmt.Errorf("shape dimension %d (%d) too large", i, d)
				}
				t.Shape[i] = int(d)
			}
			haveShape = true
		case "data_offsets":
			o, err := parseIntArray(dec, "data_offsets")
			if err != nil {
				return err
			}
			offsets, haveOffsets = o, true
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return jsonError(err)
			}
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	switch {
	case !haveDType:
		return t, errors.New("missing dtype")
	case !haveShape:
		return t, errors.New("missing shape")
	case !haveOffsets:
		return t, errors.New("missing data_offsets")
	case len(offsets) != 2:
		return t, fmt.Errorf("data_offsets must have 2 entries, found %d", len(offsets))
	}
	t.Begin, t.End = offsets[0], offsets[1]
	bits := t.DType.bitSize()
	if bits == 0 {
		return t, fmt.Errorf("unknown dtype %q", truncate(string(t.DType)))
	}
	if t.Begin > t.End || t.End > bufLen {
		return t, fmt.Errorf("data_offsets [%d,%d] out of range (buffer is %d bytes)", t.Begin, t.End, bufLen)
	}
	n, ok := checkedElements(t.Shape)
	if !ok || n > math.MaxInt64/int64(bits) {
		return t, fmt.Errorf("shape %s has too many elements", shapeString(t.Shape))
	}
	nbits := n * int64(bits)
	if nbits%8 != 0 {
		return t, fmt.Errorf("shape %s of %s does not fill a whole number of bytes", shapeString(t.Shape), t.DType)
	}
	if nbits/8 != t.End-t.Begin {
		return t, fmt.Errorf("shape %s of %s needs %d bytes but data_offsets [%d,%d] span %d",
			shapeString(t.Shape), t.DType, nbits/8, t.Begin, t.End, t.End-t.Begin)
	}
	return t, nil
}

// shapeString formats a shape for messages, eliding the middle of absurdly
// long ones from hostile headers.
func shapeString(shape []int) string {
	if len(shape) <= 16 {
		return fmt.Sprint(shape)
	}
	return fmt.Sprintf("%v ... %v (%d dims)", shape[:8], shape[len(shape)-8:], len(shape))
}

// checkedElements multiplies the dimensions, reporting false if any is
// negative or the product exceeds math.MaxInt. A shape containing 0 has no
// elements whatever its other dimensions, in any order.
func checkedElements(shape []int) (int64, bool) {
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d == 0 {
			return 0, true
		}
	}
	n := int64(1)
	for _, d := range shape {
		if n > math.MaxInt/int64(d) {
			return 0, false
		}
		n *= int64(d)
	}
	return n, true
}

// parseIntArray consumes a JSON array of non-negative integers. Only plain
// integer literals are accepted: no strings, fractions or exponents.
func parseIntArray(dec *json.Decoder, what string) ([]int64, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(err)
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("%s must be an array, found %s", what, describeToken(tok))
	}
	var out []int64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s entries must be integers, found %s", what, describeToken(tok))
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%s entry %s is not a non-negative 64-bit integer", what, truncate(string(num)))
		}
		out = append(out, v)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, jsonError(err)
	}
	return out, nil
}
